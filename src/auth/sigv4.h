// AWS Signature Version 4 primitives for the S3 front end: URI encoding, canonical requests,
// signing keys and signatures, parsing of the Authorization header and of presigned query
// parameters, request verification, and aws-chunked (streaming) chunk signatures.
// Pure functions over caller-owned values, no networking; thread-safe. ChunkVerifier is a value
// type that one request's body reader owns and uses from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace weft::sigv4 {

inline constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
inline constexpr std::string_view kChunkAlgorithm = "AWS4-HMAC-SHA256-PAYLOAD";
inline constexpr std::string_view kService = "s3";
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kStreamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
// aws-chunked with unsigned chunks and a checksum trailer (current AWS SDKs' default).
inline constexpr std::string_view kStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
// Hex SHA-256 of the empty string.
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

inline constexpr int64_t kMaxSkewSeconds = 15 * 60;
inline constexpr int64_t kMaxPresignExpiresSeconds = 7 * 24 * 3600;
inline constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;
// Longest chunk header line: 16 hex digits + ";chunk-signature=" + 64 hex + CRLF.
inline constexpr size_t kMaxChunkHeaderBytes = 16 + 17 + 64 + 2;
// Bounds on what a hostile client may make us sort and compare.
inline constexpr size_t kMaxSignedHeaders = 64;

// ---- Encoding and hashing ----------------------------------------------------------------

// Percent-encodes every byte except A-Z a-z 0-9 - . _ ~ as %XX (upper-case hex).
std::string UriEncode(std::string_view s);
// As UriEncode but keeps '/': the canonical URI of an already-decoded S3 path (S3 encodes the
// path once; it does not double-encode).
std::string UriEncodePath(std::string_view path);
// Decodes %XX escapes; '+' becomes ' ' only when `plus_is_space` (query strings). Fails on a
// truncated or non-hex escape.
Result<std::string> UriDecode(std::string_view s, bool plus_is_space);

std::string Sha256Hex(std::string_view data);

// ---- Requests ----------------------------------------------------------------------------

struct QueryParam {
  std::string name;   // decoded
  std::string value;  // decoded; "" for a bare name (?lifecycle)
  bool operator==(const QueryParam&) const = default;
};

struct Header {
  std::string name;   // any case, as received
  std::string value;  // as received
};

// The pieces of an HTTP request that SigV4 covers.
struct Request {
  std::string method;             // "GET"
  std::string path;               // decoded, starts with '/'
  std::vector<QueryParam> query;  // decoded, in any order; repeats allowed
  std::vector<Header> headers;    // repeats of a name are joined with ',' in order
};

// Splits a raw query string ("a=1&b&c=%2F") into decoded parameters; '+' decodes to ' '.
Result<std::vector<QueryParam>> ParseQueryString(std::string_view raw);

// The canonical query string: names and values encoded, sorted by name then value, '&'-joined.
// A parameter named `exclude` (X-Amz-Signature for presigned URLs) is left out when non-empty.
std::string CanonicalQueryString(std::span<const QueryParam> query, std::string_view exclude = {});

// The canonical request. `signed_headers` are lower-case names; each must be present in the
// request. `payload_hash` is 64 lower-case hex, kUnsignedPayload or kStreamingPayload.
Result<std::string> CanonicalRequest(const Request& request,
                                     std::span<const std::string> signed_headers,
                                     std::string_view payload_hash,
                                     std::string_view exclude_query = {});

// ---- Signing -----------------------------------------------------------------------------

// The credential scope of a signature: AKID/date/region/service/aws4_request.
struct Credential {
  std::string access_key_id;
  std::string date;  // YYYYMMDD
  std::string region;
  std::string service;
  // "date/region/service/aws4_request"
  std::string Scope() const;
};

// "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(canonical_request)>".
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
// Raw 32-byte signing key: HMAC chain over "AWS4"+secret, date, region, service, aws4_request.
std::string SigningKey(std::string_view secret_key, std::string_view date, std::string_view region,
                       std::string_view service);
// Lower-case hex HMAC-SHA256 of `string_to_sign` under `signing_key`.
std::string SignatureHex(std::string_view signing_key, std::string_view string_to_sign);

// All of the above for one request: the hex signature a client with `secret_key` would send.
Result<std::string> ComputeSignature(const Request& request,
                                     std::span<const std::string> signed_headers,
                                     std::string_view payload_hash, std::string_view amz_date,
                                     const Credential& credential, std::string_view secret_key,
                                     std::string_view exclude_query = {});

// ---- Parsing -----------------------------------------------------------------------------

