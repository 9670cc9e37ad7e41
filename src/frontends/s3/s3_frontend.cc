#include "frontends/s3/s3_frontend.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>

#include "base/ascii.h"
#include "base/bytes.h"
#include "base/clock.h"
#include "frontends/s3/call.h"
#include "frontends/s3/cors.h"
#include "frontends/s3/listing.h"
#include "frontends/s3/xml.h"

namespace weft::s3 {
namespace {

constexpr size_t kIoBytes = 1 << 20;
constexpr size_t kMaxXmlBody = 2 << 20;
constexpr size_t kMaxUserMetadataBytes = 2 << 10;  // S3's limit on x-amz-meta-* headers
constexpr std::string_view kSnapshotKeyPrefix = ".weft/snapshots/";
constexpr std::string_view kEmptyMd5 = "d41d8cd98f00b204e9800998ecf8427e";

// Headers stored as object attributes, returned on GET and HEAD.
constexpr std::array<std::string_view, 6> kStoredHeaders = {
    "content-type",  "content-encoding", "content-disposition",
    "cache-control", "content-language", "expires"};

// What a request needs, decided before any handler runs.
struct Route {
  void (*run)(S3Frontend::Call&) = nullptr;
  std::string_view operation;  // as the S3 API reference names it
  uint8_t needed = 0;          // auth::Permission bits
  std::string resource;        // the path authorised
  bool authenticated = false;  // refuse anonymous callers outright (ListBuckets)
  // The request names a bucket that must exist: a caller refused access to a bucket that does
  // not exist is told NoSuchBucket, as S3 does (not CreateBucket, not ListBuckets).
  bool bucket_must_exist = false;
};

Result<CopySource> ParseCopySource(std::string_view header) {
  std::string_view raw = header;
  std::optional<std::string> version_id;
  size_t q = raw.find('?');
  if (q != std::string_view::npos) {
    WEFT_ASSIGN_OR_RETURN(auto params, sigv4::ParseQueryString(raw.substr(q + 1)));
    for (const auto& p : params) {
      if (p.name == "versionId") version_id = p.value;
    }
    raw = raw.substr(0, q);
  }
  WEFT_ASSIGN_OR_RETURN(std::string decoded, sigv4::UriDecode(raw, false));
  std::string_view path = decoded;
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  size_t slash = path.find('/');
  if (slash == std::string_view::npos || slash + 1 == path.size()) {
    return InvalidArgument(Reason::kInvalidArgument, "x-amz-copy-source must be bucket/key");
  }
  CopySource source;
  source.bucket = std::string(path.substr(0, slash));
  source.key = std::string(path.substr(slash + 1));
  source.version_id = std::move(version_id);
  WEFT_RETURN_IF_ERROR(ValidateBucketName(source.bucket));
  WEFT_RETURN_IF_ERROR(ValidateKey(source.key));
  return source;
}

std::string EncodeToken(char kind, const std::string& position) {
  return Base64Encode(std::string(1, kind) + position);
}

// The query parameters every listing shares.
struct ListParams {
  std::string prefix;
  std::string delimiter;
  int64_t max_keys = 1000;
  bool url = false;  // encoding-type=url: keys go out percent-encoded
  std::string Encode(const std::string& text) const {
    return url ? sigv4::UriEncodePath(text) : text;
  }
};

Result<ListParams> ParseListParams(const S3Request& request) {
  ListParams params;
  params.prefix = request.Query("prefix").value_or("");
  params.delimiter = request.Query("delimiter").value_or("");
  if (auto encoding = request.Query("encoding-type")) {
    if (*encoding != "url")
      return InvalidArgument(Reason::kInvalidArgument, "encoding-type must be 'url'");
    params.url = true;
  }
  if (auto m = request.Query("max-keys")) {
    WEFT_ASSIGN_OR_RETURN(int64_t max_keys, ParseIntParam("max-keys", *m, 0, 1 << 30));
    params.max_keys = std::min<int64_t>(max_keys, 1000);  // S3 never returns more per page
  }
  return params;
}

// A bucket listing after delimiter roll-up: each key, or each common prefix once. With the
// delimiter "/" a directory that rolls up into a common prefix is not descended into.
class RolledUpListing {
 public:
  struct Entry {
    std::string common_prefix;  // non-empty for a common prefix; then `key` is unused
    ListedKey key;
  };

  // `key_offset` is prepended to the walker's keys (a snapshot's ".weft/snapshots/NAME/");
  // `listed_prefix` is a common prefix an earlier page already returned.
  RolledUpListing(KeyWalker& walker, const ListParams& params, std::string key_offset,
                  std::string listed_prefix)
      : walker_(walker),
        params_(params),
        key_offset_(std::move(key_offset)),
        last_prefix_(std::move(listed_prefix)) {}

  Result<std::optional<Entry>> Next() {
    while (true) {
      WEFT_ASSIGN_OR_RETURN(std::optional<ListedKey> next, walker_.Next());
      if (!next) return std::optional<Entry>();
      next->key = key_offset_ + next->key;
      std::string common;
      if (!params_.delimiter.empty()) {
        size_t at = next->key.find(params_.delimiter, params_.prefix.size());
        if (at != std::string::npos) common = next->key.substr(0, at + params_.delimiter.size());
      }
      if (next->is_directory && params_.delimiter == "/" && !common.empty()) {
        walker_.SkipDirectory();
      }
      if (common.empty()) {
        if (next->is_directory) continue;  // its keys follow
        return std::optional<Entry>(Entry{"", std::move(*next)});
      }
      if (common == last_prefix_) continue;
      last_prefix_ = common;
      return std::optional<Entry>(Entry{std::move(common), {}});
    }
  }

