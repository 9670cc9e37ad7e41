#include "frontends/s3/request.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "base/ascii.h"
#include "base/bytes.h"
#include "base/utf8.h"

namespace weft::s3 {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsLowerAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z');
}

}  // namespace

std::optional<std::string> S3Request::Query(std::string_view name) const {
  for (const sigv4::QueryParam& p : query) {
    if (p.name == name) return p.value;
  }
  return std::nullopt;
}

bool S3Request::HasQuery(std::string_view name) const {
  return Query(name).has_value();
}

std::string S3Request::VolumePath() const {
  std::string p = "/" + bucket;
  if (!key.empty()) p += "/" + key;
  return p;
}

Status ValidateBucketName(std::string_view b) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(Reason::kInvalidBucketName,
                           "bucket name '" + std::string(b) + "' " + std::string(why));
  };
  if (b.size() < 3 || b.size() > 63) return bad("must be 3 to 63 characters long");
  for (char c : b) {
    if (!IsLowerAlnum(c) && c != '-' && c != '.') {
      return bad("may contain only lower-case letters, digits, '-' and '.'");
    }
  }
  if (!IsLowerAlnum(b.front()) || !IsLowerAlnum(b.back())) {
    return bad("must begin and end with a letter or digit");
  }
  if (b.find("..") != std::string_view::npos || b.find(".-") != std::string_view::npos ||
      b.find("-.") != std::string_view::npos) {
    return bad("may not contain '..', '.-' or '-.'");
  }
  int dots = 0;
  bool all_digits_and_dots = true;
  for (char c : b) {
    dots += c == '.';
    all_digits_and_dots &= IsDigit(c) || c == '.';
  }
  if (dots == 3 && all_digits_and_dots) return bad("may not be an IP address");
  // Reserved by AWS for its own naming schemes (access points, S3 Express, ...).
  for (std::string_view reserved : {"xn--", "sthree-", "sthree-configurator", "amzn-s3-demo-"}) {
    if (b.starts_with(reserved)) return bad("may not start with '" + std::string(reserved) + "'");
  }
  for (std::string_view reserved : {"-s3alias", "--ol-s3", ".mrap", "--x-s3"}) {
    if (b.ends_with(reserved)) return bad("may not end with '" + std::string(reserved) + "'");
  }
  return OkStatus();
}

Status ValidateKey(std::string_view key) {
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument(Reason::kKeyTooLongError, "keys are at most 1024 bytes");
  }
  // A key must survive XML listings, which cannot carry bytes that are not UTF-8 (AWS refuses
  // them the same way).
  if (!IsValidUtf8(key)) {
    return InvalidArgument(Reason::kInvalidArgument, "keys must be valid UTF-8");
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view segment = key.substr(start, end - start);
    bool last = end == key.size();
    // One trailing '/' names a directory ("photos/"), as S3 consoles create them.
    if (segment.empty() && !(last && start > 0)) {
      return InvalidArgument(Reason::kInvalidArgument,
                             "key '" + std::string(key) + "' has an empty path segment");
    }
    if (segment == "." || segment == "..") {
      return InvalidArgument(Reason::kInvalidArgument,
                             "key '" + std::string(key) + "' has a '.' or '..' segment");
    }
    if (segment.size() > 255) {
      return InvalidArgument(Reason::kKeyTooLongError,
                             "a key segment between '/' is at most 255 bytes");
    }
    if (segment.find('\0') != std::string_view::npos ||
        segment.find('\\') != std::string_view::npos) {
      return InvalidArgument(Reason::kInvalidArgument, "keys may not contain NUL or '\\'");
    }
    start = end + 1;
  }
  return OkStatus();
}