// Parses "YYYYMMDD'T'HHMMSS'Z'" (UTC) into seconds since the Unix epoch.
Result<int64_t> ParseAmzDate(std::string_view amz_date);

enum class AuthMode { kHeader, kPresigned };

// What a request claims about its signature, syntactically valid; not yet verified.
struct ParsedAuth {
  AuthMode mode = AuthMode::kHeader;
  Credential credential;
  std::string amz_date;      // YYYYMMDDTHHMMSSZ; its date part equals credential.date
  int64_t request_time = 0;  // amz_date in seconds since the epoch
  std::vector<std::string> signed_headers;  // lower-case, strictly sorted, contains "host"
  std::string signature;                    // 64 lower-case hex
  int64_t expires_seconds = 0;              // presigned only: 1..kMaxPresignExpiresSeconds
};

// Parses an Authorization header value ("AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
// Signature=...") given the request's x-amz-date value.
Result<ParsedAuth> ParseAuthorizationHeader(std::string_view authorization,
                                            std::string_view amz_date);
// Parses X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders and -Signature.
Result<ParsedAuth> ParsePresignedQuery(std::span<const QueryParam> query);

// Decides the auth mode of a request: the Authorization header (with x-amz-date, or a Date
// header in the same ISO form), or presigned query parameters. NotFound when the request carries
// neither (anonymous); InvalidArgument when it carries both or either is malformed.
Result<ParsedAuth> ParseRequestAuth(const Request& request);

// ---- Verification ------------------------------------------------------------------------

// Every failure carries the S3 error code as its Reason, so the front end's one mapping table
// turns it into XML without guessing:
//   PermissionDenied   kSignatureDoesNotMatch   wrong secret, tampered request
//   PermissionDenied   kAccessDenied            x-amz-* header present but not signed
//   FailedPrecondition kRequestTimeTooSkewed    |now - x-amz-date| > 15 min (header), or a
//                                               presigned URL dated > 15 min in the future
//   OutOfRange         kAccessDenied            presigned URL past its expiry
//   InvalidArgument    kAuthorizationHeaderMalformed / kInvalidRequest  malformed
//
// Checks `request` against `auth` (from the Parse functions above, for this same request) with
// the key holder's `secret_key` at `now_seconds` (Unix). In header mode the payload hash is the
// x-amz-content-sha256 header, which must be present and well formed; comparing it with the body
// is the caller's job (the body arrives later). Presigned URLs sign UNSIGNED-PAYLOAD. The caller
// also checks credential.region against its own region and looks up the key by access key id.
Status VerifyRequest(const ParsedAuth& auth, const Request& request, std::string_view secret_key,
                     int64_t now_seconds);

// ---- Streaming (aws-chunked) -------------------------------------------------------------

// "AWS4-HMAC-SHA256-PAYLOAD\n<amz_date>\n<scope>\n<previous>\n<hash("")>\n<chunk_sha256_hex>".
std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature,
                              std::string_view chunk_sha256_hex);

// One chunk header line: "<hex size>;chunk-signature=<64 hex>\r\n".
struct ChunkHeader {
  uint64_t size = 0;        // data bytes that follow (then CRLF); 0 ends the body
  std::string signature;    // 64 lower-case hex
  size_t header_bytes = 0;  // bytes of the header line, CRLF included
};

// Parses the chunk header at the start of `data`. nullopt: no CRLF yet and fewer than
// kMaxChunkHeaderBytes buffered, so read more. InvalidArgument for a malformed header, a size
// over kMaxChunkBytes, a non-hex or missing signature, or a line longer than the limit.
Result<std::optional<ChunkHeader>> ParseChunkHeader(std::string_view data);

// Verifies a chain of chunk signatures. The seed is the verified request signature; each chunk
// signature covers the one before it, so chunks cannot be dropped, reordered or replayed.
class ChunkVerifier {
 public:
  ChunkVerifier(std::string signing_key, std::string amz_date, std::string scope,
                std::string seed_signature);
  ChunkVerifier(const ParsedAuth& auth, std::string_view secret_key);

  // Checks `chunk_signature` against the chunk whose data hashes to `chunk_sha256_hex` and, on
  // success only, advances the chain. PermissionDenied(Reason::kSignatureDoesNotMatch, "...")
  // otherwise.
  Status Verify(std::string_view chunk_signature, std::string_view chunk_sha256_hex);

  // The signature a well-behaved client sends for the next chunk (tests, and a client side).
  std::string Expected(std::string_view chunk_sha256_hex) const;
  const std::string& previous_signature() const { return previous_; }

 private:
  std::string signing_key_;
  std::string amz_date_;
  std::string scope_;
  std::string previous_;
};

}  // namespace weft::sigv4