 private:
  KeyWalker& walker_;
  const ListParams& params_;
  const std::string key_offset_;
  std::string last_prefix_;
};

void WriteCommonPrefixes(XmlWriter& xml, const std::vector<std::string>& prefixes,
                         const ListParams& params) {
  for (const std::string& p : prefixes) {
    xml.Open("CommonPrefixes");
    xml.Element("Prefix", params.Encode(p));
    xml.Close("CommonPrefixes");
  }
}

// An S3 error response; HEAD gets the status and headers only, as S3 sends it.
void SendS3Error(net::ResponseWriter& response, bool head, const S3Error& error,
                 std::string_view resource, std::string_view request_id,
                 std::vector<net::HttpHeader> headers = {}) {
  headers.push_back({"Content-Type", "application/xml"});
  headers.push_back({"x-amz-request-id", std::string(request_id)});
  if (head) {
    (void)response.Start(error.http_status, headers, 0);
    (void)response.Finish();
    return;
  }
  (void)response.Send(error.http_status, headers, ErrorXml(error, resource, request_id));
}

}  // namespace

std::string QuoteEtag(std::string_view etag) {
  return "\"" + std::string(etag) + "\"";
}

std::string UnquoteEtag(std::string_view etag) {
  while (!etag.empty() && etag.front() == ' ') etag.remove_prefix(1);
  while (!etag.empty() && etag.back() == ' ') etag.remove_suffix(1);
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

constexpr const char* kStaleWarning =
    "110 weft \"Response is Stale: the hub is unreachable and this spoke answers from "
    "metadata whose lease has expired\"";

std::vector<net::HttpHeader> ObjectHeaders(const FileInfo& info) {
  std::vector<net::HttpHeader> headers;
  headers.push_back({"ETag", QuoteEtag(info.etag)});
  headers.push_back({"Last-Modified", HttpDate(info.mtime_ns)});
  headers.push_back({"Accept-Ranges", "bytes"});
  // RFC 7234's "110 Response is Stale": a spoke that lost its hub answered from old metadata.
  if (info.stale) headers.push_back({"Warning", kStaleWarning});
  bool has_type = false;
  for (const auto& [name, value] : info.attributes) {
    if (name.starts_with(kAttrMetaPrefix)) {
      headers.push_back({"x-amz-meta-" + name.substr(kAttrMetaPrefix.size()), value});
    } else if (name.starts_with("s3.")) {
      std::string header = name.substr(3);
      if (std::find(kStoredHeaders.begin(), kStoredHeaders.end(), header) == kStoredHeaders.end()) {
        continue;
      }
      has_type |= header == "content-type";
      headers.push_back({header, value});
    }
  }
  if (!has_type) headers.push_back({"Content-Type", "binary/octet-stream"});
  if (auto it = info.attributes.find(std::string(kAttrTagging)); it != info.attributes.end()) {
    headers.push_back({"x-amz-tagging-count", std::to_string(DecodeTags(it->second).size())});
  }
  return headers;
}

Result<int64_t> ParseIntParam(std::string_view name, std::string_view value, int64_t lo,
                              int64_t hi) {
  int64_t n = 0;
  bool ok = !value.empty() && value.size() <= 18;
  for (char c : value) {
    if (c < '0' || c > '9') ok = false;
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n < lo || n > hi) {
    return InvalidArgument(Reason::kInvalidArgument,
                           std::string(name) + " must be an integer from " + std::to_string(lo) +
                               " to " + std::to_string(hi));
  }
  return n;
}

// ---- Dispatch --------------------------------------------------------------------------------

S3Frontend::S3Frontend(access::AuthorizedVolume& volume, S3Options options)
    : volume_(volume), options_(std::move(options)) {}

S3Frontend::~S3Frontend() = default;

void S3Frontend::HandleProtocolError(int status, std::string_view code, std::string_view message,
                                     net::ResponseWriter& response) {
  S3Error error{status, std::string(code), std::string(message)};
  std::string body = ErrorXml(error, "", "");
  (void)response.Send(status, {{"Content-Type", "application/xml"}}, body);
}

namespace {

// The query parameters some operation reads (response-* and X-Amz-* aside).
bool IsKnownParameter(std::string_view name) {
  static constexpr std::string_view kKnown[] = {"attributes",
                                                "bucket-region",
                                                "cors",
                                                "continuation-token",
                                                "delete",
                                                "delimiter",
                                                "encoding-type",
                                                "fetch-owner",
                                                "key-marker",
                                                "list-type",
                                                "location",
                                                "marker",
                                                "max-buckets",
                                                "max-keys",
                                                "max-parts",
                                                "max-uploads",
                                                "part-number-marker",
                                                "partNumber",
                                                "prefix",
                                                "start-after",
                                                "tagging",
                                                "upload-id-marker",
                                                "uploadId",
                                                "uploads",
                                                "version-id-marker",
                                                "versionId",
                                                "versioning",
                                                "versions",
                                                "x-id"};
  if (name.starts_with("response-") || name.starts_with("X-Amz-")) return true;
  return std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown);
}

// Decides handler, permission and resource for a parsed request. Anything not listed here is
// NotImplemented, never silently served by a neighbour.
Result<Route> RouteRequest(const S3Request& r, std::optional<CopySource>* copy_source) {
  using C = S3Frontend::Call;
  Route route;
  const std::string& m = r.method;
  std::string bucket_path = "/" + r.bucket + "/";
  std::string object_path = r.VolumePath();
  for (std::string_view unsupported : {"acl",
                                       "policy",
                                       "lifecycle",
                                       "website",
                                       "replication",
                                       "logging",
                                       "notification",
                                       "encryption",
                                       "object-lock",
                                       "retention",
                                       "legal-hold",
                                       "torrent",
                                       "accelerate",
                                       "requestPayment",
                                       "ownershipControls",
                                       "publicAccessBlock",
                                       "restore",
                                       "select",
                                       "analytics",
                                       "metrics",
                                       "inventory",
                                       "intelligent-tiering"}) {
    if (r.HasQuery(unsupported)) {
      return Unimplemented(Reason::kNotImplemented, "the ?" + std::string(unsupported) +
                                                        " subresource is not supported by Weft");
    }
  }
  // Any other subresource (a parameter without a value, such as ?policyStatus) must not fall
  // through to the plain operation on the same path: a client would take a listing for an
  // answer. Unknown parameters with values are ignored, as S3 ignores them.
  for (const sigv4::QueryParam& param : r.query) {
    if (param.value.empty() && !IsKnownParameter(param.name)) {
      return Unimplemented(Reason::kNotImplemented,
                           "the ?" + param.name + " subresource is not supported by Weft");
    }
  }
  if (r.bucket.empty()) {
    if (m != "GET")
      return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed, "use GET on /");
    route.run = [](C& c) { c.ListBuckets(); };
    route.operation = "ListBuckets";
    route.resource = "/";
    route.authenticated = true;
    return route;
  }
  route.bucket_must_exist = true;
  if (r.key.empty()) {
    route.resource = bucket_path;
    if (r.HasQuery("cors")) {
      if (m == "GET") {
        route.run = [](C& c) { c.GetBucketCors(); };
        route.operation = "GetBucketCors";
        route.needed = auth::kList;
      } else if (m == "PUT" || m == "DELETE") {
        route.run =
            m == "PUT" ? [](C& c) { c.PutBucketCors(); } : [](C& c) { c.DeleteBucketCors(); };
        route.operation = m == "PUT" ? "PutBucketCors" : "DeleteBucketCors";
        route.needed = auth::kAdmin;
      } else {
        return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed,
                      m + " on a bucket's CORS rules");
      }
      return route;
    }
    if (r.HasQuery("tagging")) {
      if (m == "GET") {
        route.run = [](C& c) { c.GetBucketTagging(); };
        route.operation = "GetBucketTagging";
        route.needed = auth::kList;
      } else if (m == "PUT" || m == "DELETE") {
        route.run =
            m == "PUT" ? [](C& c) { c.PutBucketTagging(); } : [](C& c) { c.DeleteBucketTagging(); };
        route.operation = m == "PUT" ? "PutBucketTagging" : "DeleteBucketTagging";
        route.needed = auth::kAdmin;
      } else {
        return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed,
                      m + " on a bucket's tags");
      }
      return route;
    }
    if (m == "PUT" && r.HasQuery("versioning")) {
      route.run = [](C& c) { c.PutBucketVersioning(); };
      route.operation = "PutBucketVersioning";
      route.needed = auth::kAdmin;
    } else if (m == "PUT") {
      route.run = [](C& c) { c.CreateBucket(); };
      route.operation = "CreateBucket";
      route.needed = auth::kWrite;
      route.bucket_must_exist = false;
    } else if (m == "GET" && r.HasQuery("versioning")) {
      route.run = [](C& c) { c.GetBucketVersioning(); };
      route.operation = "GetBucketVersioning";
      route.needed = auth::kList;
    } else if (m == "GET" && r.HasQuery("location")) {
      route.run = [](C& c) { c.GetBucketLocation(); };
      route.operation = "GetBucketLocation";
      route.needed = auth::kList;
    } else if (m == "GET" && r.HasQuery("uploads")) {
      route.run = [](C& c) { c.ListMultipartUploads(); };
      route.operation = "ListMultipartUploads";
      route.needed = auth::kList;
      route.resource += r.Query("prefix").value_or("");
    } else if (m == "GET" && r.HasQuery("versions")) {
      route.run = [](C& c) { c.ListObjectVersions(); };
      route.operation = "ListObjectVersions";
      route.needed = auth::kList | auth::kRead;
      route.resource += r.Query("prefix").value_or("");
    } else if (m == "GET") {
      bool v2 = r.Query("list-type") == "2";
      route.run = v2 ? [](C& c) { c.ListObjects(true); } : [](C& c) { c.ListObjects(false); };
      route.operation = v2 ? "ListObjectsV2" : "ListObjects";
      route.needed = auth::kList;
      route.resource += r.Query("prefix").value_or("");
    } else if (m == "HEAD") {
      route.run = [](C& c) { c.HeadBucket(); };
      route.operation = "HeadBucket";
      route.needed = auth::kList;
    } else if (m == "DELETE") {
      route.run = [](C& c) { c.DeleteBucket(); };
      route.operation = "DeleteBucket";
      route.needed = auth::kWrite;
    } else if (m == "POST" && r.HasQuery("delete")) {
      // Each key is authorised on its own inside the handler; the bucket needs no more.
      route.run = [](C& c) { c.DeleteObjects(); };
      route.operation = "DeleteObjects";
      route.needed = 0;
    } else {
      return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed, m + " on a bucket");
    }
    return route;
  }
  route.resource = object_path;
  if (auto header = r.Header("x-amz-copy-source"); header && m == "PUT") {
    WEFT_ASSIGN_OR_RETURN(*copy_source, ParseCopySource(*header));
  }
  bool upload = r.HasQuery("uploadId");
  if (m == "GET" && r.HasQuery("attributes")) {
    route.run = [](C& c) { c.GetObjectAttributes(); };
    route.operation = "GetObjectAttributes";
    route.needed = auth::kRead;
    return route;
  }
  if (r.HasQuery("tagging")) {
    if (m == "GET") {
      route.run = [](C& c) { c.GetObjectTagging(); };
      route.operation = "GetObjectTagging";
      route.needed = auth::kRead;
    } else if (m == "PUT" || m == "DELETE") {
      route.run =
          m == "PUT" ? [](C& c) { c.PutObjectTagging(); } : [](C& c) { c.DeleteObjectTagging(); };
      route.operation = m == "PUT" ? "PutObjectTagging" : "DeleteObjectTagging";
      route.needed = auth::kWrite;
    } else {
      return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed,
                    m + " on an object's tags");
    }
    *copy_source = std::nullopt;
    return route;
  }
  if (m == "PUT") {
    // Dispatched with the copy source (run stays null).
    route.operation = r.HasQuery("partNumber") ? (*copy_source ? "UploadPartCopy" : "UploadPart")
                                               : (*copy_source ? "CopyObject" : "PutObject");
    route.needed = auth::kWrite;
  } else if (m == "GET" && upload) {
    route.run = [](C& c) { c.ListParts(); };
    route.operation = "ListParts";
    route.needed = auth::kWrite;
  } else if (m == "GET") {
    route.run = [](C& c) { c.GetObject(false); };
    route.operation = "GetObject";
    route.needed = auth::kRead;
  } else if (m == "HEAD") {
    route.run = [](C& c) { c.GetObject(true); };
    route.operation = "HeadObject";
    route.needed = auth::kRead;
  } else if (m == "DELETE" && upload) {
    route.run = [](C& c) { c.AbortMultipartUpload(); };
    route.operation = "AbortMultipartUpload";
    route.needed = auth::kWrite;
  } else if (m == "DELETE") {
    route.run = [](C& c) { c.DeleteObject(); };
    route.operation = "DeleteObject";
    route.needed = auth::kWrite;
  } else if (m == "POST" && r.HasQuery("uploads")) {
    route.run = [](C& c) { c.CreateMultipartUpload(); };
    route.operation = "CreateMultipartUpload";
    route.needed = auth::kWrite;
  } else if (m == "POST" && upload) {
    route.run = [](C& c) { c.CompleteMultipartUpload(); };
    route.operation = "CompleteMultipartUpload";
    route.needed = auth::kWrite;
  } else {
    return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed, m + " on an object");
  }
  return route;
}

constexpr std::string_view kOperations[] = {"AbortMultipartUpload",
                                            "CompleteMultipartUpload",
                                            "CopyObject",
                                            "CreateBucket",
                                            "CreateMultipartUpload",
                                            "DeleteBucket",
                                            "DeleteBucketCors",
                                            "DeleteBucketTagging",
                                            "DeleteObject",
                                            "DeleteObjectTagging",
                                            "DeleteObjects",
                                            "GetBucketCors",
                                            "GetBucketLocation",
                                            "GetBucketTagging",
                                            "GetBucketVersioning",
                                            "GetObject",
                                            "GetObjectAttributes",
                                            "GetObjectTagging",
                                            "HeadBucket",
                                            "HeadObject",
                                            "ListBuckets",
                                            "ListMultipartUploads",
                                            "ListObjectVersions",
                                            "ListObjects",
                                            "ListObjectsV2",
                                            "ListParts",
                                            "PutBucketCors",
                                            "PutBucketTagging",
                                            "PutBucketVersioning",
                                            "PutObject",
                                            "PutObjectTagging",
                                            "UploadPart",
                                            "UploadPartCopy"};

}  // namespace

std::span<const std::string_view> S3Operations() {
  return kOperations;
}

Result<std::string_view> S3OperationOf(const net::HttpRequest& http) {
  WEFT_ASSIGN_OR_RETURN(S3Request request, ParseS3Request(http));
  std::optional<CopySource> copy_source;
  WEFT_ASSIGN_OR_RETURN(Route route, RouteRequest(request, &copy_source));
  return route.operation;
}

std::optional<CorsRules> S3Frontend::BucketCors(const std::string& bucket) {
  auto info = volume_.StatForProtocol("/" + bucket, "s3: the bucket's CORS rules");
  if (!info.ok()) return std::nullopt;
  auto it = info->attributes.find(std::string(kAttrCors));
  if (it == info->attributes.end()) return std::nullopt;
  auto rules = CorsFromXml(it->second);
  if (!rules.ok()) return std::nullopt;
  return std::move(rules).value();
}

void S3Frontend::Preflight(const S3Request& request, net::ResponseWriter& response,
                           const std::string& request_id) {
  auto deny = [&](Reason reason, std::string message) {
    SendS3Error(response, false, MakeError(reason, std::move(message)), request.path, request_id);
  };
  auto origin = request.Header("origin");
  auto method = request.Header("access-control-request-method");
  if (!origin || !method || request.bucket.empty()) {
    return deny(Reason::kBadRequest, "Insufficient information. Origin request header needed.");
  }
  std::vector<std::string> asked;
  std::string asked_list =
      std::string(request.Header("access-control-request-headers").value_or(""));
  for (std::string_view one : SplitList(asked_list)) asked.push_back(AsciiLower(one));
  std::optional<CorsRules> rules = BucketCors(request.bucket);
  const CorsRule* rule = rules ? MatchCors(*rules, *origin, *method, asked) : nullptr;
  if (rule == nullptr) {
    return deny(Reason::kAccessForbidden, "CORSResponse: This CORS request is not allowed.");
  }
  std::vector<net::HttpHeader> headers = CorsHeaders(*rule, *origin);
  if (!asked_list.empty()) headers.push_back({"Access-Control-Allow-Headers", asked_list});
  headers.push_back({"x-amz-request-id", request_id});
  (void)response.Start(200, headers, 0);
  (void)response.Finish();
}

