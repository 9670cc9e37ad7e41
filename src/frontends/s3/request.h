// The edge of the S3 front end: turns an HTTP request into an S3Request (decoded path and
// query, validated bucket and key), authenticates it (SigV4 header, presigned URL, or
// anonymous), and wraps its body in a PayloadReader that decodes aws-chunked bodies and checks
// every digest the client sent. Every request passes through here before any handler runs.
// Value types used by one request's thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "access/authorized_volume.h"
#include "auth/identity_store.h"
#include "auth/sigv2.h"
#include "auth/sigv4.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/status.h"
#include "frontends/s3/aws_chunked.h"
#include "net/http_server.h"

namespace weft::s3 {

// Where in-progress multipart uploads keep their parts: /<bucket>/.weft-uploads/<id>/, inside
// the bucket, so a spoke whose portal holds the bucket stages parts at the hub like any write,
// under the same rules and residency. Keys under it are reserved: S3 neither lists nor
// serves them. The directory exists only while uploads are in progress.
inline constexpr std::string_view kUploadsDirName = access::kStagingDirName;

inline constexpr size_t kMaxKeyBytes = 1024;

struct S3Request {
  const net::HttpRequest* http = nullptr;
  std::string method;
  std::string path;  // decoded, "/bucket/key"
  std::vector<sigv4::QueryParam> query;
  std::string bucket;  // "" for the service (ListBuckets)
  std::string key;     // "" for bucket-level requests

  std::optional<std::string> Query(std::string_view name) const;
  bool HasQuery(std::string_view name) const;
  std::optional<std::string_view> Header(std::string_view name) const { return http->Header(name); }
  // "/bucket/key" as a Volume path ("/bucket" for bucket-level requests).
  std::string VolumePath() const;
};

// Parses path and query. Errors carry their S3 code (InvalidBucketName, KeyTooLongError,
// InvalidArgument for hostile keys: "." or ".." segments, empty segments, NUL, '\').
Result<S3Request> ParseS3Request(const net::HttpRequest& http);

Status ValidateBucketName(std::string_view bucket);
// Validates a key as Weft stores it: a relative path under the bucket.
Status ValidateKey(std::string_view key);
// ValidateKey, and not a key S3 reserves for itself (multipart staging): every key a client
// names in a request (the path, DeleteObjects).
Status ValidateClientKey(std::string_view key);

// How the body's integrity is proven.
enum class PayloadMode {
  kUnsigned,         // UNSIGNED-PAYLOAD, presigned, or anonymous: only Content-MD5 if sent
  kSha256,           // x-amz-content-sha256 carries the body's hex SHA-256
  kStreamingSigned,  // STREAMING-AWS4-HMAC-SHA256-PAYLOAD: aws-chunked, a signature per chunk
  kStreamingUnsignedTrailer,  // STREAMING-UNSIGNED-PAYLOAD-TRAILER: aws-chunked + a checksum
};

struct Identity {
  std::string principal;  // user name, or auth::kAnonymous
  PayloadMode payload = PayloadMode::kUnsigned;
  std::string payload_sha256;                       // kSha256 only
  std::optional<sigv4::ChunkVerifier> chunk_chain;  // kStreamingSigned only
};

// Decides the auth mode and verifies the signature. Errors carry their S3 code
// (InvalidAccessKeyId, SignatureDoesNotMatch, RequestTimeTooSkewed, AccessDenied, ...).
// SigV2 is verified when `allow_sigv2`, else refused.
Result<Identity> Authenticate(const S3Request& request, auth::IdentityStore& identities,
                              std::string_view region, int64_t now_seconds, bool allow_sigv2);

// The request body as the client meant it: aws-chunked framing removed, and at the end the
// SHA-256, Content-MD5, chunk signatures and decoded length checked. A failed check is an error
// from Read, so a handler that streams into a FileWriter aborts it and nothing partial is seen.
class PayloadReader {
 public:
  static Result<std::unique_ptr<PayloadReader>> Make(const S3Request& request, Identity& identity,
                                                     net::BodyReader& body);
  ~PayloadReader();

  // Up to out.size() bytes; 0 at the verified end of the payload.
  Result<size_t> Read(std::span<char> out);
  // Reads everything (up to `limit` bytes, else EntityTooLarge/MalformedXML by `what`).
  Result<std::string> ReadAll(size_t limit);
  // The payload's length when known in advance (Content-Length, x-amz-decoded-content-length).
  std::optional<uint64_t> declared_length() const { return declared_length_; }
  // The payload's MD5 as the client declared it (Content-MD5), hex; once Read returned 0 the
  // payload is known to match it, so it can be the ETag without hashing the bytes twice.
  std::optional<std::string> declared_md5_hex() const;

 private:
  PayloadReader() = default;
  Result<size_t> ReadRaw(std::span<char> out);
  Status Finish();

  net::BodyReader* body_ = nullptr;
  std::optional<uint64_t> declared_length_;
  uint64_t delivered_ = 0;
  bool done_ = false;
  // kSha256
  std::optional<std::string> expected_sha256_;
  std::unique_ptr<Sha256Hasher> sha256_;
  // Content-MD5 (base64 in the header, raw here)
  std::optional<std::string> expected_md5_;
  std::unique_ptr<Md5Hasher> md5_;  // only with Content-MD5
  // aws-chunked bodies
  std::unique_ptr<AwsChunkedDecoder> chunked_;
};

// The items of a comma-separated header value ("a, b,c"), spaces around each removed, empty
// ones dropped (Access-Control-Request-Headers, x-amz-object-attributes, Content-Encoding).
std::vector<std::string_view> SplitList(std::string_view value);

// The RFC 1123 form ("Wed, 02 Dec 2026 17:27:10 GMT") of a time in nanoseconds since the
// epoch. (S3 XML's ISO 8601 form is base/clock.h's FormatIso8601 with milliseconds.)
std::string HttpDate(int64_t time_ns);
// Parses an HTTP date (RFC 1123, RFC 850 or asctime) into seconds since the epoch.
std::optional<int64_t> ParseHttpDate(std::string_view text);

}  // namespace weft::s3
