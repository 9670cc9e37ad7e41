// Signature Version 2: S3's HMAC-SHA1 scheme from before SigV4, still made by old clients and
// by some defaults (Debian 12's boto3 1.26 presigns with it). Two forms: the header
// "Authorization: AWS <access key id>:<signature>" and presigned URLs carrying
// ?AWSAccessKeyId=&Expires=&Signature=. The signature is base64(HMAC-SHA1(secret,
// StringToSign)). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "auth/sigv4.h"
#include "base/status.h"

namespace weft::sigv2 {

struct Claim {
  std::string access_key_id;
  std::string signature;  // base64, as sent
  bool presigned = false;
  int64_t expires = 0;  // presigned: seconds since the epoch
};

// Whether the request claims a SigV2 signature at all (either form).
bool Claims(const sigv4::Request& request);

// The request's claim; InvalidArgument (kInvalidRequest / kAuthorizationHeaderMalformed)
// when the header or the query parameters are malformed.
Result<Claim> ParseAuth(const sigv4::Request& request);

// What the client signed: method, Content-MD5, Content-Type, the date (the Expires value for a
// presigned URL; empty when x-amz-date is sent), the x-amz-* headers, then the resource:
// `raw_path` as sent (still percent-encoded) and the subresources S3 signs, sorted.
std::string StringToSign(const sigv4::Request& request, std::string_view raw_path,
                         const Claim& claim);

// Checks the signature with `secret` at `now_seconds`: a presigned URL must not have expired
// (AccessDenied); a header-signed request's `request_time` (its Date or x-amz-date) must be
// within 15 minutes (RequestTimeTooSkewed). SignatureDoesNotMatch otherwise.
Status Verify(const Claim& claim, const sigv4::Request& request, std::string_view raw_path,
              std::string_view secret, int64_t now_seconds, std::optional<int64_t> request_time);

}  // namespace weft::sigv2