bool S3Frontend::BucketExists(const std::string& bucket) {
  auto info = volume_.StatForProtocol("/" + bucket, "s3: NoSuchBucket rather than AccessDenied");
  return info.ok() ? info->type == FileType::kDirectory
                   : info.status().code() != StatusCode::kNotFound;
}

namespace {

// Adds the CORS headers of an allowed cross-origin request to whatever the handler answers.
class CorsWriter final : public net::ResponseWriter {
 public:
  CorsWriter(net::ResponseWriter& inner, std::vector<net::HttpHeader> headers)
      : inner_(inner), headers_(std::move(headers)) {}
  Status Start(int status, const std::vector<net::HttpHeader>& headers,
               std::optional<uint64_t> content_length) override {
    std::vector<net::HttpHeader> all = headers;
    all.insert(all.end(), headers_.begin(), headers_.end());
    return inner_.Start(status, all, content_length);
  }
  using net::ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override { return inner_.Write(pieces); }
  Status Finish() override { return inner_.Finish(); }
  bool started() const override { return inner_.started(); }
  void Describe(const net::RequestDescription& d) override { inner_.Describe(d); }

 private:
  net::ResponseWriter& inner_;
  std::vector<net::HttpHeader> headers_;
};

// "GET object?tagging": the method, what it names, and the subresource, for the access log.
std::string OperationName(const net::HttpRequest& http) {
  const size_t slash = http.path.find('/', 1);
  std::string op = http.method;
  op += http.path.size() <= 1                                         ? " service"
        : slash == std::string::npos || slash + 1 == http.path.size() ? " bucket"
                                                                      : " object";
  auto params = sigv4::ParseQueryString(http.query);
  if (!params.ok()) return op;
  for (const sigv4::QueryParam& p : *params) {
    if (p.name.starts_with("X-Amz-") || p.name.starts_with("response-")) continue;
    if (p.value.empty() || p.name == "uploadId" || p.name == "partNumber" ||
        p.name == "versionId" || p.name == "list-type") {
      op += "?" + p.name.substr(0, 40);
      break;
    }
  }
  return op;
}

}  // namespace

void S3Frontend::Handle(const net::HttpRequest& http, net::BodyReader& body,
                        net::ResponseWriter& response) {
  char id[24];
  snprintf(id, sizeof id, "%016llX", static_cast<unsigned long long>(next_request_.fetch_add(1)));
  if (options_.access_log == nullptr) {
    std::string principal;
    return Serve(http, body, response, id, &principal);
  }
  net::AccessRecord record;
  record.time_ns = options_.clock->NowNanos();
  record.request_id = id;
  net::RecordingWriter recording(response);
  Serve(http, body, recording, record.request_id, &record.principal);
  record.latency_ns = options_.clock->NowNanos() - record.time_ns;
  record.operation = OperationName(http);
  record.path = http.path;
  record.status = recording.status();
  record.bytes = recording.bytes();
  options_.access_log->Write(record);
}

void S3Frontend::Serve(const net::HttpRequest& http, net::BodyReader& body,
                       net::ResponseWriter& response, const std::string& request_id,
                       std::string* principal_out) {
  // What the server's records say of the request: told once, with what is known by then.
  net::RequestDescription described{"", http.method, "local", request_id};
  auto fail = [&](const Status& status, std::string_view resource) {
    response.Describe(described);
    SendS3Error(response, http.method == "HEAD", ErrorFromStatus(status), resource, request_id);
  };

  // 1. Parse and validate everything the client named.
  auto parsed = ParseS3Request(http);
  if (!parsed.ok()) return fail(parsed.status(), http.path);
  S3Request request = std::move(parsed).value();
  // A browser's CORS preflight carries no credentials: the bucket's rules answer it.
  if (request.method == "OPTIONS") {
    described.operation = "PreflightCors";
    response.Describe(described);
    return Preflight(request, response, request_id);
  }
  // 2. Authenticate: one decision for every handler.
  int64_t now_seconds = options_.clock->NowNanos() / 1'000'000'000;
  auto identity =
      Authenticate(request, volume_.identities(), options_.region, now_seconds, options_.sigv2);
  if (!identity.ok()) return fail(identity.status(), request.path);
  described.principal = identity->principal;
  // 3. Route and authorise the resolved resource (and a copy source) before any handler runs.
  std::optional<CopySource> copy_source;
  auto route = RouteRequest(request, &copy_source);
  if (!route.ok()) return fail(route.status(), request.path);
  const std::string& principal = identity->principal;
  *principal_out = principal;
  described.operation = std::string(route->operation);
  if (route->authenticated && principal == auth::kAnonymous) {
    return fail(PermissionDenied(Reason::kAccessDenied, "anonymous users cannot list buckets"),
                "/");
  }
  RequestContext ctx;
  ctx.principal = principal;
  ctx.protocol = "s3";
  if (route->needed != 0) {
    Status allowed = volume_.Check(ctx, route->needed, route->resource);
    if (!allowed.ok()) {
      if (route->bucket_must_exist && !BucketExists(request.bucket)) {
        return fail(NotFound(Reason::kNoSuchBucket, "The specified bucket does not exist"),
                    request.path);
      }
      return fail(allowed, request.path);
    }
  }
  if (copy_source) {
    Status allowed = volume_.Check(ctx, auth::kRead, copy_source->VolumePath());
    if (!allowed.ok()) return fail(allowed, request.path);
  }
  // 4. The handler; a cross-origin request allowed by the bucket's rules gets their headers.
  response.Describe(described);
  std::optional<CorsWriter> cors;
  if (auto origin = request.Header("origin"); origin && !request.bucket.empty()) {
    if (auto rules = BucketCors(request.bucket)) {
      if (const CorsRule* rule = MatchCors(*rules, *origin, request.method, {})) {
        cors.emplace(response, CorsHeaders(*rule, *origin));
      }
    }
  }
  // A multipart upload's staging area is judged by the object (or listed prefix) it is for.
  ctx.staging_for = route->resource;
  Call call(*this, std::move(request), std::move(identity).value(), std::move(ctx), body,
            cors ? static_cast<net::ResponseWriter&>(*cors) : response, request_id);
  if (route->run != nullptr) {
    route->run(call);
  } else if (call.request().HasQuery("partNumber")) {
    call.UploadPart(copy_source);
  } else if (copy_source) {
    call.CopyObject(*copy_source);
  } else {
    call.PutObject();
  }
}

// ---- Call basics -----------------------------------------------------------------------------

S3Frontend::Call::Call(S3Frontend& frontend, S3Request request, Identity identity,
                       RequestContext ctx, net::BodyReader& body, net::ResponseWriter& response,
                       std::string request_id)
    : frontend_(frontend),
      request_(std::move(request)),
      identity_(std::move(identity)),
      ctx_(std::move(ctx)),
      body_(body),
      response_(response),
      request_id_(std::move(request_id)) {}

void S3Frontend::Call::SendError(const S3Error& error, std::vector<net::HttpHeader> headers) {
  SendS3Error(response_, request_.method == "HEAD", error, request_.path, request_id_,
              std::move(headers));
}

void S3Frontend::Call::SendXml(int http_status, const std::string& xml, bool stale,
                               std::vector<net::HttpHeader> headers) {
  headers.push_back({"Content-Type", "application/xml"});
  headers.push_back({"x-amz-request-id", request_id_});
  if (stale) headers.push_back({"Warning", kStaleWarning});
  (void)response_.Send(http_status, headers, xml);
}

void S3Frontend::Call::SendEmpty(int http_status, std::vector<net::HttpHeader> headers) {
  headers.push_back({"x-amz-request-id", request_id_});
  (void)response_.Start(http_status, headers, 0);
  (void)response_.Finish();
}

Result<FileInfo> S3Frontend::Call::StatBucket(const std::string& bucket) {
  auto info = volume().Stat(ctx_, "/" + bucket);
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kNotFound) {
      return NotFound(Reason::kNoSuchBucket, "The specified bucket does not exist");
    }
    return info.status();
  }
  if (info->type != FileType::kDirectory) {
    return NotFound(Reason::kNoSuchBucket, "The specified bucket does not exist");
  }
  return info;
}

bool S3Frontend::Call::VersioningOn(const FileInfo& bucket) const {
  auto it = bucket.attributes.find(std::string(kAttrVersioning));
  return it != bucket.attributes.end();
}

Result<std::vector<S3Version>> S3Frontend::Call::S3VersionsOf(const FileInfo& bucket,
                                                              const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions, volume().ListVersions(ctx_, path));
  return S3Versions(versions, VersioningLog::FromAttributes(bucket.attributes));
}

Result<S3Version> S3Frontend::Call::FindS3Version(const FileInfo& bucket, const std::string& path,
                                                  const std::string& id) {
  auto versions = S3VersionsOf(bucket, path);
  if (!versions.ok()) {
    const StatusCode code = versions.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kNotADirectory ||
        code == StatusCode::kIsADirectory) {
      return NotFound(Reason::kNoSuchVersion, "The specified version does not exist");
    }
    return versions.status();
  }
  for (S3Version& v : *versions) {
    if (v.id == id) return std::move(v);
  }
  return NotFound(Reason::kNoSuchVersion, "The specified version does not exist");
}

