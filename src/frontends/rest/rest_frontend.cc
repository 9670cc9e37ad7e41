#include "frontends/rest/rest_frontend.h"

#include <array>
#include <charconv>
#include <ctime>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "auth/sigv4.h"
#include "base/ascii.h"
#include "base/clock.h"
#include "frontends/rest/json.h"
#include "vfs/path.h"
#include "vfs/residency.h"

namespace weft::rest {
namespace {

// Keeps fields in the order written, so replies read as docs/rest-api.md shows them.

constexpr size_t kMaxBodyBytes = 1 << 20;
// nlohmann's parser keeps its own stack, but a value nested this deep has no use here and
// costs a deep recursion wherever it is walked.
constexpr int kMaxJsonDepth = 32;
constexpr int64_t kDefaultTokenTtlSeconds = 3600;
constexpr int64_t kMaxTokenTtlSeconds = 7 * 24 * 3600;
constexpr uint32_t kDefaultListLimit = 1000;
constexpr uint32_t kMaxListLimit = 10000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;

// ---- Errors: the one mapping from Status to the API's JSON errors ------------------------------

struct ApiError {
  int http_status = 500;
  std::string code;
  std::string message;
};

struct ReasonCode {
  Reason reason;
  int http_status;
};

// Reasons the API answers as themselves, for distinctions the StatusCode does not carry: 401
// against 403, 405, 413, malformed JSON.
constexpr std::array kReasonCodes = {
    ReasonCode{Reason::kUnauthenticated, 401},  ReasonCode{Reason::kInvalidCredentials, 401},
    ReasonCode{Reason::kAccessDenied, 403},     ReasonCode{Reason::kNoSuchEndpoint, 404},
    ReasonCode{Reason::kMethodNotAllowed, 405}, ReasonCode{Reason::kPayloadTooLarge, 413},
    ReasonCode{Reason::kMalformedJSON, 400},
};

ApiError ErrorFromStatus(const Status& status) {
  const std::string& message = status.message();
  for (const ReasonCode& known : kReasonCodes) {
    if (status.reason() == known.reason) {
      return {known.http_status, std::string(ReasonName(known.reason)), message};
    }
  }
  auto error = [&](int http_status, std::string_view code) {
    return ApiError{http_status, std::string(code), std::string(message)};
  };
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return error(400, "InvalidArgument");
    case StatusCode::kOutOfRange:
      return error(400, "OutOfRange");
    case StatusCode::kPermissionDenied:
      return error(403, "AccessDenied");
    case StatusCode::kNotFound:
      return error(404, "NotFound");
    case StatusCode::kAlreadyExists:
      return error(409, "AlreadyExists");
    case StatusCode::kNotADirectory:
      return error(409, "NotADirectory");
    case StatusCode::kIsADirectory:
      return error(409, "IsADirectory");
    case StatusCode::kNotEmpty:
      return error(409, "NotEmpty");
    case StatusCode::kFailedPrecondition:
      return error(409, "FailedPrecondition");
    case StatusCode::kReadOnly:
      return error(409, "ReadOnly");
    case StatusCode::kAborted:
      return error(409, "Aborted");
    case StatusCode::kUnimplemented:
      return error(501, "NotImplemented");
    case StatusCode::kUnavailable:
      return error(503, "Unavailable");
    case StatusCode::kResourceExhausted:
      return error(507, "InsufficientStorage");
    case StatusCode::kOk:  // a bug: nothing failed
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      break;
  }
  return error(500, "InternalError");
}

// Names that are not valid UTF-8 (file names are arbitrary bytes) become U+FFFD instead of
// making dump() throw.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void SendJson(net::ResponseWriter& response, int http_status, const json* body) {
  std::vector<net::HttpHeader> headers = {{"Cache-Control", "no-store"}};
  if (body == nullptr) {
    (void)response.Start(http_status, headers, 0);
    (void)response.Finish();
    return;
  }
  headers.push_back({"Content-Type", "application/json"});
  (void)response.Send(http_status, headers, Dump(*body));
}

void SendError(net::ResponseWriter& response, const ApiError& error) {
  std::vector<net::HttpHeader> headers = {{"Content-Type", "application/json"},
                                          {"Cache-Control", "no-store"}};
  if (error.http_status == 401) headers.push_back({"WWW-Authenticate", "Bearer realm=\"weft\""});
  json body = {{"error", error.code}, {"message", error.message}};
  (void)response.Send(error.http_status, headers, Dump(body));
}

// ---- Parsing ----------------------------------------------------------------------------------

struct ApiRequest {
  std::string method;
  std::vector<std::string> segments;  // after kApiPrefix, each percent-decoded
  std::vector<sigv4::QueryParam> query;

