// Fuzzes the SigV4 parsers (src/auth/sigv4.h) with hostile bytes, and checks the properties a
// verifier must keep: encoding round-trips, parsed values within their documented bounds, and a
// request verified with the right key failing with any other key.
//
// Input: lines separated by '\n'. Every parser also sees the whole input. As a request:
//   line 0  method
//   line 1  request-target ("/bucket/key?X-Amz-Algorithm=...")
//   line 2  Authorization header value (no header when empty)
//   line 3  x-amz-date header value (no header when empty)
//   line 4+ headers, "name: value"
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "auth/sigv4.h"
#include "fuzz_check.h"

namespace weft::sigv4 {
namespace {

constexpr int64_t kNow = 1'780'000'000;  // 2026-05-28, what the server's clock says
constexpr std::string_view kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

std::vector<std::string_view> SplitLines(std::string_view s) {
  std::vector<std::string_view> lines;
  while (true) {
    const size_t nl = s.find('\n');
    lines.push_back(s.substr(0, nl));
    if (nl == std::string_view::npos) return lines;
    s.remove_prefix(nl + 1);
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// "YYYYMMDDTHHMMSSZ" of seconds since the epoch (Howard Hinnant's civil_from_days), so a parsed
// date can be printed back without gmtime's limits on years.
std::string FormatAmzDate(int64_t t) {
  int64_t days = t / 86400, secs = t % 86400;
  if (secs < 0) {
    secs += 86400;
    days -= 1;
  }
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld%02lld%02lldT%02lld%02lld%02lldZ",
                static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                static_cast<long long>(secs / 3600), static_cast<long long>(secs / 60 % 60),
                static_cast<long long>(secs % 60));
  return buf;
}

void CheckEncoding(std::string_view data) {
  const std::string encoded = UriEncode(data);
  Result<std::string> back = UriDecode(encoded, /*plus_is_space=*/true);
  FUZZ_CHECK(back.ok() && *back == data, "UriDecode(UriEncode(x)) != x");
  Result<std::string> path_back = UriDecode(UriEncodePath(data), /*plus_is_space=*/false);
  FUZZ_CHECK(path_back.ok() && *path_back == data, "UriDecode(UriEncodePath(x)) != x");
  for (bool plus : {false, true}) {
    Result<std::string> decoded = UriDecode(data, plus);
    if (decoded.ok()) FUZZ_CHECK(decoded->size() <= data.size(), "UriDecode grew its input");
  }
}

void CheckQueryString(std::string_view data) {
  Result<std::vector<QueryParam>> query = ParseQueryString(data);
  if (!query.ok()) return;
  // The canonical form must carry exactly the same parameters: a parameter it lost or changed
  // would be unsigned.
  Result<std::vector<QueryParam>> again = ParseQueryString(CanonicalQueryString(*query));
  FUZZ_CHECK(again.ok(), "the canonical query string does not parse");
  auto by_name = [](const QueryParam& a, const QueryParam& b) {
    return std::tie(a.name, a.value) < std::tie(b.name, b.value);
  };
  std::vector<QueryParam> expected = *query;
  std::sort(expected.begin(), expected.end(), by_name);
  std::vector<QueryParam> got = *again;
  std::sort(got.begin(), got.end(), by_name);
  FUZZ_CHECK(got == expected, "the canonical query string changed the parameters");
  (void)ParsePresignedQuery(*query);
}

void CheckChunkHeader(std::string_view data) {
  Result<std::optional<ChunkHeader>> header = ParseChunkHeader(data);
  if (!header.ok()) return;
  if (!header->has_value()) {
    FUZZ_CHECK(data.size() < kMaxChunkHeaderBytes, "asked for more data past the header limit");
    return;
  }
  const ChunkHeader& h = **header;
  FUZZ_CHECK(h.size <= kMaxChunkBytes, "chunk size %llu over the limit",
             static_cast<unsigned long long>(h.size));
  FUZZ_CHECK(h.header_bytes >= 2 && h.header_bytes <= data.size() &&
                 h.header_bytes <= kMaxChunkHeaderBytes,
             "header_bytes %zu out of range", h.header_bytes);
  FUZZ_CHECK(data.substr(h.header_bytes - 2, 2) == "\r\n", "the header does not end in CRLF");
  FUZZ_CHECK(IsLowerHex64(h.signature), "the chunk signature is not 64 lower-case hex");
}

void CheckAmzDate(std::string_view data) {
  Result<int64_t> t = ParseAmzDate(data);
  if (!t.ok()) return;
  // Only canonical dates parse: printing the result back gives the input.
  FUZZ_CHECK(FormatAmzDate(*t) == data, "ParseAmzDate accepted a non-canonical date");
}

// What every successful parse promises (sigv4.h, ParsedAuth).
void CheckParsedAuth(const ParsedAuth& auth) {
  FUZZ_CHECK(!auth.signed_headers.empty(), "no signed headers");
  FUZZ_CHECK(std::adjacent_find(auth.signed_headers.begin(), auth.signed_headers.end(),
                                [](const std::string& a, const std::string& b) {
                                  return !(a < b);
                                }) == auth.signed_headers.end(),
             "signed headers not strictly sorted");
  FUZZ_CHECK(std::binary_search(auth.signed_headers.begin(), auth.signed_headers.end(), "host"),
             "host is not signed");
  FUZZ_CHECK(auth.signed_headers.size() <= kMaxSignedHeaders, "too many signed headers");
  FUZZ_CHECK(IsLowerHex64(auth.signature), "signature is not 64 lower-case hex");
  FUZZ_CHECK(auth.amz_date.substr(0, 8) == auth.credential.date, "scope date != request date");
  Result<int64_t> t = ParseAmzDate(auth.amz_date);
  FUZZ_CHECK(t.ok() && *t == auth.request_time, "request_time does not match amz_date");
  if (auth.mode == AuthMode::kPresigned) {
    FUZZ_CHECK(auth.expires_seconds >= 1 && auth.expires_seconds <= kMaxPresignExpiresSeconds,
               "expires %lld out of range", static_cast<long long>(auth.expires_seconds));
  }
}

Request BuildRequest(const std::vector<std::string_view>& lines) {
  Request request;
  request.method = std::string(lines[0]);
  std::string_view target = lines.size() > 1 ? lines[1] : "/";
  const size_t q = target.find('?');
  Result<std::string> path = UriDecode(target.substr(0, q), /*plus_is_space=*/false);
  request.path = path.ok() ? *path : std::string(target.substr(0, q));
  if (q != std::string_view::npos) {
    Result<std::vector<QueryParam>> query = ParseQueryString(target.substr(q + 1));
    if (query.ok()) request.query = *query;
  }
  if (lines.size() > 2 && !lines[2].empty()) {
    request.headers.push_back({"Authorization", std::string(lines[2])});
  }
  if (lines.size() > 3 && !lines[3].empty()) {
    request.headers.push_back({"x-amz-date", std::string(lines[3])});
  }
  for (size_t i = 4; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos) continue;
    request.headers.push_back(
        {std::string(lines[i].substr(0, colon)), std::string(lines[i].substr(colon + 1))});
  }
  return request;
}

// The payload hash and excluded query parameter VerifyRequest signs with (sigv4.h).
std::string_view PayloadHash(const ParsedAuth& auth, const Request& request) {
  if (auth.mode == AuthMode::kPresigned) return kUnsignedPayload;
  for (const Header& h : request.headers) {
    std::string name = h.name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; });
    if (name == "x-amz-content-sha256") return Trim(h.value);
  }
  return kUnsignedPayload;
}