Result<S3Frontend::Call::Deleted> S3Frontend::Call::DeleteKey(
    const FileInfo& bucket, const std::string& key, const std::optional<std::string>& version) {
  std::string path = "/" + request_.bucket + "/" + key;
  const VersioningLog log = VersioningLog::FromAttributes(bucket.attributes);
  Deleted deleted;
  if (version) {
    deleted.id = *version;
    if (*version == kNullVersion) {
      // S3's null version, and the older null writes it replaced, which Weft still holds and
      // which would otherwise come back as "null" once it is gone.
      auto all = volume().ListVersions(ctx_, path);
      if (!all.ok()) {
        if (all.status().code() == StatusCode::kNotFound) return deleted;  // nothing: no-op
        return all.status();
      }
      const std::vector<S3Version> shown = S3Versions(*all, log);
      auto visible = std::find_if(shown.begin(), shown.end(),
                                  [](const S3Version& v) { return v.id == kNullVersion; });
      if (visible == shown.end()) return deleted;
      for (const VersionInfo& hidden : NullVersions(*all, log)) {
        if (hidden.version_id == visible->weft_id) continue;
        (void)volume().DeleteVersion(ctx_, path, hidden.version_id);  // best effort
      }
      deleted.delete_marker = visible->info.is_delete_marker;
      WEFT_RETURN_IF_ERROR(volume().DeleteVersion(ctx_, path, visible->weft_id));
    } else {
      Status done = volume().DeleteVersion(ctx_, path, *version);
      if (done.code() == StatusCode::kInvalidArgument) {
        return NotFound(Reason::kNoSuchVersion, "The specified version does not exist");
      }
      WEFT_RETURN_IF_ERROR(done);
      deleted.delete_marker = version->starts_with("delete.");
    }
    PruneEmptyParents(bucket, path);
    return deleted;
  }
  Status done;
  if (key.ends_with('/')) {
    path.pop_back();
    done = volume().Rmdir(ctx_, path);
  } else {
    done = volume().Unlink(ctx_, path);
  }
  // Deleting what is not there succeeds in S3; so does deleting a key below a file.
  if (!done.ok() && done.code() != StatusCode::kNotFound &&
      done.code() != StatusCode::kNotADirectory && done.code() != StatusCode::kIsADirectory) {
    return done;
  }
  PruneEmptyParents(bucket, path);
  if (done.ok() && log.Now() != Versioning::kOff) {
    // The delete left a marker: name it as S3 does.
    deleted.delete_marker = true;
    if (log.Now() == Versioning::kSuspended) {
      deleted.id = std::string(kNullVersion);
    } else if (auto versions = volume().ListVersions(ctx_, path);
               versions.ok() && !versions->empty() && versions->front().is_delete_marker) {
      deleted.id = versions->front().version_id;
    }
  }
  return deleted;
}

Result<ObjectRef> S3Frontend::Call::ResolveObject(const std::string& bucket,
                                                  const std::string& key) {
  ObjectRef ref;
  std::string_view k = key;
  if (k.starts_with(kSnapshotKeyPrefix)) {
    std::string_view rest = k.substr(kSnapshotKeyPrefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
      return NotFound(Reason::kNoSuchKey,
                      "name a key inside the snapshot: .weft/snapshots/NAME/KEY");
    }
    ref.read.snapshot = std::string(rest.substr(0, slash));
    ref.path = "/" + bucket + "/" + std::string(rest.substr(slash + 1));
    ref.in_snapshot = true;
    return ref;
  }
  ref.path = "/" + bucket + "/" + key;
  return ref;
}

std::optional<std::vector<uint64_t>> PartSizesOf(const FileInfo& info) {
  auto it = info.attributes.find(std::string(kAttrParts));
  if (it == info.attributes.end()) return std::nullopt;
  std::optional<std::vector<uint64_t>> sizes = DecodePartSizes(it->second);
  // A layout that does not add up to the object (set by hand, or a copy of another object's
  // description) is no layout.
  uint64_t total = 0;
  for (uint64_t size : sizes.value_or(std::vector<uint64_t>{})) total += size;
  if (!sizes || total != info.size) return std::nullopt;
  return sizes;
}

Result<S3Frontend::Call::Source> S3Frontend::Call::OpenSource(const CopySource& source, bool copy) {
  Source out;
  WEFT_ASSIGN_OR_RETURN(out.bucket, StatBucket(source.bucket));
  WEFT_ASSIGN_OR_RETURN(out.ref, ResolveObject(source.bucket, source.key));
  std::optional<std::string> weft_version = source.version_id;
  if (source.version_id &&
      (*source.version_id == kNullVersion || source.version_id->starts_with("delete."))) {
    WEFT_ASSIGN_OR_RETURN(S3Version found,
                          FindS3Version(out.bucket, out.ref.path, *source.version_id));
    if (found.info.is_delete_marker) {
      if (!copy) {
        return InvalidArgument(Reason::kMethodNotAllowed,
                               "The specified method is not allowed against a delete marker.");
      }
      return InvalidArgument(Reason::kInvalidRequest,
                             "The source of a copy request may not specifically refer to a "
                             "delete marker by version id.");
    }
    weft_version = found.weft_id;
  }
  auto reader = weft_version ? volume().OpenVersion(ctx_, out.ref.path, *weft_version)
                             : volume().OpenReader(ctx_, out.ref.path, out.ref.read);
  if (!reader.ok()) {
    const StatusCode code = reader.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kIsADirectory ||
        code == StatusCode::kNotADirectory ||
        (code == StatusCode::kInvalidArgument && weft_version)) {
      return weft_version ? NotFound(Reason::kNoSuchVersion, "The specified version does not exist")
                          : NotFound(Reason::kNoSuchKey, "The specified key does not exist");
    }
    return reader.status();
  }
  out.reader = std::move(reader).value();
  if (out.reader->info().type != FileType::kFile) {
    return NotFound(Reason::kNoSuchKey, "The specified key does not exist");
  }
  if (source.version_id) {
    out.version_id = source.version_id;
  } else if (VersioningOn(out.bucket) && !out.ref.in_snapshot) {
    out.version_id =
        S3VersionId(out.reader->info(), VersioningLog::FromAttributes(out.bucket.attributes));
  }
  return out;
}

Result<std::unique_ptr<PayloadReader>> S3Frontend::Call::Payload() {
  return PayloadReader::Make(request_, identity_, body_);
}

Result<Attributes> S3Frontend::Call::AttributesFromHeaders() {
  Attributes attributes;
  size_t meta_bytes = 0;
  for (const net::HttpHeader& h : request_.http->headers) {
    std::string name = AsciiLower(h.name);
    if (name.starts_with("x-amz-meta-")) {
      std::string meta = name.substr(11);
      if (meta.empty()) return InvalidArgument(Reason::kInvalidArgument, "empty x-amz-meta- name");
      meta_bytes += meta.size() + h.value.size();
      attributes[std::string(kAttrMetaPrefix) + meta] = h.value;
    } else if (std::find(kStoredHeaders.begin(), kStoredHeaders.end(), name) !=
               kStoredHeaders.end()) {
      std::string value = h.value;
      if (name == "content-encoding" && value.find("aws-chunked") != std::string::npos) {
        // aws-chunked describes this request's framing, not the object; any other value is
        // kept exactly as sent.
        std::string kept;
        for (std::string_view part : SplitList(value)) {
          if (part != "aws-chunked") kept += (kept.empty() ? "" : ",") + std::string(part);
        }
        if (kept.empty()) continue;
        value = kept;
      }
      attributes["s3." + name] = value;
    }
  }
  if (meta_bytes > kMaxUserMetadataBytes) {
    return InvalidArgument(Reason::kMetadataTooLarge,
                           "x-amz-meta-* headers may total at most 2 KB");
  }
  if (auto tagging = request_.Header("x-amz-tagging")) {
    WEFT_ASSIGN_OR_RETURN(Tags tags, ParseTaggingHeader(*tagging));
    if (!tags.empty()) attributes[std::string(kAttrTagging)] = EncodeTags(tags);
  }
  return attributes;
}

Result<std::unique_ptr<XmlDocument>> S3Frontend::Call::ReadXmlBody(std::string_view root,
                                                                   bool optional) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<PayloadReader> payload, Payload());
  WEFT_ASSIGN_OR_RETURN(std::string body, payload->ReadAll(kMaxXmlBody));
  if (optional && body.empty()) return std::unique_ptr<XmlDocument>();
  return XmlDocument::Parse(body, root);
}

Status S3Frontend::Call::CopyPayloadInto(FileWriter& writer, PayloadReader& payload) {
  // Small objects are the common case: no 1 MiB zero-filled buffer for a 4 KiB PUT.
  std::string buf(std::clamp<uint64_t>(payload.declared_length().value_or(kIoBytes), 1, kIoBytes),
                  '\0');
  while (true) {
    auto n = payload.Read(std::span<char>(buf.data(), buf.size()));
    if (!n.ok()) {
      writer.Abort();
      return n.status();
    }
    if (*n == 0) return OkStatus();
    Status written = writer.Write(AsBytes(std::string_view(buf.data(), *n)));
    if (!written.ok()) {
      writer.Abort();
      return written;
    }
  }
}

void S3Frontend::Call::PruneEmptyParents(const FileInfo& bucket, const std::string& path) {
  // In a versioned bucket the directories stay: the versions below them are listed through
  // them.
  if (VersioningOn(bucket)) return;
  std::string dir = path;
  std::string bucket_dir = "/" + request_.bucket;
  while (true) {
    size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash == 0) return;
    dir.resize(slash);
    if (dir.size() <= bucket_dir.size()) return;
    if (!volume().Rmdir(ctx_, dir).ok()) return;  // not empty (or raced): stop here
  }
}

// ---- Service and buckets -------------------------------------------------------------------

void S3Frontend::Call::ListBuckets() {
  // max-buckets pages the answer (with an opaque continuation token); without it, every bucket.
  std::optional<int64_t> max_buckets;
  if (auto m = request_.Query("max-buckets")) {
    auto parsed = ParseIntParam("max-buckets", *m, 1, 10000);
    if (!parsed.ok()) return SendStatus(parsed.status());
    max_buckets = *parsed;
  }
  const std::string prefix = request_.Query("prefix").value_or("");
  ReadDirOptions opts;
  opts.with_info = true;
  opts.start_after = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
  if (auto token = request_.Query("continuation-token"); token && !token->empty()) {
    auto after = Base64Decode(*token, /*url=*/true);
    if (!after) {
      return SendError(MakeError(Reason::kInvalidArgument, "The continuation token is not valid"));
    }
    opts.start_after = std::max(opts.start_after, *after);
  }
  XmlWriter xml;
  xml.Open("ListAllMyBucketsResult", true);
  xml.Open("Owner");
  xml.Element("ID", ctx_.principal);
  xml.Element("DisplayName", ctx_.principal);
  xml.Close("Owner");
  xml.Open("Buckets");
  int64_t count = 0;
  std::string last_listed;
  std::optional<std::string> next_token;
  for (bool more = true; more && !next_token;) {
    auto page = volume().ReadDir(ctx_, "/", opts);
    // A caller with no rule at all may see no bucket: an empty list, as S3 answers.
    if (page.status().code() == StatusCode::kPermissionDenied) break;
    if (!page.ok()) return SendStatus(page.status());
    more = page->truncated;
    for (const DirEntry& e : page->entries) {
      opts.start_after = e.name;
      if (!e.name.starts_with(prefix)) {
        if (e.name > prefix) more = false;  // past every name with the prefix
        continue;
      }
      if (e.type != FileType::kDirectory || !ValidateBucketName(e.name).ok()) continue;
      // Show only buckets the caller may list.
      if (!frontend_.volume_.Allows(ctx_, auth::kList, "/" + e.name + "/")) continue;
      if (max_buckets && count == *max_buckets) {
        next_token = Base64Encode(last_listed, /*url=*/true);
        break;
      }
      ++count;
      last_listed = e.name;
      xml.Open("Bucket");
      xml.Element("Name", e.name);
      xml.Element("CreationDate", FormatIso8601(e.info ? e.info->ctime_ns : 0, /*millis=*/true));
      xml.Close("Bucket");
    }
  }
  xml.Close("Buckets");
  if (next_token) xml.Element("ContinuationToken", *next_token);
  if (request_.HasQuery("prefix")) xml.Element("Prefix", prefix);
  xml.Close("ListAllMyBucketsResult");
  SendXml(200, xml.Finish());
}