  std::optional<std::string> Query(std::string_view name) const {
    for (const auto& p : query) {
      if (p.name == name) return p.value;
    }
    return std::nullopt;
  }
};

Result<ApiRequest> ParseApiRequest(const net::HttpRequest& http) {
  std::string_view path = http.path;
  if (!path.starts_with(kApiPrefix)) {
    return NotFound(Reason::kNoSuchEndpoint, "the API lives under " + std::string(kApiPrefix));
  }
  ApiRequest r;
  r.method = http.method;
  path.remove_prefix(kApiPrefix.size());
  // Split before decoding, so "%2F" inside a name never splits it.
  while (true) {
    size_t slash = path.find('/');
    std::string_view raw = path.substr(0, slash);
    if (raw.empty()) return NotFound(Reason::kNoSuchEndpoint, http.path.substr(0, 200));
    WEFT_ASSIGN_OR_RETURN(std::string segment, sigv4::UriDecode(raw, false));
    r.segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  WEFT_ASSIGN_OR_RETURN(r.query, sigv4::ParseQueryString(http.query));
  for (size_t i = 0; i < r.query.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (r.query[i].name == r.query[j].name) {
        return InvalidArgument("query parameter '" + r.query[i].name.substr(0, 40) +
                               "' is given twice");
      }
    }
  }
  return r;
}

// The body as a JSON object; no body is an empty object.
Result<json> ReadJsonBody(const net::HttpRequest& http, net::BodyReader& body) {
  const Status too_large =
      InvalidArgument(Reason::kPayloadTooLarge,
                      "request bodies are limited to " + std::to_string(kMaxBodyBytes) + " bytes");
  if (http.content_length && *http.content_length > kMaxBodyBytes) return too_large;
  std::string text;
  std::array<char, 64 << 10> buffer;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(size_t n, body.Read(buffer));
    if (n == 0) break;
    if (text.size() + n > kMaxBodyBytes) return too_large;
    text.append(buffer.data(), n);
  }
  if (text.empty()) return json::object();
  if (!JsonNestingWithin(text, kMaxJsonDepth)) {
    return InvalidArgument(Reason::kMalformedJSON,
                           "nested deeper than " + std::to_string(kMaxJsonDepth));
  }
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return InvalidArgument(Reason::kMalformedJSON, "the body is not valid JSON");
  if (!parsed.is_object())
    return InvalidArgument(Reason::kMalformedJSON, "the body must be a JSON object");
  return parsed;
}

// Field accessors that check types first, so no nlohmann exception can escape.
Status CheckFields(const json& body, std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, value] : body.items()) {
    bool known = false;
    for (std::string_view a : allowed) known |= name == a;
    if (!known) return InvalidArgument("unknown field '" + name.substr(0, 40) + "'");
  }
  return OkStatus();
}

Result<std::string> StringField(const json& body, const char* name,
                                std::optional<std::string> fallback = std::nullopt) {
  auto it = body.find(name);
  if (it == body.end()) {
    if (fallback) return *fallback;
    return InvalidArgument(std::string("field '") + name + "' is required");
  }
  if (!it->is_string())
    return InvalidArgument(std::string("field '") + name + "' must be a string");
  return it->get_ref<const std::string&>();
}

Result<std::vector<std::string>> StringListField(const json& body, const char* name,
                                                 bool required) {
  auto it = body.find(name);
  if (it == body.end()) {
    if (required) return InvalidArgument(std::string("field '") + name + "' is required");
    return std::vector<std::string>{};
  }
  std::vector<std::string> out;
  bool ok = it->is_array();
  if (ok) {
    for (const json& item : *it) {
      if (!item.is_string()) {
        ok = false;
        break;
      }
      out.push_back(item.get_ref<const std::string&>());
    }
  }
  if (!ok) return InvalidArgument(std::string("field '") + name + "' must be a list of strings");
  return out;
}

Result<int64_t> IntField(const json& body, const char* name, int64_t fallback, int64_t lo,
                         int64_t hi) {
  auto it = body.find(name);
  if (it == body.end()) return fallback;
  int64_t value = 0;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    value = u > static_cast<uint64_t>(hi) ? hi + 1 : static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    value = it->get<int64_t>();
  } else {
    value = lo - 1;
  }
  if (value < lo || value > hi) {
    return InvalidArgument(std::string("field '") + name + "' must be an integer from " +
                           std::to_string(lo) + " to " + std::to_string(hi));
  }
  return value;
}

// A namespace path from a query string or body, validated and normalised before anything
// authorises it. The snapshot path form "/.weft/snapshots/NAME/rest" resolves to "/rest" in
// snapshot NAME, so rules on "/rest" decide, as they do for ?snapshot=NAME.
struct NamespaceTarget {
  std::string path = "/";
  std::optional<std::string> snapshot;

