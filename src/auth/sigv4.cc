#include "auth/sigv4.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/ascii.h"
#include "base/bytes.h"
#include "base/hash.h"

namespace weft::sigv4 {
namespace {

constexpr std::string_view kTerminator = "aws4_request";
constexpr size_t kMaxAccessKeyIdBytes = 128;
constexpr size_t kMaxRegionBytes = 64;
constexpr char kHexUpper[] = "0123456789ABCDEF";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsLowerHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f');
}

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), IsLowerHex);
}

// A lower-case HTTP header name as it may appear in SignedHeaders.
bool IsSignedHeaderName(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || IsDigit(c) || c == '-' || c == '_' || c == '.';
  });
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Trims a header value and collapses inner runs of blanks to one space. Control characters
// (CR, LF, NUL, ...) would let one request's canonical form imitate another's: refused.
Result<std::string> CanonicalHeaderValue(std::string_view value) {
  std::string out;
  bool blank = false;
  for (char c : TrimSpaces(value)) {
    if (c == ' ' || c == '\t') {
      blank = true;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return InvalidArgument(Reason::kInvalidRequest, "header value contains a control character");
    }
    if (blank) out.push_back(' ');
    blank = false;
    out.push_back(c);
  }
  return out;
}

bool ValidPayloadHash(std::string_view h) {
  return h == kUnsignedPayload || h == kStreamingPayload || h == kStreamingUnsignedTrailer ||
         IsLowerHex64(h);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

Status Malformed(std::string_view what) {
  return InvalidArgument(Reason::kAuthorizationHeaderMalformed, std::string(what));
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool IsLeap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

// Parses "YYYYMMDD" into days since the epoch.
Result<int64_t> ParseDate8(std::string_view s) {
  if (s.size() != 8 || !std::all_of(s.begin(), s.end(), IsDigit)) {
    return InvalidArgument("date '" + std::string(s.substr(0, 32)) + "' is not YYYYMMDD");
  }
  auto num = [&](size_t pos, size_t n) {
    int64_t v = 0;
    for (size_t i = pos; i < pos + n; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  const int64_t y = num(0, 4), m = num(4, 2), d = num(6, 2);
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1 || d > kDays[m - 1] + (m == 2 && IsLeap(y) ? 1 : 0)) {
    return InvalidArgument("date '" + std::string(s) + "' is not a calendar date");
  }
  return DaysFromCivil(y, m, d);
}

Result<std::vector<std::string>> ParseSignedHeaders(std::string_view list) {
  if (list.empty()) return Malformed("SignedHeaders is empty");
  std::vector<std::string_view> names = Split(list, ';');
  if (names.size() > kMaxSignedHeaders) return Malformed("SignedHeaders lists too many headers");
  std::vector<std::string> out;
  bool has_host = false;
  for (std::string_view name : names) {
    if (!IsSignedHeaderName(name)) {
      return Malformed("SignedHeaders entry '" + std::string(name.substr(0, 64)) +
                       "' is not a lower-case header name");
    }
    if (!out.empty() && !(out.back() < name)) {
      return Malformed("SignedHeaders is not strictly sorted");
    }
    has_host = has_host || name == "host";
    out.emplace_back(name);
  }
  if (!has_host) return Malformed("SignedHeaders does not include host");
  return out;
}

Result<Credential> ParseCredential(std::string_view value) {
  std::vector<std::string_view> parts = Split(value, '/');
  if (parts.size() != 5) {
    return Malformed("Credential must be AKID/YYYYMMDD/region/s3/aws4_request");
  }
  Credential c;
  if (parts[0].empty() || parts[0].size() > kMaxAccessKeyIdBytes ||
      !std::all_of(parts[0].begin(), parts[0].end(), [](char ch) { return IsUnreserved(ch); })) {
    return Malformed("Credential has an invalid access key id");
  }
  Result<int64_t> day = ParseDate8(parts[1]);
  if (!day.ok()) return Malformed("Credential scope " + day.status().message());
  if (parts[2].empty() || parts[2].size() > kMaxRegionBytes ||
      !std::all_of(parts[2].begin(), parts[2].end(),
                   [](char ch) { return (ch >= 'a' && ch <= 'z') || IsDigit(ch) || ch == '-'; })) {
    return Malformed("Credential has an invalid region");
  }
  if (parts[3] != kService) return Malformed("Credential scope service must be s3");
  if (parts[4] != kTerminator) return Malformed("Credential scope must end with aws4_request");
  c.access_key_id = std::string(parts[0]);
  c.date = std::string(parts[1]);
  c.region = std::string(parts[2]);
  c.service = std::string(parts[3]);
  return c;
}

// Fills the date fields of `auth` and checks the scope date against the request date.
Status SetDate(ParsedAuth* auth, std::string_view amz_date) {
  Result<int64_t> t = ParseAmzDate(amz_date);
  if (!t.ok()) return Malformed(t.status().message());
  if (amz_date.substr(0, 8) != auth->credential.date) {
    return Malformed("Credential scope date " + auth->credential.date +
                     " does not match the request date " + std::string(amz_date));
  }
  auth->amz_date = std::string(amz_date);
  auth->request_time = *t;
  return OkStatus();
}

Status ParseSignature(std::string_view value, std::string* out) {
  if (!IsLowerHex64(value)) return Malformed("Signature must be 64 lower-case hex digits");
  *out = std::string(value);
  return OkStatus();
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// Values of every header named `lower_name` (case-insensitively), joined with ','.
std::optional<std::string_view> FindHeader(const Request& request, std::string_view lower_name) {
  for (const Header& h : request.headers) {
    if (h.name.size() == lower_name.size() && EqualsIgnoreCase(h.name, lower_name)) return h.value;
  }
  return std::nullopt;
}

std::string Encode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size() * 3);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHexUpper[c >> 4]);
      out.push_back(kHexUpper[c & 0xf]);
    }
  }
  return out;
}

}  // namespace