void S3Frontend::Call::CreateBucket() {
  // The optional body only names a region; it must still be well-formed.
  auto config = ReadXmlBody("CreateBucketConfiguration", /*optional=*/true);
  if (!config.ok()) return SendStatus(config.status());
  const std::string path = "/" + request_.bucket;
  auto made = volume().Mkdir(ctx_, path, 0755, false);
  if (!made.ok()) {
    if (made.status().code() != StatusCode::kAlreadyExists) return SendStatus(made.status());
    auto existing = volume().Stat(ctx_, path);
    if (!existing.ok()) return SendStatus(existing.status());
    auto owner = existing->attributes.find(std::string(kAttrOwner));
    // A directory made by another front end has no S3 owner: whoever may write it owns it.
    const bool mine = existing->type == FileType::kDirectory &&
                      (owner == existing->attributes.end() || owner->second == ctx_.principal);
    if (!mine) {
      return SendError(MakeError(Reason::kBucketAlreadyExists,
                                 "The requested bucket name is not available. Select a "
                                 "different name and try again."));
    }
    // us-east-1 answers a repeated create of one's own bucket with success, for old clients.
    if (frontend_.options_.region == "us-east-1") {
      return SendEmpty(200, {{"Location", path}});
    }
    return SendError(MakeError(Reason::kBucketAlreadyOwnedByYou,
                               "Your previous request to create the named bucket succeeded "
                               "and you already own it."));
  }
  // Whoever may create a bucket owns it, without admin on it.
  auto set = frontend_.volume_.ClaimDirectory(ctx_, path, std::string(kAttrOwner));
  if (!set.ok()) return SendStatus(set.status());
  SendEmpty(200, {{"Location", path}});
}

void S3Frontend::Call::HeadBucket() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  SendEmpty(200, {{"x-amz-bucket-region", frontend_.options_.region}});
}

void S3Frontend::Call::DeleteBucket() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto not_empty = [&] {
    SendError(MakeError(Reason::kBucketNotEmpty, "The bucket you tried to delete is not empty"));
  };
  const std::string path = "/" + request_.bucket;
  if (VersioningOn(*bucket)) {
    // A versioned bucket is empty when no key has a version or delete marker left; the
    // directories its keys lived in stay until then (ListObjectVersions walks them).
    auto left = AnyVersionLeft(*bucket);
    if (!left.ok()) return SendStatus(left.status());
    if (*left) return not_empty();
    RemoveEmptyDirectories(path);
  }
  Status removed = volume().Rmdir(ctx_, path);
  if (removed.code() == StatusCode::kNotEmpty && AbortAllUploadsIfOnlyThem()) {
    removed = volume().Rmdir(ctx_, path);
  }
  if (!removed.ok()) {
    if (removed.code() == StatusCode::kNotEmpty) return not_empty();
    return SendStatus(removed, Missing::kBucket);
  }
  SendEmpty(204);
}

Status S3Frontend::Call::SetBucketSetting(const FileInfo& bucket, std::string_view name,
                                          std::optional<std::string> value) {
  SetAttrRequest set;
  set.attributes = bucket.attributes;
  if (value) {
    (*set.attributes)[std::string(name)] = std::move(*value);
  } else {
    set.attributes->erase(std::string(name));
  }
  return volume().SetAttr(ctx_, "/" + request_.bucket, set).status();
}

Result<bool> S3Frontend::Call::AnyVersionLeft(const FileInfo& bucket) {
  KeyWalker::Options opts;
  opts.bucket = request_.bucket;
  opts.include_removed = true;
  KeyWalker walker(volume(), ctx_, opts);
  while (true) {
    WEFT_ASSIGN_OR_RETURN(std::optional<ListedKey> next, walker.Next());
    if (!walker.lists_removed()) {
      // A spoke cannot see deleted keys' versions: it must not conclude there are none.
      return Unimplemented(Reason::kNotImplemented,
                           "a versioned bucket is deleted at the hub, which sees every version");
    }
    if (!next) return false;
    if (next->is_directory) continue;
    auto versions = S3VersionsOf(bucket, "/" + request_.bucket + "/" + next->key);
    if (!versions.ok()) {
      if (versions.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      return versions.status();  // cannot tell: refuse rather than delete versions
    }
    if (!versions->empty()) return true;
  }
}

void S3Frontend::Call::RemoveEmptyDirectories(const std::string& dir) {
  ReadDirOptions opts;
  while (true) {
    auto page = volume().ReadDir(ctx_, dir, opts);
    if (!page.ok()) return;
    for (const DirEntry& e : page->entries) {
      opts.start_after = e.name;
      if (e.type != FileType::kDirectory ||
          (dir.find('/', 1) == std::string::npos && e.name == kUploadsDirName)) {
        continue;
      }
      RemoveEmptyDirectories(dir + "/" + e.name);
      (void)volume().Rmdir(ctx_, dir + "/" + e.name);  // NotEmpty: it holds objects
    }
    if (!page->truncated) return;
  }
}

void S3Frontend::Call::GetBucketLocation() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  XmlWriter xml;
  xml.Open("LocationConstraint", true);
  std::string out = xml.Finish();
  // us-east-1 is spelled as an empty constraint, as S3 does.
  if (frontend_.options_.region != "us-east-1") out += XmlEscape(frontend_.options_.region);
  out += "</LocationConstraint>";
  SendXml(200, out);
}

void S3Frontend::Call::GetBucketVersioning() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  XmlWriter xml;
  xml.Open("VersioningConfiguration", true);
  auto it = bucket->attributes.find(std::string(kAttrVersioning));
  if (it != bucket->attributes.end()) xml.Element("Status", it->second);
  xml.Close("VersioningConfiguration");
  SendXml(200, xml.Finish());
}

void S3Frontend::Call::PutBucketVersioning() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto doc = ReadXmlBody("VersioningConfiguration");
  if (!doc.ok()) return SendStatus(doc.status());
  auto status = (*doc)->root().Child("Status");
  if (!status || (status->text() != "Enabled" && status->text() != "Suspended")) {
    return SendError(MakeError(Reason::kMalformedXML, "Status must be Enabled or Suspended"));
  }
  Attributes attributes = bucket->attributes;
  attributes[std::string(kAttrVersioning)] = status->text();
  VersioningLog log = VersioningLog::FromAttributes(bucket->attributes);
  log.Change(status->text() == "Enabled" ? Versioning::kEnabled : Versioning::kSuspended, now_ns());
  attributes[std::string(kAttrVersioningLog)] = log.Encode();
  // The engine keeps every version anyway; "Enabled" also stops GC from expiring old ones.
  if (status->text() == "Enabled") {
    attributes[std::string(kAttrKeepVersions)] = "all";
  } else {
    attributes.erase(std::string(kAttrKeepVersions));
  }
  SetAttrRequest set;
  set.attributes = std::move(attributes);
  auto done = volume().SetAttr(ctx_, "/" + request_.bucket, set);
  if (!done.ok()) return SendStatus(done.status(), Missing::kBucket);
  SendEmpty(200);
}

// ---- Listing --------------------------------------------------------------------------------

void S3Frontend::Call::ListObjects(bool v2) {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto params = ParseListParams(request_);
  if (!params.ok()) return SendStatus(params.status());
  const std::string& prefix = params->prefix;
  const std::string& delimiter = params->delimiter;
  KeyWalker::Options opts;
  opts.bucket = request_.bucket;
  opts.prefix = prefix;
  std::string token = request_.Query("continuation-token").value_or("");
  std::string start_after = request_.Query(v2 ? "start-after" : "marker").value_or("");
  if (v2 && !token.empty()) {
    auto decoded = Base64Decode(token);
    if (!decoded || decoded->empty() || ((*decoded)[0] != 'k' && (*decoded)[0] != 'p')) {
      return SendError(MakeError(Reason::kInvalidArgument, "The continuation token is not valid"));
    }
    opts.start_after = decoded->substr(1);
    if ((*decoded)[0] == 'p') opts.skip_prefix = opts.start_after;
  } else {
    opts.start_after = start_after;
    if (!v2 && !delimiter.empty() && start_after.ends_with(delimiter)) {
      opts.skip_prefix = start_after;
    }
  }
  const std::string listed_prefix = opts.skip_prefix;
  if (prefix.starts_with(kSnapshotKeyPrefix)) {
    // ".weft/snapshots/NAME/rest" lists "rest" as of snapshot NAME.
    std::string_view rest = std::string_view(prefix).substr(kSnapshotKeyPrefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
      return SendError(
          MakeError(Reason::kInvalidArgument, "list a snapshot with prefix .weft/snapshots/NAME/"));
    }
    opts.snapshot = std::string(rest.substr(0, slash));
  }
  std::string key_offset;  // what the walker's keys lack to be the client's keys
  if (opts.snapshot) {
    key_offset = std::string(kSnapshotKeyPrefix) + *opts.snapshot + "/";
    opts.prefix = opts.prefix.substr(key_offset.size());
    auto strip = [&](std::string& s) {
      s = s.starts_with(key_offset) ? s.substr(key_offset.size()) : (s < key_offset ? "" : s);
    };
    strip(opts.start_after);
    strip(opts.skip_prefix);
  }

  KeyWalker walker(volume(), ctx_, opts);
  RolledUpListing listing(walker, *params, key_offset, listed_prefix);
  std::vector<ListedKey> contents;
  std::vector<std::string> common_prefixes;
  std::string last_position;  // the last key or common prefix returned: the next page's start
  bool last_is_prefix = false;
  bool truncated = false;
  int64_t count = 0;
  while (true) {
    auto next = listing.Next();
    if (!next.ok()) return SendStatus(next.status());
    if (!next->has_value()) break;
    if (count == params->max_keys) {
      truncated = params->max_keys > 0;  // max-keys=0 asks for nothing, not for a next page
      break;
    }
    count++;
    RolledUpListing::Entry& entry = **next;
    last_is_prefix = !entry.common_prefix.empty();
    if (last_is_prefix) {
      last_position = entry.common_prefix;
      common_prefixes.push_back(std::move(entry.common_prefix));
    } else {
      last_position = entry.key.key;
      contents.push_back(std::move(entry.key));
    }
  }

  XmlWriter xml;
  xml.Open("ListBucketResult", true);
  xml.Element("Name", request_.bucket);
  xml.Element("Prefix", params->Encode(prefix));
  if (v2) {
    if (request_.HasQuery("continuation-token")) xml.Element("ContinuationToken", token);
    if (!start_after.empty()) xml.Element("StartAfter", params->Encode(start_after));
    xml.Element("KeyCount", std::to_string(count));
  } else {
    xml.Element("Marker", params->Encode(start_after));
  }
  xml.Element("MaxKeys", std::to_string(params->max_keys));
  if (!delimiter.empty()) xml.Element("Delimiter", params->Encode(delimiter));
  if (params->url) xml.Element("EncodingType", "url");
  xml.Element("IsTruncated", truncated ? "true" : "false");
  if (truncated) {
    if (v2) {
      xml.Element("NextContinuationToken", EncodeToken(last_is_prefix ? 'p' : 'k', last_position));
    } else if (!delimiter.empty()) {
      xml.Element("NextMarker", params->Encode(last_position));
    }
  }
  bool fetch_owner = !v2 || request_.Query("fetch-owner") == "true";
  for (const ListedKey& item : contents) {
    xml.Open("Contents");
    xml.Element("Key", params->Encode(item.key));
    xml.Element("LastModified", FormatIso8601(item.info.mtime_ns, /*millis=*/true));
    xml.Element("ETag", QuoteEtag(item.info.etag));
    xml.Element("Size", std::to_string(item.info.size));
    if (fetch_owner) {
      xml.Open("Owner");
      xml.Element("ID", std::to_string(item.info.uid));
      xml.Element("DisplayName", std::to_string(item.info.uid));
      xml.Close("Owner");
    }
    xml.Element("StorageClass", "STANDARD");
    xml.Close("Contents");
  }
  WriteCommonPrefixes(xml, common_prefixes, *params);
  xml.Close("ListBucketResult");
  SendXml(200, xml.Finish(), walker.stale());
}