  // The resource authorised for a directory operation: rules on "/a/" cover "/a".
  std::string DirectoryResource() const { return path == "/" ? path : path + "/"; }
};

Result<NamespaceTarget> ResolvePath(std::string_view raw, std::optional<std::string> snapshot) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(raw));
  if (snapshot) WEFT_RETURN_IF_ERROR(ValidateName(*snapshot).WithContext("snapshot name"));
  if (segments.size() >= 3 && segments[0] == ".weft" && segments[1] == "snapshots") {
    if (snapshot) return InvalidArgument("a /.weft/snapshots/ path already names a snapshot");
    snapshot = segments[2];
    segments.erase(segments.begin(), segments.begin() + 3);
  }
  return NamespaceTarget{JoinPath(segments), std::move(snapshot)};
}

Result<NamespaceTarget> TargetFromQuery(const ApiRequest& r, bool snapshot_allowed) {
  std::optional<std::string> path = r.Query("path");
  if (!path) return InvalidArgument("query parameter 'path' is required");
  std::optional<std::string> snapshot = r.Query("snapshot");
  if (snapshot && !snapshot_allowed) return InvalidArgument("this endpoint takes no snapshot");
  WEFT_ASSIGN_OR_RETURN(NamespaceTarget target, ResolvePath(*path, std::move(snapshot)));
  if (target.snapshot && !snapshot_allowed) {
    return InvalidArgument("this endpoint takes no snapshot path");
  }
  return target;
}

// An integer query parameter in [lo, hi], if given.
Result<std::optional<int64_t>> IntParam(const ApiRequest& r, const char* name, int64_t lo,
                                        int64_t hi) {
  std::optional<std::string> text = r.Query(name);
  if (!text) return std::optional<int64_t>();
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size() || n < lo || n > hi) {
    return InvalidArgument(std::string(name) + " must be an integer from " + std::to_string(lo) +
                           " to " + std::to_string(hi));
  }
  return std::optional<int64_t>(n);
}

// The `limit` query parameter of a listing (1..kMaxListLimit), or the default.
Result<uint32_t> ParseLimit(const ApiRequest& r) {
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> limit, IntParam(r, "limit", 1, kMaxListLimit));
  return static_cast<uint32_t>(limit.value_or(kDefaultListLimit));
}

// ---- Routing ----------------------------------------------------------------------------------

struct Call;
struct Reply {
  int http_status = 200;
  std::optional<json> body;  // none: 204 No Content
};
using Handler = Result<Reply> (*)(Call&);

enum class Access {
  kPublic,      // no token: only POST tokens, which checks a key itself
  kAnyUser,     // any valid token
  kPermission,  // AuthorizedVolume::Check(needed, resource), unless the caller is `owner`
};

// What a request needs, decided before any handler runs.
struct Route {
  Handler run = nullptr;
  Access access = Access::kPermission;
  uint8_t needed = auth::kAdmin;
  std::string resource = "/";
  std::string owner;  // this user may call it without `needed`: its own keys
  std::string name;   // the user, key id, rule id or snapshot the URL names
  NamespaceTarget target;
  std::vector<std::string_view> query;  // the query parameters it takes
};

struct Call {
  Volume& volume;
  auth::IdentityStore& identities;
  Clock* clock;
  const RestFrontend::SpokesProvider& spokes;
  const RestFrontend::CacheControl& cache;
  access::AuditLog* audit;
  const ApiRequest& request;
  const json& body;
  const Route& route;
  RequestContext ctx;
};

Result<Reply> Ok(json body, int http_status = 200) {
  return Reply{http_status, std::move(body)};
}
Result<Reply> NoContent(const Status& status) {
  if (!status.ok()) return status;
  return Reply{204, std::nullopt};
}

// ---- Handlers: each trusts its Route (already authorised) and validates its own body ----------

Result<Reply> IssueToken(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"access_key_id", "secret_access_key", "ttl_seconds"}));
  WEFT_ASSIGN_OR_RETURN(std::string id, StringField(c.body, "access_key_id"));
  WEFT_ASSIGN_OR_RETURN(std::string secret, StringField(c.body, "secret_access_key"));
  WEFT_ASSIGN_OR_RETURN(int64_t ttl, IntField(c.body, "ttl_seconds", kDefaultTokenTtlSeconds, 1,
                                              kMaxTokenTtlSeconds));
  WEFT_ASSIGN_OR_RETURN(auth::BearerToken token,
                        auth::IssueTokenForKey(c.identities, id, secret, ttl * kNanosPerSecond));
  return Ok({{"token", token.token},
             {"user", token.user},
             {"expires", FormatIso8601(token.expires_ns)},
             {"expires_in", (token.expires_ns - c.clock->NowNanos()) / kNanosPerSecond}});
}