// ---- Encoding and hashing ----------------------------------------------------------------

std::string UriEncode(std::string_view s) {
  return Encode(s, false);
}
std::string UriEncodePath(std::string_view path) {
  return Encode(path, true);
}

Result<std::string> UriDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (s.size() - i < 3) return InvalidArgument(Reason::kInvalidRequest, "truncated %-escape");
      const int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return InvalidArgument(Reason::kInvalidRequest, "%-escape is not hex");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  return weft::Sha256Hex(AsBytes(data));
}

// ---- Requests ----------------------------------------------------------------------------

Result<std::vector<QueryParam>> ParseQueryString(std::string_view raw) {
  std::vector<QueryParam> out;
  if (raw.empty()) return out;
  for (std::string_view pair : Split(raw, '&')) {
    if (pair.empty()) continue;  // "a=1&&b=2"
    const size_t eq = pair.find('=');
    WEFT_ASSIGN_OR_RETURN(std::string name, UriDecode(pair.substr(0, eq), true));
    std::string value;
    if (eq != std::string_view::npos) {
      WEFT_ASSIGN_OR_RETURN(value, UriDecode(pair.substr(eq + 1), true));
    }
    out.push_back({std::move(name), std::move(value)});
  }
  return out;
}

std::string CanonicalQueryString(std::span<const QueryParam> query, std::string_view exclude) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const QueryParam& p : query) {
    if (!exclude.empty() && p.name == exclude) continue;
    encoded.emplace_back(UriEncode(p.name), UriEncode(p.value));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

Result<std::string> CanonicalRequest(const Request& request,
                                     std::span<const std::string> signed_headers,
                                     std::string_view payload_hash,
                                     std::string_view exclude_query) {
  if (request.method.empty() || request.method.size() > 32 ||
      !std::all_of(request.method.begin(), request.method.end(),
                   [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return InvalidArgument(Reason::kInvalidRequest, "method is not an upper-case token");
  }
  if (request.path.empty() || request.path.front() != '/') {
    return InvalidArgument(Reason::kInvalidRequest, "path does not start with '/'");
  }
  if (!ValidPayloadHash(payload_hash)) {
    return InvalidArgument(Reason::kInvalidRequest,
                           "payload hash is not 64 lower-case hex, UNSIGNED-PAYLOAD or "
                           "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
  }
  if (signed_headers.empty()) return InvalidArgument(Reason::kInvalidRequest, "no signed headers");

  // Lower-case each received name once; a request has few headers, so a scan per signed name
  // costs less than building a map.
  std::vector<std::string> lower_names;
  lower_names.reserve(request.headers.size());
  for (const Header& h : request.headers) lower_names.push_back(AsciiLower(h.name));

  std::string out = request.method;
  out.push_back('\n');
  out += UriEncodePath(request.path);
  out.push_back('\n');
  out += CanonicalQueryString(request.query, exclude_query);
  out.push_back('\n');
  std::string signed_list;
  for (const std::string& name : signed_headers) {
    if (!IsSignedHeaderName(name)) {
      return InvalidArgument(Reason::kInvalidRequest,
                             "signed header name '" + name.substr(0, 64) + "' is not lower-case");
    }
    out += name;
    out.push_back(':');
    bool found = false;
    for (size_t i = 0; i < request.headers.size(); ++i) {
      if (lower_names[i] != name) continue;
      WEFT_ASSIGN_OR_RETURN(std::string value, CanonicalHeaderValue(request.headers[i].value));
      if (found) out.push_back(',');
      out += value;
      found = true;
    }
    if (!found) {
      return InvalidArgument(Reason::kInvalidRequest,
                             "signed header '" + name + "' is not in the request");
    }
    out.push_back('\n');
    if (!signed_list.empty()) signed_list.push_back(';');
    signed_list += name;
  }
  out.push_back('\n');
  out += signed_list;
  out.push_back('\n');
  out += payload_hash;
  return out;
}

// ---- Signing -----------------------------------------------------------------------------

std::string Credential::Scope() const {
  std::string out = date;
  out.push_back('/');
  out += region;
  out.push_back('/');
  out += service;
  out.push_back('/');
  out += kTerminator;
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  std::string out(kAlgorithm);
  out.push_back('\n');
  out += amz_date;
  out.push_back('\n');
  out += scope;
  out.push_back('\n');
  out += Sha256Hex(canonical_request);
  return out;
}

std::string SigningKey(std::string_view secret_key, std::string_view date, std::string_view region,
                       std::string_view service) {
  // A client signs with the same derived key all day, and deriving it is four HMACs: a quarter
  // of the hub's CPU on small GETs before this cache. Cleared whole when full; keys are small.
  constexpr size_t kMaxCached = 1024;
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;  // GUARDED_BY(mu)
  std::string scope = std::string(secret_key);
  for (std::string_view part : {date, region, service}) {
    scope.push_back('\0');
    scope += part;
  }
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(scope); it != cache.end()) return it->second;
  }
  std::string k = "AWS4";
  k += secret_key;
  k = HmacSha256(k, date);
  k = HmacSha256(k, region);
  k = HmacSha256(k, service);
  k = HmacSha256(k, kTerminator);
  std::lock_guard lock(mu);
  if (cache.size() >= kMaxCached) cache.clear();
  cache.emplace(std::move(scope), k);
  return k;
}

std::string SignatureHex(std::string_view signing_key, std::string_view string_to_sign) {
  return ToHex(AsBytes(HmacSha256(signing_key, string_to_sign)));
}

Result<std::string> ComputeSignature(const Request& request,
                                     std::span<const std::string> signed_headers,
                                     std::string_view payload_hash, std::string_view amz_date,
                                     const Credential& credential, std::string_view secret_key,
                                     std::string_view exclude_query) {
  WEFT_ASSIGN_OR_RETURN(std::string canonical,
                        CanonicalRequest(request, signed_headers, payload_hash, exclude_query));
  const std::string key =
      SigningKey(secret_key, credential.date, credential.region, credential.service);
  return SignatureHex(key, StringToSign(amz_date, credential.Scope(), canonical));
}

// ---- Parsing -----------------------------------------------------------------------------

Result<int64_t> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z' ||
      !std::all_of(s.begin() + 9, s.begin() + 15, IsDigit)) {
    return InvalidArgument("date '" + std::string(s.substr(0, 32)) +
                           "' is not YYYYMMDD'T'HHMMSS'Z'");
  }
  WEFT_ASSIGN_OR_RETURN(int64_t days, ParseDate8(s.substr(0, 8)));
  const int64_t hh = (s[9] - '0') * 10 + (s[10] - '0');
  const int64_t mm = (s[11] - '0') * 10 + (s[12] - '0');
  const int64_t ss = (s[13] - '0') * 10 + (s[14] - '0');
  if (hh > 23 || mm > 59 || ss > 59) {
    return InvalidArgument("date '" + std::string(s) + "' has an invalid time of day");
  }
  return days * 86400 + hh * 3600 + mm * 60 + ss;
}