void S3Frontend::Call::ListObjectVersions() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto params = ParseListParams(request_);
  if (!params.ok()) return SendStatus(params.status());
  const std::string key_marker = request_.Query("key-marker").value_or("");
  const std::string version_marker = request_.Query("version-id-marker").value_or("");
  if (!version_marker.empty() && key_marker.empty()) {
    return SendError(MakeError(Reason::kInvalidArgument,
                               "A version-id marker cannot be specified without a key marker."));
  }
  KeyWalker::Options opts;
  opts.bucket = request_.bucket;
  opts.prefix = params->prefix;
  opts.start_after = key_marker;
  opts.include_removed = true;  // a deleted key's versions are still listed
  if (!params->delimiter.empty() && key_marker.ends_with(params->delimiter)) {
    opts.skip_prefix = key_marker;  // the previous page ended on this common prefix
  }
  KeyWalker walker(volume(), ctx_, opts);
  RolledUpListing listing(walker, *params, "", opts.skip_prefix);

  struct Listed {
    std::string key;
    S3Version version;
  };
  std::vector<Listed> listed;
  std::vector<std::string> common_prefixes;
  // Versions and common prefixes both count against max-keys; a page may end inside a key.
  int64_t count = 0;
  bool truncated = false;
  std::string next_key, next_version;
  // Adds `key`'s versions after `after` (all when empty); false once the page is full.
  auto add = [&](const std::string& key, std::vector<S3Version> versions,
                 const std::string& after) {
    size_t i = 0;
    if (!after.empty()) {
      auto it = std::find_if(versions.begin(), versions.end(),
                             [&](const S3Version& v) { return v.id == after; });
      if (it != versions.end()) {
        i = it - versions.begin() + 1;
      } else if (auto seq = VersionIdSequence(after)) {
        // The marker's version is gone (a client deleting page by page): resume at the versions
        // older than it. Listing one twice beats skipping any.
        // By the sequence each id names (its content's, or its delete's), not by when it
        // became current: deleting the newest makes the one before current again, later.
        while (i < versions.size() && VersionIdSequence(versions[i].weft_id).value_or(0) >= *seq) {
          ++i;
        }
      }
    }
    for (; i < versions.size(); ++i) {
      if (count >= params->max_keys) {
        truncated = params->max_keys > 0;
        return false;
      }
      ++count;
      next_key = key;
      next_version = versions[i].id;
      listed.push_back({key, std::move(versions[i])});
    }
    return true;
  };
  bool full = false;
  if (!version_marker.empty() && key_marker.starts_with(params->prefix)) {
    // The rest of the key the previous page ended inside.
    auto versions = S3VersionsOf(*bucket, "/" + request_.bucket + "/" + key_marker);
    if (versions.ok()) full = !add(key_marker, std::move(versions).value(), version_marker);
  }
  while (!full) {
    auto next = listing.Next();
    if (!next.ok()) return SendStatus(next.status());
    if (!next->has_value()) break;
    RolledUpListing::Entry& entry = **next;
    if (!entry.common_prefix.empty()) {
      if (count >= params->max_keys) {
        truncated = params->max_keys > 0;
        break;
      }
      ++count;
      next_key = entry.common_prefix;
      next_version.clear();
      common_prefixes.push_back(std::move(entry.common_prefix));
      continue;
    }
    auto versions = S3VersionsOf(*bucket, "/" + request_.bucket + "/" + entry.key.key);
    if (!versions.ok() || versions->empty()) continue;  // removed while we listed, or hidden
    full = !add(entry.key.key, std::move(versions).value(), "");
  }
  XmlWriter xml;
  xml.Open("ListVersionsResult", true);
  xml.Element("Name", request_.bucket);
  xml.Element("Prefix", params->Encode(params->prefix));
  xml.Element("KeyMarker", params->Encode(key_marker));
  xml.Element("VersionIdMarker", version_marker);
  xml.Element("MaxKeys", std::to_string(params->max_keys));
  if (!params->delimiter.empty()) xml.Element("Delimiter", params->Encode(params->delimiter));
  if (params->url) xml.Element("EncodingType", "url");
  xml.Element("IsTruncated", truncated ? "true" : "false");
  if (truncated) {
    xml.Element("NextKeyMarker", params->Encode(next_key));
    if (!next_version.empty()) xml.Element("NextVersionIdMarker", next_version);
  }
  for (const Listed& item : listed) {
    const VersionInfo& v = item.version.info;
    const char* tag = v.is_delete_marker ? "DeleteMarker" : "Version";
    xml.Open(tag);
    xml.Element("Key", params->Encode(item.key));
    xml.Element("VersionId", item.version.id);
    xml.Element("IsLatest", item.version.is_latest ? "true" : "false");
    xml.Element("LastModified", FormatIso8601(v.mtime_ns, /*millis=*/true));
    if (!v.is_delete_marker) {
      xml.Element("ETag", QuoteEtag(v.etag));
      xml.Element("Size", std::to_string(v.size));
      xml.Element("StorageClass", "STANDARD");
    }
    xml.Close(tag);
  }
  WriteCommonPrefixes(xml, common_prefixes, *params);
  xml.Close("ListVersionsResult");
  SendXml(200, xml.Finish(), walker.stale());
}

void S3Frontend::Call::DeleteObjects() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  // S3 requires a digest of the body here (the SDKs send one): a truncated list must not delete
  // some of the keys.
  bool has_digest = request_.Header("content-md5").has_value();
  for (const net::HttpHeader& h : request_.http->headers) {
    has_digest |= AsciiLower(h.name).starts_with("x-amz-checksum-");
  }
  if (!has_digest) {
    return SendError(MakeError(Reason::kInvalidRequest,
                               "Missing required header for this request: Content-MD5"));
  }
  auto doc = ReadXmlBody("Delete");
  if (!doc.ok()) return SendStatus(doc.status());
  bool quiet = false;
  if (auto q = (*doc)->root().Child("Quiet")) quiet = q->text() == "true";
  std::vector<XmlElement> objects = (*doc)->root().Children("Object");
  if (objects.empty() || objects.size() > 1000) {
    return SendError(MakeError(Reason::kMalformedXML, "DeleteObjects names 1 to 1000 objects"));
  }
  XmlWriter xml;
  xml.Open("DeleteResult", true);
  for (const XmlElement& object : objects) {
    auto key_element = object.Child("Key");
    if (!key_element) return SendError(MakeError(Reason::kMalformedXML, "an Object has no Key"));
    std::string key = key_element->raw_text();
    std::optional<std::string> version;
    if (auto v = object.Child("VersionId")) version = v->text();
    std::string path = "/" + request_.bucket + "/" + key;
    Status done = ValidateClientKey(key);
    if (done.ok() && key.empty()) done = InvalidArgument(Reason::kInvalidArgument, "empty key");
    if (done.ok()) done = frontend_.volume_.Check(ctx_, auth::kWrite, path);
    Deleted deleted;
    if (done.ok()) {
      auto one = DeleteKey(*bucket, key, version);
      if (one.ok()) {
        deleted = *one;
      } else {
        done = one.status();
      }
    }
    if (done.ok()) {
      if (quiet) continue;
      xml.Open("Deleted");
      xml.Element("Key", key);
      if (version) xml.Element("VersionId", *version);
      if (deleted.delete_marker) {
        xml.Element("DeleteMarker", "true");
        if (deleted.id) xml.Element("DeleteMarkerVersionId", *deleted.id);
      }
      xml.Close("Deleted");
    } else {
      S3Error error = ErrorFromStatus(done, version ? Missing::kVersion : Missing::kKey);
      xml.Open("Error");
      xml.Element("Key", key);
      if (version) xml.Element("VersionId", *version);
      xml.Element("Code", error.code);
      xml.Element("Message", error.message);
      xml.Close("Error");
    }
  }
  xml.Close("DeleteResult");
  SendXml(200, xml.Finish());
}

// ---- Objects --------------------------------------------------------------------------------