Result<S3Request> ParseS3Request(const net::HttpRequest& http) {
  S3Request request;
  request.http = &http;
  request.method = http.method;
  WEFT_ASSIGN_OR_RETURN(request.path, sigv4::UriDecode(http.path, /*plus_is_space=*/false));
  if (request.path.empty() || request.path[0] != '/') {
    return InvalidArgument(Reason::kInvalidRequest, "the request path must start with '/'");
  }
  if (request.path.find('\0') != std::string::npos) {
    return InvalidArgument(Reason::kInvalidArgument, "the request path contains NUL");
  }
  auto query = sigv4::ParseQueryString(http.query);
  if (!query.ok()) return InvalidArgument(Reason::kInvalidArgument, query.status().message());
  request.query = std::move(query).value();

  std::string_view rest = std::string_view(request.path).substr(1);
  if (rest.starts_with('/')) {
    return InvalidArgument(Reason::kInvalidRequest, "the request path has an empty bucket name");
  }
  for (const char* name : {"prefix", "delimiter", "marker", "start-after"}) {
    if (auto value = request.Query(name); value && !IsValidUtf8(*value)) {
      return InvalidArgument(Reason::kInvalidArgument,
                             "the " + std::string(name) + " parameter must be valid UTF-8");
    }
  }
  size_t slash = rest.find('/');
  request.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) request.key = std::string(rest.substr(slash + 1));
  if (!request.bucket.empty()) WEFT_RETURN_IF_ERROR(ValidateBucketName(request.bucket));
  if (!request.key.empty()) WEFT_RETURN_IF_ERROR(ValidateClientKey(request.key));
  return request;
}

std::vector<std::string_view> SplitList(std::string_view value) {
  std::vector<std::string_view> items;
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view one = value.substr(0, comma);
    value = comma == std::string_view::npos ? "" : value.substr(comma + 1);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (!one.empty()) items.push_back(one);
  }
  return items;
}

Status ValidateClientKey(std::string_view key) {
  WEFT_RETURN_IF_ERROR(ValidateKey(key));
  if (key.starts_with(kUploadsDirName) &&
      (key.size() == kUploadsDirName.size() || key[kUploadsDirName.size()] == '/')) {
    return InvalidArgument(Reason::kInvalidArgument,
                           "keys under " + std::string(kUploadsDirName) +
                               "/ are reserved for multipart uploads in progress");
  }
  return OkStatus();
}

namespace {

Result<auth::AccessKey> LookupKey(auth::IdentityStore& identities, const std::string& id) {
  auto key = identities.LookupKey(id);
  if (!key.ok() && key.status().code() == StatusCode::kNotFound) {
    return PermissionDenied(Reason::kInvalidAccessKeyId,
                            "The AWS Access Key Id you provided does not exist in our records.");
  }
  return key;
}

}  // namespace