Result<ParsedAuth> ParseAuthorizationHeader(std::string_view authorization,
                                            std::string_view amz_date) {
  authorization = TrimSpaces(authorization);
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos) {
    return Malformed("Authorization header has no credentials after the algorithm");
  }
  if (authorization.substr(0, space) != kAlgorithm) {
    return Malformed("unsupported algorithm '" + std::string(authorization.substr(0, space)) +
                     "'; only AWS4-HMAC-SHA256 is accepted");
  }
  ParsedAuth auth;
  auth.mode = AuthMode::kHeader;
  bool have_credential = false, have_signed = false, have_signature = false;
  for (std::string_view part : Split(authorization.substr(space + 1), ',')) {
    part = TrimSpaces(part);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return Malformed("Authorization component '" + std::string(part.substr(0, 32)) +
                       "' is not key=value");
    }
    const std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "Credential" && !have_credential) {
      WEFT_ASSIGN_OR_RETURN(auth.credential, ParseCredential(value));
      have_credential = true;
    } else if (key == "SignedHeaders" && !have_signed) {
      WEFT_ASSIGN_OR_RETURN(auth.signed_headers, ParseSignedHeaders(value));
      have_signed = true;
    } else if (key == "Signature" && !have_signature) {
      WEFT_RETURN_IF_ERROR(ParseSignature(value, &auth.signature));
      have_signature = true;
    } else {
      return Malformed("Authorization component '" + std::string(key.substr(0, 32)) +
                       "' is unknown or repeated");
    }
  }
  if (!have_credential) return Malformed("Authorization header lacks Credential");
  if (!have_signed) return Malformed("Authorization header lacks SignedHeaders");
  if (!have_signature) return Malformed("Authorization header lacks Signature");
  WEFT_RETURN_IF_ERROR(SetDate(&auth, amz_date));
  return auth;
}