void S3Frontend::Call::PutObject() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  if (request_.key.starts_with(".weft/")) {
    return SendError(MakeError(Reason::kAccessDenied, "keys under .weft/ are read-only snapshots"));
  }
  if (!request_.http->content_length && !request_.http->chunked) {
    return SendError(
        MakeError(Reason::kMissingContentLength, "You must provide the Content-Length"));
  }
  auto payload = Payload();
  if (!payload.ok()) return SendStatus(payload.status());
  std::string path = request_.VolumePath();
  if (request_.key.ends_with('/')) {
    // A directory marker: an empty object whose key ends with '/' becomes a directory.
    auto body = (*payload)->ReadAll(0);
    if (!body.ok()) return SendStatus(body.status());
    path.pop_back();
    auto made = volume().Mkdir(ctx_, path, 0755, true);
    if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) {
      return SendStatus(made.status());
    }
    return SendEmpty(200, {{"ETag", QuoteEtag(kEmptyMd5)}});
  }
  auto attributes = AttributesFromHeaders();
  if (!attributes.ok()) return SendStatus(attributes.status());
  WriteOptions opts;
  opts.create_parents = true;
  opts.attributes = std::move(attributes).value();
  // A Content-MD5 the payload is checked against is the ETag: no second MD5 pass.
  opts.etag = (*payload)->declared_md5_hex();
  if (auto none_match = request_.Header("if-none-match"); none_match && *none_match == "*") {
    opts.if_version = "";  // create only
  } else if (auto match = request_.Header("if-match")) {
    auto current = volume().Stat(ctx_, path);
    if (!current.ok() || UnquoteEtag(*match) != current->etag) {
      return SendError(MakeError(Reason::kPreconditionFailed, "If-Match does not hold"));
    }
    opts.if_version = current->version_id;
  }
  auto writer = volume().OpenWriter(ctx_, path, opts);
  if (!writer.ok()) return SendStatus(writer.status());
  Status copied = CopyPayloadInto(**writer, **payload);
  if (!copied.ok()) return SendStatus(copied);
  auto info = (*writer)->Commit();
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kFailedPrecondition ||
        info.status().code() == StatusCode::kAlreadyExists) {
      return SendError(
          MakeError(Reason::kPreconditionFailed, "the object changed or already exists"));
    }
    return SendStatus(info.status());
  }
  std::vector<net::HttpHeader> headers = {{"ETag", QuoteEtag(info->etag)}};
  if (VersioningLog::FromAttributes(bucket->attributes).Now() == Versioning::kEnabled) {
    headers.push_back({"x-amz-version-id", info->version_id});
  }
  SendEmpty(200, std::move(headers));
}

namespace {

// Evaluates If-Match, If-None-Match, If-Modified-Since and If-Unmodified-Since (RFC 7232
// order, as S3 applies them). Returns 0 to proceed, else 304 or 412.
int CheckConditions(const S3Request& r, const FileInfo& info, std::string_view prefix = "") {
  auto header = [&](std::string_view name) {
    return r.Header(std::string(prefix) + std::string(name));
  };
  int64_t mtime = info.mtime_ns / 1'000'000'000;
  auto etag_matches = [&](std::string_view list) {
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string_view::npos) comma = list.size();
      std::string one = UnquoteEtag(list.substr(start, comma - start));
      if (one == "*" || one == info.etag) return true;
      start = comma + 1;
    }
    return false;
  };
  auto if_match = header("if-match");
  auto if_none_match = header("if-none-match");
  if (if_match) {
    if (!etag_matches(*if_match)) return 412;
  } else if (auto since = header("if-unmodified-since")) {
    auto t = ParseHttpDate(*since);
    if (t && mtime > *t) return 412;
  }
  if (if_none_match) {
    if (etag_matches(*if_none_match)) return r.method == "GET" || r.method == "HEAD" ? 304 : 412;
  } else if (auto since = header("if-modified-since")) {
    auto t = ParseHttpDate(*since);
    if (t && mtime <= *t) return r.method == "GET" || r.method == "HEAD" ? 304 : 412;
  }
  return 0;
}

// Sends bytes [first, end) of `reader` straight from each chunk's plaintext, one gather write
// per window of about kWindowBytes of chunks, while the reader is told (WillNeed) of the next
// kWindowsAhead windows so that the disk works ahead of the sends (a spoke's reader fetches
// ahead of sequential reads on its own). Reading on the sending thread is what nginx does: on
// a small machine a helper thread reading ahead only competed with the sender and the client
// for the cores (0.6x nginx with one, 0.8x without), and copying into a response buffer
// (fresh pages each time) was half the server's CPU. `start` sends the headers once the first
// window is in hand, so that a read that fails at once (a spoke that cannot reach its hub)
// is answered with an error rather than a short body.
Status StreamRange(FileReader& reader, uint64_t first, uint64_t end, net::ResponseWriter& out,
                   const std::function<Status()>& start) {
  // Measured on 2 cores with curl: 256-512 KiB windows served 2.5 GB/s, 1-4 MiB ones 2.1: the
  // socket drains while the next, smaller window is read.
  constexpr uint64_t kWindowBytes = 512 << 10;
  constexpr size_t kWindowsAhead = 4;
  // A range this large is a scan: its chunks would flush the volume's chunk cache (256 MiB by
  // default) of what smaller, repeated reads need, so they are not kept.
  constexpr uint64_t kScanBytes = 64 << 20;
  const Reuse reuse = end - first >= kScanBytes ? Reuse::kUnlikely : Reuse::kLikely;
  const std::vector<ChunkRef>& chunks = reader.chunks();
  size_t i = 0;  // first chunk not yet sent
  uint64_t at = 0;
  while (i < chunks.size() && at + chunks[i].length <= first) at += chunks[i++].length;
  // Windows as [begin, end) chunk indexes.
  std::vector<std::pair<size_t, size_t>> windows;
  for (size_t next = i, next_at = at; next < chunks.size() && next_at < end;) {
    const size_t from = next;
    const uint64_t from_at = next_at;
    while (next < chunks.size() && next_at < end &&
           (next == from || next_at - from_at < kWindowBytes)) {
      next_at += chunks[next++].length;
    }
    windows.emplace_back(from, next);
  }
  auto will_need = [&](size_t from, size_t to) {  // windows [from, to]
    reader.WillNeed(windows[from].first, windows[to].second);
  };
  if (windows.size() > 1) will_need(0, std::min(kWindowsAhead, windows.size() - 1));
  if (windows.empty()) WEFT_RETURN_IF_ERROR(start());
  std::vector<std::string_view> pieces;
  for (size_t w = 0; w < windows.size(); ++w) {
    if (w > 0 && w + kWindowsAhead < windows.size())
      will_need(w + kWindowsAhead, w + kWindowsAhead);
    WEFT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const std::string>> data,
                          reader.ReadChunks(windows[w].first, windows[w].second, reuse));
    if (w == 0) WEFT_RETURN_IF_ERROR(start());
    pieces.clear();
    for (const std::shared_ptr<const std::string>& chunk : data) {
      const uint64_t skip = first > at ? first - at : 0;
      const uint64_t stop = std::min<uint64_t>(chunks[i].length, end - at);
      pieces.push_back(std::string_view(*chunk).substr(skip, stop - skip));
      at += chunks[i++].length;
    }
    WEFT_RETURN_IF_ERROR(out.Write(pieces));
  }
  return at < end ? Internal("object ended before its size") : OkStatus();
}

struct ByteRange {
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
};

// nullopt: serve the whole object (no header, or a form S3 ignores); error: InvalidRange.
Result<std::optional<ByteRange>> ParseRange(std::string_view header, uint64_t size) {
  if (!header.starts_with("bytes=")) return std::optional<ByteRange>();
  std::string_view spec = header.substr(6);
  if (spec.find(',') != std::string_view::npos) return std::optional<ByteRange>();
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::optional<ByteRange>();
  auto number = [](std::string_view s) -> std::optional<uint64_t> {
    if (s.empty() || s.size() > 19) return std::nullopt;
    uint64_t n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    return n;
  };
  std::string_view a = spec.substr(0, dash);
  std::string_view b = spec.substr(dash + 1);
  auto unsatisfiable = [&] {
    return Status(
        StatusCode::kOutOfRange, Reason::kInvalidRange,
        "The requested range is not satisfiable (object size " + std::to_string(size) + ")");
  };
  if (a.empty()) {  // suffix: the last n bytes
    auto n = number(b);
    if (!n) return std::optional<ByteRange>();
    if (*n == 0 || size == 0) return unsatisfiable();
    uint64_t len = std::min(*n, size);
    return std::optional<ByteRange>(ByteRange{size - len, size - 1});
  }
  auto first = number(a);
  if (!first) return std::optional<ByteRange>();
  if (*first >= size) return unsatisfiable();
  uint64_t last = size - 1;
  if (!b.empty()) {
    auto l = number(b);
    if (!l || *l < *first) return std::optional<ByteRange>();
    last = std::min(*l, size - 1);
  }
  return std::optional<ByteRange>(ByteRange{*first, last});
}

}  // namespace