Result<Reply> WhoAmI(Call& c) {
  WEFT_ASSIGN_OR_RETURN(auth::User user, c.identities.GetUser(c.ctx.principal));
  return Ok({{"user", user.name}, {"groups", user.groups}});
}

Result<Reply> ListUsers(Call& c) {
  WEFT_ASSIGN_OR_RETURN(std::vector<auth::User> users, c.identities.ListUsers());
  json list = json::array();
  for (const auth::User& user : users) list.push_back(UserJson(user));
  return Ok({{"users", std::move(list)}});
}

Result<Reply> CreateUser(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"name", "groups"}));
  WEFT_ASSIGN_OR_RETURN(std::string name, StringField(c.body, "name"));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> groups, StringListField(c.body, "groups", false));
  WEFT_ASSIGN_OR_RETURN(auth::User user, c.identities.CreateUser(name, std::move(groups)));
  return Ok(UserJson(user), 201);
}

Result<Reply> GetUser(Call& c) {
  WEFT_ASSIGN_OR_RETURN(auth::User user, c.identities.GetUser(c.route.name));
  return Ok(UserJson(user));
}

Result<Reply> SetGroups(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"groups"}));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> groups, StringListField(c.body, "groups", true));
  WEFT_ASSIGN_OR_RETURN(auth::User user, c.identities.SetGroups(c.route.name, std::move(groups)));
  return Ok(UserJson(user));
}

Result<Reply> DeleteUser(Call& c) {
  return NoContent(c.identities.DeleteUser(c.route.name));
}

Result<Reply> CreateKey(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {}));
  WEFT_ASSIGN_OR_RETURN(auth::AccessKey key, c.identities.CreateKey(c.route.name));
  json out = KeyJson(key);
  out["secret_access_key"] = key.secret_key;
  return Ok(std::move(out), 201);
}

// A day: long enough to roll a new key out to every job that holds the old one.
constexpr int64_t kDefaultRotationOverlapSeconds = 86400;

Result<Reply> RotateKey(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"overlap_seconds"}));
  WEFT_ASSIGN_OR_RETURN(
      int64_t overlap,
      IntField(c.body, "overlap_seconds", kDefaultRotationOverlapSeconds, 0, int64_t{366} * 86400));
  WEFT_ASSIGN_OR_RETURN(auth::AccessKey key,
                        c.identities.RotateKey(c.route.name, overlap * 1'000'000'000));
  json out = KeyJson(key);
  out["secret_access_key"] = key.secret_key;
  return Ok(std::move(out), 201);
}

Result<Reply> ListKeys(Call& c) {
  WEFT_ASSIGN_OR_RETURN(std::vector<auth::AccessKey> keys, c.identities.ListKeys(c.route.name));
  json list = json::array();
  for (const auth::AccessKey& key : keys) list.push_back(KeyJson(key));
  return Ok({{"keys", std::move(list)}});
}

Result<Reply> DeleteKey(Call& c) {
  return NoContent(c.identities.DeleteKey(c.route.name));
}

Result<Reply> ListRules(Call& c) {
  WEFT_ASSIGN_OR_RETURN(std::vector<auth::Rule> rules, c.identities.ListRules());
  json list = json::array();
  for (const auth::Rule& rule : rules) list.push_back(RuleJson(rule));
  return Ok({{"rules", std::move(list)}});
}

Result<Reply> AddRule(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"subject", "prefix", "permissions"}));
  auth::Rule rule;
  WEFT_ASSIGN_OR_RETURN(rule.subject, StringField(c.body, "subject"));
  WEFT_ASSIGN_OR_RETURN(rule.prefix, StringField(c.body, "prefix"));
  WEFT_ASSIGN_OR_RETURN(std::string permissions, StringField(c.body, "permissions"));
  WEFT_ASSIGN_OR_RETURN(rule.permissions, auth::ParsePermissions(permissions));
  WEFT_ASSIGN_OR_RETURN(auth::Rule added, c.identities.AddRule(std::move(rule)));
  return Ok(RuleJson(added), 201);
}

Result<Reply> DeleteRule(Call& c) {
  return NoContent(c.identities.DeleteRule(c.route.name));
}

Result<Reply> StatPath(Call& c) {
  ReadOptions opts;
  opts.snapshot = c.route.target.snapshot;
  WEFT_ASSIGN_OR_RETURN(FileInfo info, c.volume.Stat(c.ctx, c.route.target.path, opts));
  return Ok(FileInfoJson(info));
}