Result<ParsedAuth> ParsePresignedQuery(std::span<const QueryParam> query) {
  static constexpr std::string_view kNames[] = {"X-Amz-Algorithm",     "X-Amz-Credential",
                                                "X-Amz-Date",          "X-Amz-Expires",
                                                "X-Amz-SignedHeaders", "X-Amz-Signature"};
  std::optional<std::string_view> values[6];
  for (const QueryParam& p : query) {
    for (size_t i = 0; i < 6; ++i) {
      if (p.name != kNames[i]) continue;
      if (values[i]) return Malformed("query parameter " + p.name + " is repeated");
      values[i] = p.value;
    }
  }
  for (size_t i = 0; i < 6; ++i) {
    if (!values[i]) return Malformed("presigned URL lacks " + std::string(kNames[i]));
  }
  if (*values[0] != kAlgorithm) {
    return Malformed("unsupported X-Amz-Algorithm '" + std::string(values[0]->substr(0, 32)) +
                     "'; only AWS4-HMAC-SHA256 is accepted");
  }
  ParsedAuth auth;
  auth.mode = AuthMode::kPresigned;
  WEFT_ASSIGN_OR_RETURN(auth.credential, ParseCredential(*values[1]));
  WEFT_RETURN_IF_ERROR(SetDate(&auth, *values[2]));
  const std::string_view expires = *values[3];
  if (expires.empty() || expires.size() > 7 ||
      !std::all_of(expires.begin(), expires.end(), IsDigit)) {
    return Malformed("X-Amz-Expires must be a number of seconds from 1 to 604800");
  }
  for (char c : expires) auth.expires_seconds = auth.expires_seconds * 10 + (c - '0');
  if (auth.expires_seconds < 1 || auth.expires_seconds > kMaxPresignExpiresSeconds) {
    return Malformed("X-Amz-Expires must be a number of seconds from 1 to 604800");
  }
  WEFT_ASSIGN_OR_RETURN(auth.signed_headers, ParseSignedHeaders(*values[4]));
  WEFT_RETURN_IF_ERROR(ParseSignature(*values[5], &auth.signature));
  return auth;
}