void S3Frontend::Call::GetObject(bool head) {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto ref = ResolveObject(request_.bucket, request_.key);
  if (!ref.ok()) return SendStatus(ref.status());
  const std::optional<std::string> version = request_.Query("versionId");
  std::optional<std::string> weft_version = version;
  if (version && (*version == kNullVersion || version->starts_with("delete."))) {
    auto found = FindS3Version(*bucket, ref->path, *version);
    if (!found.ok()) return SendStatus(found.status(), Missing::kVersion);
    if (found->info.is_delete_marker) {
      // A delete marker has no content: S3 answers 405 and names the marker.
      return SendError(MakeError(Reason::kMethodNotAllowed,
                                 "The specified method is not allowed against this resource."),
                       {{"x-amz-delete-marker", "true"},
                        {"x-amz-version-id", found->id},
                        {"Last-Modified", HttpDate(found->info.mtime_ns)}});
    }
    weft_version = found->weft_id;
  }
  Result<std::unique_ptr<FileReader>> reader =
      weft_version ? volume().OpenVersion(ctx_, ref->path, *weft_version)
                   : volume().OpenReader(ctx_, ref->path, ref->read);
  if (!reader.ok()) {
    Status s = reader.status();
    if (s.code() == StatusCode::kIsADirectory || s.code() == StatusCode::kNotADirectory) {
      s = NotFound("not an object");
    }
    if (s.code() == StatusCode::kInvalidArgument && version) s = NotFound("bad version id");
    if (s.code() == StatusCode::kNotFound && !version && !ref->in_snapshot &&
        VersioningOn(*bucket)) {
      // Removed in a versioned bucket: S3 names the delete marker that hides it.
      auto versions = S3VersionsOf(*bucket, ref->path);
      if (versions.ok() && !versions->empty() && versions->front().is_latest &&
          versions->front().info.is_delete_marker) {
        return SendError(
            ErrorFromStatus(s, Missing::kKey),
            {{"x-amz-delete-marker", "true"}, {"x-amz-version-id", versions->front().id}});
      }
    }
    return SendStatus(s, version ? Missing::kVersion : Missing::kKey);
  }
  const FileInfo& info = (*reader)->info();
  if (info.type != FileType::kFile) return SendStatus(NotFound("not an object"));
  std::vector<net::HttpHeader> headers = ObjectHeaders(info);
  if (version) {
    headers.push_back({"x-amz-version-id", *version});
  } else if (VersioningOn(*bucket) && !ref->in_snapshot) {
    headers.push_back(
        {"x-amz-version-id", S3VersionId(info, VersioningLog::FromAttributes(bucket->attributes))});
  }
  if (int code = CheckConditions(request_, info); code != 0) {
    if (code == 304) {
      std::vector<net::HttpHeader> kept;
      for (auto& h : headers) {
        if (h.name == "ETag" || h.name == "Last-Modified") kept.push_back(h);
      }
      return SendEmpty(304, std::move(kept));
    }
    return SendError(MakeError(Reason::kPreconditionFailed,
                               "At least one of the pre-conditions you specified did not hold"));
  }
  // response-* query parameters override the stored headers (presigned downloads use them).
  for (auto [param, header] : std::array<std::pair<std::string_view, std::string_view>, 6>{
           {{"response-content-type", "Content-Type"},
            {"response-content-language", "Content-Language"},
            {"response-expires", "Expires"},
            {"response-cache-control", "Cache-Control"},
            {"response-content-disposition", "Content-Disposition"},
            {"response-content-encoding", "Content-Encoding"}}}) {
    if (auto value = request_.Query(param)) {
      // Decoded from the query: it could carry CR/LF and forge headers.
      if (std::any_of(value->begin(), value->end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
        return SendError(MakeError(Reason::kInvalidArgument,
                                   std::string(param) + " may not contain control characters"));
      }
      std::erase_if(headers, [&, name = header](const net::HttpHeader& h) {
        return AsciiLower(h.name) == AsciiLower(name);
      });
      headers.push_back({std::string(header), *value});
    }
  }
  uint64_t first = 0;
  uint64_t length = info.size;
  int status = 200;
  if (auto part = request_.Query("partNumber")) {
    // One part of a multipart object, as uploaded; a single-part object is its own part 1.
    auto number = ParseIntParam("partNumber", *part, 1, kMaxParts);
    if (!number.ok()) return SendStatus(number.status());
    if (request_.Header("range")) {
      return SendError(
          MakeError(Reason::kInvalidRequest, "Cannot specify both Range and partNumber"));
    }
    std::vector<uint64_t> sizes = PartSizesOf(info).value_or(std::vector<uint64_t>{info.size});
    if (*number > static_cast<int64_t>(sizes.size())) {
      return SendError(
          MakeError(Reason::kInvalidPartNumber, "The requested partnumber is not satisfiable"));
    }
    for (int64_t i = 0; i + 1 < *number; ++i) first += sizes[i];
    length = sizes[*number - 1];
    headers.push_back({"x-amz-mp-parts-count", std::to_string(sizes.size())});
    if (length > 0) {
      status = 206;
      headers.push_back({"Content-Range", "bytes " + std::to_string(first) + "-" +
                                              std::to_string(first + length - 1) + "/" +
                                              std::to_string(info.size)});
    }
  } else if (auto range_header = request_.Header("range")) {
    auto range = ParseRange(*range_header, info.size);
    if (!range.ok()) {
      if (head) return SendEmpty(416, {{"Content-Range", "bytes */" + std::to_string(info.size)}});
      return SendStatus(range.status());
    }
    if (range->has_value()) {
      first = (*range)->first;
      length = (*range)->last - first + 1;
      status = 206;
      headers.push_back({"Content-Range", "bytes " + std::to_string(first) + "-" +
                                              std::to_string((*range)->last) + "/" +
                                              std::to_string(info.size)});
    }
  }
  headers.push_back({"x-amz-request-id", request_id_});
  bool started = false;
  auto start = [&] {
    started = true;
    return response_.Start(status, headers, length);
  };
  Status sent = head ? start() : StreamRange(**reader, first, first + length, response_, start);
  // Once the headers are out, the only honest signal of a read error is a short body.
  if (!sent.ok()) {
    if (started) return;
    // The object exists: a missing chunk or range behind it is the server's failure, not a
    // missing key or a bad range in the request. A hub out of reach stays 503.
    const StatusCode code = sent.code();
    if (code == StatusCode::kNotFound || code == StatusCode::kOutOfRange ||
        code == StatusCode::kInvalidArgument) {
      sent = Internal(sent.message());
    }
    return SendStatus(sent);
  }
  (void)response_.Finish();
}

void S3Frontend::Call::GetObjectAttributes() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto wanted_header = request_.Header("x-amz-object-attributes");
  if (!wanted_header || wanted_header->empty()) {
    return SendError(MakeError(Reason::kInvalidArgument,
                               "x-amz-object-attributes names the attributes to return"));
  }
  std::set<std::string, std::less<>> wanted;
  for (std::string_view one : SplitList(*wanted_header)) {
    static constexpr std::string_view kKnownAttributes[] = {"ETag", "Checksum", "ObjectParts",
                                                            "StorageClass", "ObjectSize"};
    if (std::find(std::begin(kKnownAttributes), std::end(kKnownAttributes), one) ==
        std::end(kKnownAttributes)) {
      return SendError(MakeError(Reason::kInvalidArgument,
                                 "Invalid attribute name specified: " + std::string(one)));
    }
    wanted.emplace(one);
  }
  CopySource self{request_.bucket, request_.key, request_.Query("versionId")};
  auto opened = OpenSource(self, /*copy=*/false);
  if (!opened.ok()) return SendStatus(opened.status());
  const FileInfo& info = opened->reader->info();
  XmlWriter xml;
  xml.Open("GetObjectAttributesResponse", true);
  if (wanted.count("ETag")) xml.Element("ETag", info.etag);
  if (wanted.count("ObjectParts")) {
    if (std::optional<std::vector<uint64_t>> parts = PartSizesOf(info)) {
      const std::vector<uint64_t>& sizes = *parts;
      auto number = [&](std::string_view header, int64_t lo, int64_t fallback) -> Result<int64_t> {
        auto value = request_.Header(header);
        return value ? ParseIntParam(header, *value, lo, kMaxParts) : fallback;
      };
      auto max_parts = number("x-amz-max-parts", 1, 1000);
      auto marker = number("x-amz-part-number-marker", 0, 0);
      if (!max_parts.ok()) return SendStatus(max_parts.status());
      if (!marker.ok()) return SendStatus(marker.status());
      const int64_t total = static_cast<int64_t>(sizes.size());
      const int64_t last = std::min<int64_t>(total, *marker + *max_parts);
      xml.Open("ObjectParts");
      xml.Element("PartsCount", std::to_string(total));  // TotalPartsCount in the SDKs
      xml.Element("PartNumberMarker", std::to_string(*marker));
      xml.Element("NextPartNumberMarker", std::to_string(last));
      xml.Element("MaxParts", std::to_string(*max_parts));
      xml.Element("IsTruncated", last < total ? "true" : "false");
      for (int64_t n = *marker + 1; n <= last; ++n) {
        xml.Open("Part");
        xml.Element("PartNumber", std::to_string(n));
        xml.Element("Size", std::to_string(sizes[n - 1]));
        xml.Close("Part");
      }
      xml.Close("ObjectParts");
    }
  }
  if (wanted.count("StorageClass")) xml.Element("StorageClass", "STANDARD");
  if (wanted.count("ObjectSize")) xml.Element("ObjectSize", std::to_string(info.size));
  xml.Close("GetObjectAttributesResponse");
  std::vector<net::HttpHeader> headers = {{"Last-Modified", HttpDate(info.mtime_ns)}};
  if (opened->version_id) headers.push_back({"x-amz-version-id", *opened->version_id});
  SendXml(200, xml.Finish(), info.stale, std::move(headers));
}

void S3Frontend::Call::DeleteObject() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  if (request_.key.starts_with(".weft/")) {
    return SendError(MakeError(Reason::kAccessDenied, "keys under .weft/ are read-only snapshots"));
  }
  std::optional<std::string> version = request_.Query("versionId");
  auto deleted = DeleteKey(*bucket, request_.key, version);
  if (!deleted.ok())
    return SendStatus(deleted.status(), version ? Missing::kVersion : Missing::kKey);
  std::vector<net::HttpHeader> headers;
  if (deleted->delete_marker) headers.push_back({"x-amz-delete-marker", "true"});
  if (deleted->id) headers.push_back({"x-amz-version-id", *deleted->id});
  SendEmpty(204, std::move(headers));
}

void S3Frontend::Call::CopyObject(const CopySource& source) {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  if (request_.key.starts_with(".weft/") || request_.key.ends_with('/')) {
    return SendError(MakeError(Reason::kInvalidRequest, "cannot copy onto this key"));
  }
  auto opened = OpenSource(source);
  if (!opened.ok()) return SendStatus(opened.status());
  const ObjectRef& ref = opened->ref;
  FileReader& reader = *opened->reader;
  const FileInfo& src = reader.info();
  if (CheckConditions(request_, src, "x-amz-copy-source-") != 0) {
    return SendError(MakeError(Reason::kPreconditionFailed,
                               "At least one of the pre-conditions you specified did not hold"));
  }
  std::string directive = std::string(request_.Header("x-amz-metadata-directive").value_or("COPY"));
  if (directive != "COPY" && directive != "REPLACE") {
    return SendError(
        MakeError(Reason::kInvalidArgument, "x-amz-metadata-directive must be COPY or REPLACE"));
  }
  std::string dest = request_.VolumePath();
  if (dest == ref.path && !ref.in_snapshot && !source.version_id && directive == "COPY") {
    return SendError(MakeError(
        Reason::kInvalidRequest,
        "This copy request is illegal because it is trying to copy an object to itself without "
        "changing the object's metadata."));
  }
  WriteOptions opts;
  opts.create_parents = true;
  opts.etag = src.etag;  // same bytes, same ETag (multipart ETags stay as they were)
  std::string tagging = std::string(request_.Header("x-amz-tagging-directive").value_or("COPY"));
  if (tagging != "COPY" && tagging != "REPLACE") {
    return SendError(
        MakeError(Reason::kInvalidArgument, "x-amz-tagging-directive must be COPY or REPLACE"));
  }
  auto from_headers = AttributesFromHeaders();
  if (!from_headers.ok()) return SendStatus(from_headers.status());
  opts.attributes = directive == "COPY" ? src.attributes : *from_headers;
  // The tags follow their own directive: the source's, or the x-amz-tagging header's.
  const Attributes& tags_from = tagging == "COPY" ? src.attributes : *from_headers;
  opts.attributes.erase(std::string(kAttrTagging));
  if (auto it = tags_from.find(std::string(kAttrTagging)); it != tags_from.end()) {
    opts.attributes[it->first] = it->second;
  }
  auto writer = volume().OpenWriter(ctx_, dest, opts);
  if (!writer.ok()) return SendStatus(writer.status());
  Status appended = (*writer)->AppendFrom(reader);
  if (!appended.ok()) {
    (*writer)->Abort();
    return SendStatus(appended);
  }
  auto info = (*writer)->Commit();
  if (!info.ok()) return SendStatus(info.status());
  XmlWriter xml;
  xml.Open("CopyObjectResult", true);
  xml.Element("LastModified", FormatIso8601(info->mtime_ns, /*millis=*/true));
  xml.Element("ETag", QuoteEtag(info->etag));
  xml.Close("CopyObjectResult");
  std::string body = xml.Finish();
  std::vector<net::HttpHeader> headers;
  if (VersioningLog::FromAttributes(bucket->attributes).Now() == Versioning::kEnabled) {
    headers.push_back({"x-amz-version-id", info->version_id});
  }
  if (opened->version_id) headers.push_back({"x-amz-copy-source-version-id", *opened->version_id});
  SendXml(200, body, false, std::move(headers));
}

}  // namespace weft::s3