Result<Reply> GetResidency(Call& c) {
  WEFT_ASSIGN_OR_RETURN(FileInfo info, c.volume.Stat(c.ctx, c.route.target.path));
  if (info.type != FileType::kDirectory) {
    return NotADirectory(c.route.target.path + ": residency applies to directories");
  }
  auto it = info.attributes.find(kResidencyAttribute);
  std::vector<std::string> tags;
  if (it != info.attributes.end()) tags = SplitSiteTags(it->second);
  return Ok({{"path", c.route.target.path}, {"tags", tags}});
}

// Restricts a directory to sites with one of `tags`; an empty list lifts the restriction.
Result<Reply> SetResidency(Call& c) {
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"tags"}));
  if (!c.body.contains("tags") || !c.body["tags"].is_array()) {
    return InvalidArgument(Reason::kInvalidRequest, "'tags' must be an array of strings");
  }
  std::string joined;
  for (const json& tag : c.body["tags"]) {
    if (!tag.is_string()) return InvalidArgument(Reason::kInvalidRequest, "'tags' must be strings");
    WEFT_RETURN_IF_ERROR(ValidateSiteTag(tag.get<std::string>()));
    joined += (joined.empty() ? "" : ",") + tag.get<std::string>();
  }
  WEFT_ASSIGN_OR_RETURN(FileInfo info, c.volume.Stat(c.ctx, c.route.target.path));
  if (info.type != FileType::kDirectory) {
    return NotADirectory(c.route.target.path + ": residency applies to directories");
  }
  SetAttrRequest req;
  req.attributes = info.attributes;
  if (joined.empty()) {
    req.attributes->erase(kResidencyAttribute);
  } else {
    (*req.attributes)[kResidencyAttribute] = joined;
  }
  WEFT_RETURN_IF_ERROR(c.volume.SetAttr(c.ctx, c.route.target.path, req).status());
  return Ok({{"path", c.route.target.path}, {"tags", SplitSiteTags(joined)}});
}

Result<Reply> ListDirectory(Call& c) {
  ReadDirOptions opts;
  opts.snapshot = c.route.target.snapshot;
  opts.start_after = c.request.Query("start_after").value_or("");
  WEFT_ASSIGN_OR_RETURN(opts.limit, ParseLimit(c.request));
  opts.with_info = true;
  WEFT_ASSIGN_OR_RETURN(ReadDirPage page, c.volume.ReadDir(c.ctx, c.route.target.path, opts));
  json entries = json::array();
  for (const DirEntry& entry : page.entries) {
    json e = {{"name", entry.name}, {"type", FileTypeName(entry.type)}};
    if (entry.info) {
      e["size"] = entry.info->size;
      e["mtime"] = FormatIso8601(entry.info->mtime_ns);
      e["mtime_ns"] = entry.info->mtime_ns;
      if (entry.type == FileType::kFile) e["etag"] = entry.info->etag;
    }
    entries.push_back(std::move(e));
  }
  json out = {{"path", c.route.target.path},
              {"entries", std::move(entries)},
              {"truncated", page.truncated}};
  if (c.route.target.snapshot) out["snapshot"] = *c.route.target.snapshot;
  if (page.truncated && !page.entries.empty()) out["next_start_after"] = page.entries.back().name;
  // A --stale-ok spoke that lost its hub answered from an expired listing (docs/fabric.md).
  if (page.stale) out["stale"] = true;
  return Ok(std::move(out));
}

Result<Reply> ListVersions(Call& c) {
  WEFT_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions,
                        c.volume.ListVersions(c.ctx, c.route.target.path));
  json list = json::array();
  for (const VersionInfo& v : versions) {
    list.push_back({{"version_id", v.version_id},
                    {"size", v.size},
                    {"etag", v.etag},
                    {"mtime", FormatIso8601(v.mtime_ns)},
                    {"mtime_ns", v.mtime_ns},
                    {"sequence", v.sequence},
                    {"is_current", v.is_current},
                    {"is_delete_marker", v.is_delete_marker}});
  }
  return Ok({{"path", c.route.target.path}, {"versions", std::move(list)}});
}

Result<Reply> ListSnapshots(Call& c) {
  WEFT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> snapshots, c.volume.ListSnapshots(c.ctx));
  json list = json::array();
  for (const SnapshotInfo& snap : snapshots) list.push_back(SnapshotJson(snap));
  return Ok({{"snapshots", std::move(list)}});
}