Result<ParsedAuth> ParseRequestAuth(const Request& request) {
  const std::optional<std::string_view> authorization = FindHeader(request, "authorization");
  const bool presigned =
      std::any_of(request.query.begin(), request.query.end(),
                  [](const QueryParam& p) { return p.name == "X-Amz-Algorithm"; });
  if (authorization && presigned) {
    return InvalidArgument(Reason::kInvalidRequest,
                           "both an Authorization header and presigned query parameters");
  }
  if (presigned) return ParsePresignedQuery(request.query);
  if (!authorization) return NotFound("request is not signed");
  std::optional<std::string_view> date = FindHeader(request, "x-amz-date");
  if (!date) date = FindHeader(request, "date");
  if (!date) return Malformed("request has neither x-amz-date nor Date");
  return ParseAuthorizationHeader(*authorization, TrimSpaces(*date));
}

// ---- Verification ------------------------------------------------------------------------

Status VerifyRequest(const ParsedAuth& auth, const Request& request, std::string_view secret_key,
                     int64_t now_seconds) {
  // Time first: it is cheap, and a stale request must say so even if its signature is fine.
  // Guard the subtraction: request_time is bounded (years 0..9999), now_seconds may not be.
  constexpr int64_t kTimeLimit = int64_t{1} << 40;
  if (now_seconds < -kTimeLimit || now_seconds > kTimeLimit) {
    return InvalidArgument(Reason::kInvalidRequest, "server time out of range");
  }
  const int64_t age = now_seconds - auth.request_time;
  if (auth.mode == AuthMode::kHeader) {
    if (age > kMaxSkewSeconds || age < -kMaxSkewSeconds) {
      return FailedPrecondition(
          Reason::kRequestTimeTooSkewed,
          "request time " + auth.amz_date + " differs from the server's by more than 15 minutes");
    }
  } else {
    if (age < -kMaxSkewSeconds) {
      return FailedPrecondition(
          Reason::kRequestTimeTooSkewed,
          "presigned URL is dated " + auth.amz_date + ", more than 15 minutes ahead of the server");
    }
    if (age > auth.expires_seconds) {
      return OutOfRange(Reason::kAccessDenied, "Request has expired (signed " + auth.amz_date +
                                                   " for " + std::to_string(auth.expires_seconds) +
                                                   " seconds)");
    }
  }

  // Every x-amz-* header the request carries must be signed, so nobody can add one to a
  // captured request; a date header used for the request time must be signed too.
  for (const Header& h : request.headers) {
    const std::string name = AsciiLower(h.name);
    if (name.rfind("x-amz-", 0) != 0) continue;
    if (!std::binary_search(auth.signed_headers.begin(), auth.signed_headers.end(), name)) {
      return PermissionDenied(Reason::kAccessDenied,
                              "header " + name.substr(0, 64) + " is present but not signed");
    }
  }

  std::string_view payload_hash = kUnsignedPayload;
  std::string_view exclude;
  if (auth.mode == AuthMode::kHeader) {
    const std::string_view date_header = FindHeader(request, "x-amz-date") ? "x-amz-date" : "date";
    if (!std::binary_search(auth.signed_headers.begin(), auth.signed_headers.end(), date_header)) {
      return PermissionDenied(Reason::kAccessDenied,
                              "the " + std::string(date_header) + " header is not signed");
    }
    std::optional<std::string_view> content = FindHeader(request, "x-amz-content-sha256");
    if (!content) {
      return InvalidArgument(Reason::kInvalidRequest, "missing x-amz-content-sha256 header");
    }
    payload_hash = TrimSpaces(*content);
    if (!ValidPayloadHash(payload_hash)) {
      return InvalidArgument(Reason::kInvalidArgument, "x-amz-content-sha256 is malformed");
    }
  } else {
    exclude = "X-Amz-Signature";
  }

  WEFT_ASSIGN_OR_RETURN(std::string expected,
                        ComputeSignature(request, auth.signed_headers, payload_hash, auth.amz_date,
                                         auth.credential, secret_key, exclude));
  if (!ConstantTimeEqual(expected, auth.signature)) {
    return PermissionDenied(Reason::kSignatureDoesNotMatch,
                            "the request signature does not match the one computed with the "
                            "secret key of " +
                                auth.credential.access_key_id);
  }
  return OkStatus();
}