Result<Identity> Authenticate(const S3Request& request, auth::IdentityStore& identities,
                              std::string_view region, int64_t now_seconds, bool allow_sigv2) {
  sigv4::Request signed_request;
  signed_request.method = request.method;
  signed_request.path = request.path;
  signed_request.query = request.query;
  for (const net::HttpHeader& h : request.http->headers) {
    signed_request.headers.push_back({h.name, h.value});
  }
  Identity identity;
  if (sigv2::Claims(signed_request)) {
    // Refused, it would look anonymous; say plainly what to change.
    if (!allow_sigv2) {
      return InvalidArgument(Reason::kInvalidRequest,
                             "this server accepts only Signature Version 4 (AWS4-HMAC-SHA256); "
                             "configure the client for s3v4 signatures");
    }
    WEFT_ASSIGN_OR_RETURN(sigv2::Claim claim, sigv2::ParseAuth(signed_request));
    WEFT_ASSIGN_OR_RETURN(auth::AccessKey key, LookupKey(identities, claim.access_key_id));
    std::optional<int64_t> request_time;
    if (auto date = request.Header("x-amz-date").value_or(request.Header("date").value_or(""));
        !date.empty()) {
      request_time = ParseHttpDate(date);
    }
    // SigV2 signs the path as sent; for a bucket alone clients sign "/bucket/" (botocore) or
    // "/bucket" (AWS's description): either names the same resource.
    Status verified = sigv2::Verify(claim, signed_request, request.http->path, key.secret_key,
                                    now_seconds, request_time);
    if (verified.reason() == Reason::kSignatureDoesNotMatch && !request.bucket.empty() &&
        request.key.empty()) {
      const std::string other =
          request.http->path.ends_with('/') ? "/" + request.bucket : "/" + request.bucket + "/";
      verified =
          sigv2::Verify(claim, signed_request, other, key.secret_key, now_seconds, request_time);
    }
    WEFT_RETURN_IF_ERROR(verified);
    identity.principal = key.user;
    identity.payload = PayloadMode::kUnsigned;  // SigV2 signs no body; Content-MD5 if sent
    return identity;
  }
  auto parsed = sigv4::ParseRequestAuth(signed_request);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kNotFound) {
      identity.principal = std::string(auth::kAnonymous);
      return identity;
    }
    return parsed.status();
  }
  const sigv4::ParsedAuth& claim = *parsed;
  if (claim.credential.service != sigv4::kService) {
    return InvalidArgument(Reason::kAuthorizationHeaderMalformed,
                           "the service must be 's3', not '" + claim.credential.service + "'");
  }
  if (claim.credential.region != region) {
    return InvalidArgument(Reason::kAuthorizationHeaderMalformed,
                           "the region '" + claim.credential.region + "' is wrong; expecting '" +
                               std::string(region) + "'");
  }
  auto key = LookupKey(identities, claim.credential.access_key_id);
  if (!key.ok()) return key.status();
  WEFT_RETURN_IF_ERROR(sigv4::VerifyRequest(claim, signed_request, key->secret_key, now_seconds));
  identity.principal = key->user;
  if (claim.mode == sigv4::AuthMode::kHeader) {
    std::string_view hash = request.Header("x-amz-content-sha256").value_or("");
    if (hash == sigv4::kStreamingPayload) {
      identity.payload = PayloadMode::kStreamingSigned;
      identity.chunk_chain.emplace(claim, key->secret_key);
    } else if (hash == sigv4::kStreamingUnsignedTrailer) {
      identity.payload = PayloadMode::kStreamingUnsignedTrailer;
    } else if (hash == sigv4::kUnsignedPayload) {
      identity.payload = PayloadMode::kUnsigned;
    } else if (hash.starts_with("STREAMING-")) {
      return Unimplemented(Reason::kNotImplemented,
                           "payload mode " + std::string(hash) + " is not supported");
    } else {
      identity.payload = PayloadMode::kSha256;
      identity.payload_sha256 = AsciiLower(hash);
    }
  }
  return identity;
}

// ---- PayloadReader -------------------------------------------------------------------------

PayloadReader::~PayloadReader() = default;