Result<Reply> CreateSnapshot(Call& c) {
  // "path" was read and authorised by the route.
  WEFT_RETURN_IF_ERROR(CheckFields(c.body, {"name", "path"}));
  WEFT_ASSIGN_OR_RETURN(std::string name, StringField(c.body, "name"));
  WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap,
                        c.volume.CreateSnapshot(c.ctx, name, c.route.target.path));
  return Ok(SnapshotJson(snap), 201);
}

Result<Reply> DeleteSnapshot(Call& c) {
  return NoContent(c.volume.DeleteSnapshot(c.ctx, c.route.name));
}

Result<Reply> ListSpokes(Call& c) {
  if (!c.spokes) return NotFound(Reason::kNoSuchEndpoint, "this server keeps no spoke registry");
  return Ok({{"spokes", c.spokes()}});
}

Result<Reply> SearchAudit(Call& c) {
  if (c.audit == nullptr) {
    return NotFound(Reason::kNoSuchEndpoint, "this server keeps no audit log (--audit-log off)");
  }
  const ApiRequest& r = c.request;
  access::AuditQuery q;
  q.principal = r.Query("principal");
  q.operation = r.Query("operation");
  q.protocol = r.Query("protocol");
  q.path_prefix = r.Query("path_prefix");
  WEFT_ASSIGN_OR_RETURN(q.since_ns, IntParam(r, "since_ns", 0, INT64_MAX));
  WEFT_ASSIGN_OR_RETURN(q.until_ns, IntParam(r, "until_ns", 0, INT64_MAX));
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> after, IntParam(r, "after", 0, INT64_MAX));
  q.after_seq = static_cast<uint64_t>(after.value_or(0));
  if (auto denied = r.Query("denied")) {
    if (*denied != "true" && *denied != "false") {
      return InvalidArgument("denied must be true or false");
    }
    q.denied = *denied == "true";
  }
  WEFT_ASSIGN_OR_RETURN(uint32_t limit, ParseLimit(r));
  q.limit = limit;
  WEFT_ASSIGN_OR_RETURN(std::vector<access::AuditRecord> found, c.audit->Query(q));
  json records = json::array();
  for (const access::AuditRecord& record : found) {
    records.push_back(json::parse(access::FormatAuditRecord(record)));
  }
  json out = {{"records", std::move(records)}};
  // Another page may follow a full one: ask again with after=<the last seq>.
  if (found.size() == limit) out["next_after"] = found.back().seq;
  return Ok(std::move(out));
}

Result<Reply> CacheStats(Call& c) {
  if (!c.cache.stats)
    return NotFound(Reason::kNoSuchEndpoint, "this server runs no NeuralCache (a spoke does)");
  return Ok(c.cache.stats());
}

Result<Reply> CacheHints(Call& c) {
  if (!c.cache.hint)
    return NotFound(Reason::kNoSuchEndpoint, "this server runs no NeuralCache (a spoke does)");
  WEFT_ASSIGN_OR_RETURN(json result, c.cache.hint(c.ctx, c.route.target.path, c.body));
  return Ok(std::move(result));
}

Result<Reply> Usage(Call& c) {
  WEFT_ASSIGN_OR_RETURN(UsageInfo u, c.volume.Usage(c.ctx));
  json out = {{"files", u.files},
              {"directories", u.directories},
              {"logical_bytes", u.logical_bytes},
              {"referenced_bytes", u.referenced_bytes},
              {"unique_bytes", u.unique_bytes},
              {"stored_bytes", u.stored_bytes},
              {"pack_bytes", u.pack_bytes},
              {"metadata_bytes", u.metadata_bytes}};
  // Undefined while nothing is stored; null rather than a made-up number.
  out["dedup_ratio"] =
      u.stored_bytes == 0
          ? json(nullptr)
          : json(static_cast<double>(u.logical_bytes) / static_cast<double>(u.stored_bytes));
  return Ok(std::move(out));
}

// ---- The route table --------------------------------------------------------------------------

struct MethodHandler {
  std::string_view method;
  Handler run;
};

Status PickMethod(const std::string& method, std::initializer_list<MethodHandler> options,
                  Route* route) {
  std::string allowed;
  for (const MethodHandler& option : options) {
    if (option.method == method) {
      route->run = option.run;
      return OkStatus();
    }
    if (!allowed.empty()) allowed += ", ";
    allowed += option.method;
  }
  return Status(StatusCode::kUnimplemented, Reason::kMethodNotAllowed,
                "use " + allowed + " on this endpoint, not " + method.substr(0, 20));
}

bool Is(const std::vector<std::string>& segments, std::initializer_list<std::string_view> shape) {
  if (segments.size() != shape.size()) return false;
  size_t i = 0;
  for (std::string_view want : shape) {
    if (want != "*" && segments[i] != want) return false;
    ++i;
  }
  return true;
}