void CheckRequest(const Request& request) {
  Result<ParsedAuth> parsed = ParseRequestAuth(request);
  if (!parsed.ok()) return;
  const ParsedAuth& auth = *parsed;
  CheckParsedAuth(auth);

  // The signature a client holding kSecret would send for this request.
  const std::string_view exclude =
      auth.mode == AuthMode::kPresigned ? std::string_view("X-Amz-Signature") : std::string_view();
  Result<std::string> signature =
      ComputeSignature(request, auth.signed_headers, PayloadHash(auth, request), auth.amz_date,
                       auth.credential, kSecret, exclude);
  for (int64_t now : {kNow, auth.request_time, auth.request_time + 900, int64_t{-1} << 62}) {
    Status status = VerifyRequest(auth, request, kSecret, now);
    // The fuzzer cannot forge HMAC-SHA256: acceptance of anything else means a skipped check.
    FUZZ_CHECK(!status.ok() || (signature.ok() && auth.signature == *signature),
               "a request verified with a signature that is not the right one");
  }
  if (!signature.ok()) return;

  // Sign the request correctly, so the success path and its neighbours are exercised too.
  ParsedAuth good = auth;
  good.signature = *signature;
  Status status = VerifyRequest(good, request, kSecret, auth.request_time);
  FUZZ_CHECK(status.ok() || status.reason() != Reason::kSignatureDoesNotMatch,
             "a correctly signed request did not verify: %s", status.ToString().c_str());
  if (!status.ok()) return;
  Status wrong_key = VerifyRequest(good, request, "another secret", auth.request_time);
  FUZZ_CHECK(!wrong_key.ok(), "a request verified under the wrong secret key");
  Request tampered = request;
  tampered.path += "x";
  FUZZ_CHECK(!VerifyRequest(good, tampered, kSecret, auth.request_time).ok(),
             "a request verified after its path changed");

  // The aws-chunked chain seeded by this signature.
  ChunkVerifier chain(good, kSecret);
  const std::string chunk_hash = Sha256Hex(request.method);
  FUZZ_CHECK(!chain.Verify(std::string(64, '0'), chunk_hash).ok(), "a forged chunk verified");
  FUZZ_CHECK(chain.Verify(chain.Expected(chunk_hash), chunk_hash).ok(), "a good chunk failed");
}

void FuzzOne(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckEncoding(input);
  CheckQueryString(input);
  CheckChunkHeader(input);
  CheckAmzDate(input);
  const std::vector<std::string_view> lines = SplitLines(input);
  (void)ParseAuthorizationHeader(input, lines.size() > 3 ? lines[3] : std::string_view());
  if (lines.size() > 1) {
    const size_t q = lines[1].find('?');
    if (q != std::string_view::npos) CheckQueryString(lines[1].substr(q + 1));
  }
  if (lines.size() > 3) CheckAmzDate(lines[3]);
  CheckRequest(BuildRequest(lines));
}

}  // namespace
}  // namespace weft::sigv4

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::sigv4::FuzzOne(data, size);
  return 0;
}