Result<std::unique_ptr<PayloadReader>> PayloadReader::Make(const S3Request& request,
                                                           Identity& identity,
                                                           net::BodyReader& body) {
  std::unique_ptr<PayloadReader> reader(new PayloadReader());
  reader->body_ = &body;
  if (auto md5 = request.Header("content-md5")) {
    auto raw = Base64Decode(*md5);
    if (!raw || raw->size() != 16) {
      return InvalidArgument(Reason::kInvalidDigest, "the Content-MD5 you specified is not valid");
    }
    reader->expected_md5_ = std::move(raw);
    reader->md5_ = std::make_unique<Md5Hasher>();
  }
  if (identity.payload == PayloadMode::kSha256) {
    reader->expected_sha256_ = identity.payload_sha256;
    reader->sha256_ = std::make_unique<Sha256Hasher>();
  }
  reader->declared_length_ = request.http->content_length;
  if (identity.payload == PayloadMode::kStreamingSigned ||
      identity.payload == PayloadMode::kStreamingUnsignedTrailer) {
    auto raw = [r = reader.get()](std::span<char> out) { return r->ReadRaw(out); };
    if (identity.payload == PayloadMode::kStreamingSigned) {
      reader->chunked_ = std::make_unique<AwsChunkedDecoder>(raw, &*identity.chunk_chain);
    } else {
      std::optional<TrailerChecksum> checksum;
      if (auto trailer = request.Header("x-amz-trailer")) {
        std::string name = AsciiLower(*trailer);
        checksum = TrailerChecksum::ForHeader(name);
        if (!checksum) {
          return Unimplemented(Reason::kNotImplemented,
                               "the trailer " + name + " is not supported");
        }
      }
      reader->chunked_ = std::make_unique<AwsChunkedDecoder>(raw, std::move(checksum));
    }
    auto decoded = request.Header("x-amz-decoded-content-length");
    if (!decoded) {
      return InvalidArgument(Reason::kMissingContentLength,
                             "x-amz-decoded-content-length is required with aws-chunked "
                             "payloads");
    }
    uint64_t n = 0;
    for (char c : *decoded) {
      if (!IsDigit(c) || n > (uint64_t{1} << 50)) {
        return InvalidArgument(Reason::kInvalidArgument, "bad x-amz-decoded-content-length");
      }
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    reader->declared_length_ = n;
  }
  return reader;
}

Result<size_t> PayloadReader::ReadRaw(std::span<char> out) {
  auto n = body_->Read(out);
  if (!n.ok()) return InvalidArgument(Reason::kIncompleteBody, n.status().message());
  return *n;
}

Result<size_t> PayloadReader::Read(std::span<char> out) {
  if (done_ || out.empty()) return size_t{0};
  size_t n = 0;
  if (chunked_) {
    WEFT_ASSIGN_OR_RETURN(n, chunked_->Read(out));
  } else {
    WEFT_ASSIGN_OR_RETURN(n, ReadRaw(out));
  }
  if (n == 0) {
    WEFT_RETURN_IF_ERROR(Finish());
    return size_t{0};
  }
  ByteSpan bytes(reinterpret_cast<const uint8_t*>(out.data()), n);
  if (md5_) md5_->Update(bytes);
  if (sha256_) sha256_->Update(bytes);
  delivered_ += n;
  if (declared_length_ && delivered_ > *declared_length_) {
    return InvalidArgument(Reason::kIncompleteBody, "the body is longer than its declared length");
  }
  return n;
}

Status PayloadReader::Finish() {
  done_ = true;
  if (declared_length_ && delivered_ != *declared_length_) {
    return InvalidArgument(Reason::kIncompleteBody,
                           "received " + std::to_string(delivered_) + " bytes of a " +
                               std::to_string(*declared_length_) + "-byte body");
  }
  if (md5_ && CRYPTO_memcmp(expected_md5_->data(), md5_->Finish().data(), 16) != 0) {
    return InvalidArgument(Reason::kBadDigest,
                           "the Content-MD5 you specified did not match what we received");
  }
  if (sha256_) {
    std::string actual = ToHex(sha256_->Finish());
    if (actual != *expected_sha256_) {
      return InvalidArgument(Reason::kXAmzContentSHA256Mismatch,
                             "the provided x-amz-content-sha256 does not match what "
                             "was computed");
    }
  }
  return OkStatus();
}

std::optional<std::string> PayloadReader::declared_md5_hex() const {
  if (!expected_md5_) return std::nullopt;
  return ToHex(AsBytes(*expected_md5_));
}

Result<std::string> PayloadReader::ReadAll(size_t limit) {
  std::string all;
  char buf[64 << 10];
  while (true) {
    WEFT_ASSIGN_OR_RETURN(size_t n, Read(std::span<char>(buf, sizeof buf)));
    if (n == 0) return all;
    if (all.size() + n > limit) {
      return InvalidArgument(Reason::kEntityTooLarge, "this request's body may be at most " +
                                                          std::to_string(limit) + " bytes");
    }
    all.append(buf, n);
  }
}

// ---- Dates -------------------------------------------------------------------------

std::string HttpDate(int64_t time_ns) {
  time_t t = static_cast<time_t>(time_ns / 1'000'000'000);
  struct tm tm_utc;
  gmtime_r(&t, &tm_utc);
  char buf[64];
  strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm_utc);
  return buf;
}

std::optional<int64_t> ParseHttpDate(std::string_view text) {
  std::string s(text);
  for (const char* format : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                             "%a %b %e %H:%M:%S %Y", "%Y-%m-%dT%H:%M:%SZ"}) {
    struct tm tm_utc {};
    const char* end = strptime(s.c_str(), format, &tm_utc);
    if (end != nullptr && *end == '\0') return static_cast<int64_t>(timegm(&tm_utc));
  }
  return std::nullopt;
}

}  // namespace weft::s3