// Only this path is served without a token; the dispatcher checks it before authenticating.
bool IsPublicPath(const ApiRequest& r) {
  return Is(r.segments, {"tokens"});
}

// Decides handler, permission and resource. Anything not listed is NoSuchEndpoint.
Result<Route> RouteRequest(const ApiRequest& r, const json& body, Volume& volume,
                           auth::IdentityStore& identities, const RequestContext& ctx) {
  const std::vector<std::string>& s = r.segments;
  const std::string& m = r.method;
  Route route;
  if (Is(s, {"tokens"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"POST", &IssueToken}}, &route));
    route.access = Access::kPublic;
  } else if (Is(s, {"whoami"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &WhoAmI}}, &route));
    route.access = Access::kAnyUser;
  } else if (Is(s, {"users"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &ListUsers}, {"POST", &CreateUser}}, &route));
  } else if (Is(s, {"users", "*"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &GetUser}, {"DELETE", &DeleteUser}}, &route));
    route.name = s[1];
  } else if (Is(s, {"users", "*", "groups"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"PUT", &SetGroups}}, &route));
    route.name = s[1];
  } else if (Is(s, {"users", "*", "keys"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &ListKeys}, {"POST", &CreateKey}}, &route));
    route.name = s[1];
    route.owner = s[1];
  } else if (Is(s, {"users", "*", "keys", "rotate"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"POST", &RotateKey}}, &route));
    route.name = s[1];
    route.owner = s[1];
  } else if (Is(s, {"keys", "*"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"DELETE", &DeleteKey}}, &route));
    route.name = s[1];
    // An unknown or unreadable key needs admin, so only admins learn that it is missing.
    Result<auth::AccessKey> key = identities.LookupKey(s[1]);
    if (key.ok()) route.owner = key->user;
  } else if (Is(s, {"rules"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &ListRules}, {"POST", &AddRule}}, &route));
  } else if (Is(s, {"rules", "*"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"DELETE", &DeleteRule}}, &route));
    route.name = s[1];
  } else if (Is(s, {"namespace", "stat"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &StatPath}}, &route));
    WEFT_ASSIGN_OR_RETURN(route.target, TargetFromQuery(r, true));
    route.needed = auth::kRead;
    route.resource = route.target.path;
    route.query = {"path", "snapshot"};
  } else if (Is(s, {"namespace", "list"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &ListDirectory}}, &route));
    WEFT_ASSIGN_OR_RETURN(route.target, TargetFromQuery(r, true));
    route.needed = auth::kList;
    route.resource = route.target.DirectoryResource();
    route.query = {"path", "snapshot", "start_after", "limit"};
  } else if (Is(s, {"namespace", "residency"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &GetResidency}, {"PUT", &SetResidency}}, &route));
    WEFT_ASSIGN_OR_RETURN(route.target, TargetFromQuery(r, false));
    route.needed = m == "GET" ? auth::kRead : auth::kAdmin;
    route.resource = route.target.DirectoryResource();
    route.query = {"path"};
  } else if (Is(s, {"namespace", "versions"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &ListVersions}}, &route));
    WEFT_ASSIGN_OR_RETURN(route.target, TargetFromQuery(r, false));
    route.needed = auth::kRead;
    route.resource = route.target.path;
    route.query = {"path"};
  } else if (Is(s, {"snapshots"})) {
    WEFT_RETURN_IF_ERROR(
        PickMethod(m, {{"GET", &ListSnapshots}, {"POST", &CreateSnapshot}}, &route));
    if (m == "GET") {
      route.needed = auth::kList;
    } else {
      WEFT_ASSIGN_OR_RETURN(std::string path, StringField(body, "path", "/"));
      WEFT_ASSIGN_OR_RETURN(route.target, ResolvePath(path, std::nullopt));
      if (route.target.snapshot) return InvalidArgument("a snapshot cannot cover a snapshot");
      route.resource = route.target.DirectoryResource();
    }
  } else if (Is(s, {"snapshots", "*"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"DELETE", &DeleteSnapshot}}, &route));
    route.name = s[1];
    // Admin on the subtree it covers; an unknown name needs admin on "/" (it then 404s).
    WEFT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> snapshots, volume.ListSnapshots(ctx));
    for (const SnapshotInfo& snap : snapshots) {
      if (snap.name == route.name) {
        route.resource = NamespaceTarget{snap.path, std::nullopt}.DirectoryResource();
      }
    }
  } else if (Is(s, {"audit"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &SearchAudit}}, &route));
    route.query = {"principal", "operation", "protocol", "path_prefix", "since_ns",
                   "until_ns",  "denied",    "after",    "limit"};
  } else if (Is(s, {"usage"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &Usage}}, &route));
  } else if (Is(s, {"spokes"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &ListSpokes}}, &route));
  } else if (Is(s, {"cache"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"GET", &CacheStats}}, &route));
    route.access = Access::kAnyUser;
  } else if (Is(s, {"cache", "hints"})) {
    WEFT_RETURN_IF_ERROR(PickMethod(m, {{"POST", &CacheHints}}, &route));
    // Declaring what one will read needs read access to it; the spoke fetches nothing else.
    WEFT_ASSIGN_OR_RETURN(std::string dataset, StringField(body, "dataset"));
    WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(dataset));
    route.target.path = JoinPath(segments);
    route.needed = auth::kRead;
    route.resource = route.target.DirectoryResource();
  } else {
    return NotFound(Reason::kNoSuchEndpoint, "no endpoint " + std::string(kApiPrefix) +
                                                 (s.empty() ? "" : s[0].substr(0, 40)) + "...");
  }
  for (const sigv4::QueryParam& p : r.query) {
    bool known = false;
    for (std::string_view q : route.query) known |= p.name == q;
    if (!known) {
      return InvalidArgument("unknown query parameter '" + p.name.substr(0, 40) + "'");
    }
  }
  return route;
}