// ---- Streaming (aws-chunked) -------------------------------------------------------------

std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature,
                              std::string_view chunk_sha256_hex) {
  std::string out(kChunkAlgorithm);
  for (std::string_view line : {amz_date, scope, previous_signature, kEmptySha256}) {
    out.push_back('\n');
    out += line;
  }
  out.push_back('\n');
  out += chunk_sha256_hex;
  return out;
}

Result<std::optional<ChunkHeader>> ParseChunkHeader(std::string_view data) {
  const size_t window = std::min(data.size(), kMaxChunkHeaderBytes);
  const size_t crlf = data.substr(0, window).find("\r\n");
  if (crlf == std::string_view::npos) {
    if (data.size() < kMaxChunkHeaderBytes) return std::optional<ChunkHeader>();
    return InvalidArgument(Reason::kInvalidRequest, "chunk header line is too long");
  }
  const std::string_view line = data.substr(0, crlf);
  const size_t semi = line.find(';');
  if (semi == std::string_view::npos) {
    return InvalidArgument(Reason::kInvalidRequest, "chunk header lacks chunk-signature");
  }
  const std::string_view size_hex = line.substr(0, semi);
  if (size_hex.empty() || size_hex.size() > 16) {
    return InvalidArgument(Reason::kInvalidRequest, "chunk size must be 1 to 16 hex digits");
  }
  uint64_t size = 0;
  for (char c : size_hex) {
    const int v = HexValue(c);
    if (v < 0) return InvalidArgument(Reason::kInvalidRequest, "chunk size is not hex");
    size = size * 16 + static_cast<uint64_t>(v);  // 16 digits cannot overflow 64 bits
  }
  if (size > kMaxChunkBytes) {
    return InvalidArgument(Reason::kInvalidRequest,
                           "chunk of " + std::to_string(size) + " bytes exceeds the 64 MiB limit");
  }
  constexpr std::string_view kSigKey = "chunk-signature=";
  const std::string_view ext = line.substr(semi + 1);
  if (ext.substr(0, kSigKey.size()) != kSigKey) {
    return InvalidArgument(Reason::kInvalidRequest, "chunk header lacks chunk-signature");
  }
  const std::string_view sig = ext.substr(kSigKey.size());
  if (!IsLowerHex64(sig)) {
    return InvalidArgument(Reason::kInvalidRequest,
                           "chunk-signature must be 64 lower-case hex digits");
  }
  ChunkHeader h;
  h.size = size;
  h.signature = std::string(sig);
  h.header_bytes = crlf + 2;
  return std::optional<ChunkHeader>(std::move(h));
}

ChunkVerifier::ChunkVerifier(std::string signing_key, std::string amz_date, std::string scope,
                             std::string seed_signature)
    : signing_key_(std::move(signing_key)),
      amz_date_(std::move(amz_date)),
      scope_(std::move(scope)),
      previous_(std::move(seed_signature)) {}

ChunkVerifier::ChunkVerifier(const ParsedAuth& auth, std::string_view secret_key)
    : ChunkVerifier(SigningKey(secret_key, auth.credential.date, auth.credential.region,
                               auth.credential.service),
                    auth.amz_date, auth.credential.Scope(), auth.signature) {}

std::string ChunkVerifier::Expected(std::string_view chunk_sha256_hex) const {
  return SignatureHex(signing_key_,
                      ChunkStringToSign(amz_date_, scope_, previous_, chunk_sha256_hex));
}

Status ChunkVerifier::Verify(std::string_view chunk_signature, std::string_view chunk_sha256_hex) {
  std::string expected = Expected(chunk_sha256_hex);
  if (!ConstantTimeEqual(expected, chunk_signature)) {
    return PermissionDenied(Reason::kSignatureDoesNotMatch, "chunk signature does not match");
  }
  previous_ = std::move(expected);
  return OkStatus();
}

}  // namespace weft::sigv4