// "Bearer <token>" -> the user it names.
Result<std::string> Authenticate(const net::HttpRequest& http, auth::IdentityStore& identities) {
  return auth::AuthenticateBearer(http.Header("Authorization"), identities,
                                  "get a token with POST " + std::string(kApiPrefix) + "tokens");
}

Status CheckAccess(const Route& route, bool public_path, const RequestContext& ctx,
                   access::AuthorizedVolume& volume) {
  switch (route.access) {
    case Access::kPublic:
      // Routes and the public path must agree, or a handler could run without a token.
      return public_path ? OkStatus() : Internal("a public route on a non-public path");
    case Access::kAnyUser:
      return public_path ? Internal("a user route on the public path") : OkStatus();
    case Access::kPermission:
      if (public_path) return Internal("a protected route on the public path");
      if (!route.owner.empty() && route.owner == ctx.principal) return OkStatus();
      return volume.Check(ctx, route.needed, route.resource);
  }
  return Internal("unknown access kind");
}

}  // namespace

RestFrontend::RestFrontend(access::AuthorizedVolume& volume, Clock* clock)
    : volume_(volume), clock_(clock) {}

void RestFrontend::HandleProtocolError(int status, std::string_view code, std::string_view message,
                                       net::ResponseWriter& response) {
  SendError(response, ApiError{status, std::string(code), std::string(message)});
}

void RestFrontend::Handle(const net::HttpRequest& http, net::BodyReader& body,
                          net::ResponseWriter& response) {
  auto fail = [&](const Status& status) { SendError(response, ErrorFromStatus(status)); };
  // nlohmann::json throws on misuse; the accessors above check types first, so a throw here is
  // a bug, answered 500 rather than escaping into the server.
  try {
    // 1. Parse and validate the URL.
    Result<ApiRequest> parsed = ParseApiRequest(http);
    if (!parsed.ok()) return fail(parsed.status());
    const ApiRequest& request = *parsed;
    // 2. Authenticate: every endpoint but the token endpoint needs a valid token.
    const bool public_path = IsPublicPath(request);
    RequestContext ctx;
    ctx.protocol = "rest";
    ctx.principal.clear();
    if (!public_path) {
      Result<std::string> user = Authenticate(http, volume_.identities());
      if (!user.ok()) return fail(user.status());
      ctx.principal = std::move(user).value();
      response.Describe({ctx.principal, http.method, "local", ""});
    }
    // 3. The body (bounded), then the route and its authorisation.
    json request_body = json::object();
    if (http.method == "POST" || http.method == "PUT") {
      Result<json> read = ReadJsonBody(http, body);
      if (!read.ok()) return fail(read.status());
      request_body = std::move(read).value();
    }
    Result<Route> route = RouteRequest(request, request_body, volume_, volume_.identities(), ctx);
    if (!route.ok()) return fail(route.status());
    Status allowed = CheckAccess(*route, public_path, ctx, volume_);
    if (!allowed.ok()) return fail(allowed);
    // 4. The handler.
    Call call{volume_, volume_.identities(), clock_, spokes_, cache_, audit_,
              request, request_body,         *route, ctx};
    Result<Reply> reply = route->run(call);
    if (!reply.ok()) return fail(reply.status());
    SendJson(response, reply->http_status, reply->body ? &*reply->body : nullptr);
  } catch (const json::exception& e) {
    if (!response.started()) fail(Internal(std::string("JSON: ") + e.what()));
  }
}

}  // namespace weft::rest
