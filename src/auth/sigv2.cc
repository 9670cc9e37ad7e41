#include "auth/sigv2.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <vector>

#include "base/ascii.h"
#include "base/bytes.h"
#include "base/hash.h"

namespace weft::sigv2 {
namespace {

constexpr std::string_view kScheme = "AWS ";
constexpr int64_t kMaxSkewSeconds = 15 * 60;
// As for SigV4 URLs: a presigned URL is good for at most a week.
constexpr int64_t kMaxPresignSeconds = 7 * 24 * 3600;

// The query parameters that name a subresource or override a response header: S3 signs them
// as part of the resource (the list botocore's HmacV1Auth signs).
constexpr std::array<std::string_view, 37> kSignedSubresources = {
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "retention",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
};

std::optional<std::string> HeaderValue(const sigv4::Request& request, std::string_view name) {
  std::optional<std::string> out;
  for (const sigv4::Header& h : request.headers) {
    if (!EqualsIgnoreCase(h.name, name)) continue;
    out = out ? *out + "," + h.value : h.value;
  }
  return out;
}

std::optional<std::string> QueryValue(const sigv4::Request& request, std::string_view name) {
  for (const sigv4::QueryParam& q : request.query) {
    if (q.name == name) return q.value;
  }
  return std::nullopt;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool Claims(const sigv4::Request& request) {
  if (QueryValue(request, "AWSAccessKeyId")) return true;
  std::optional<std::string> auth = HeaderValue(request, "authorization");
  return auth && auth->starts_with(kScheme);
}

Result<Claim> ParseAuth(const sigv4::Request& request) {
  Claim claim;
  if (std::optional<std::string> akid = QueryValue(request, "AWSAccessKeyId")) {
    std::optional<std::string> expires = QueryValue(request, "Expires");
    std::optional<std::string> signature = QueryValue(request, "Signature");
    if (akid->empty() || !expires || !signature || signature->empty()) {
      return InvalidArgument(Reason::kInvalidRequest,
                             "a SigV2 presigned URL needs AWSAccessKeyId, Expires and Signature");
    }
    auto [end, ec] =
        std::from_chars(expires->data(), expires->data() + expires->size(), claim.expires);
    if (ec != std::errc() || end != expires->data() + expires->size()) {
      return InvalidArgument(Reason::kInvalidRequest, "Expires must be seconds since the epoch");
    }
    claim.access_key_id = *akid;
    claim.signature = *signature;
    claim.presigned = true;
    return claim;
  }
  std::optional<std::string> auth = HeaderValue(request, "authorization");
  if (!auth || !auth->starts_with(kScheme)) {
    return NotFound("no Signature Version 2 authorization");
  }
  std::string_view rest = Trim(std::string_view(*auth).substr(kScheme.size()));
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
    return InvalidArgument(Reason::kAuthorizationHeaderMalformed,
                           "a SigV2 Authorization header is 'AWS <access key id>:<signature>'");
  }
  claim.access_key_id = std::string(rest.substr(0, colon));
  claim.signature = std::string(rest.substr(colon + 1));
  return claim;
}

std::string StringToSign(const sigv4::Request& request, std::string_view raw_path,
                         const Claim& claim) {
  std::string out = request.method + "\n";
  out += HeaderValue(request, "content-md5").value_or("") + "\n";
  out += HeaderValue(request, "content-type").value_or("") + "\n";
  if (claim.presigned) {
    out += std::to_string(claim.expires);
  } else if (!HeaderValue(request, "x-amz-date")) {
    out += HeaderValue(request, "date").value_or("");
  }
  out += "\n";
  std::map<std::string, std::string> amz;  // sorted by lower-case name
  for (const sigv4::Header& h : request.headers) {
    std::string name = AsciiLower(h.name);
    if (!name.starts_with("x-amz-")) continue;
    std::string& value = amz[name];
    value += (value.empty() ? "" : ",") + std::string(Trim(h.value));
  }
  for (const auto& [name, value] : amz) out += name + ":" + value + "\n";
  out += raw_path;
  std::vector<std::pair<std::string, std::string>> signed_params;
  for (const sigv4::QueryParam& q : request.query) {
    if (std::find(kSignedSubresources.begin(), kSignedSubresources.end(), q.name) !=
        kSignedSubresources.end()) {
      signed_params.emplace_back(q.name, q.value);
    }
  }
  std::stable_sort(signed_params.begin(), signed_params.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < signed_params.size(); ++i) {
    out += i == 0 ? "?" : "&";
    out += signed_params[i].first;
    if (!signed_params[i].second.empty()) out += "=" + signed_params[i].second;
  }
  return out;
}

Status Verify(const Claim& claim, const sigv4::Request& request, std::string_view raw_path,
              std::string_view secret, int64_t now_seconds, std::optional<int64_t> request_time) {
  if (claim.presigned) {
    if (now_seconds > claim.expires) {
      return OutOfRange(Reason::kAccessDenied,
                        "Request has expired (Expires " + std::to_string(claim.expires) + ")");
    }
    if (claim.expires - now_seconds > kMaxPresignSeconds) {
      return InvalidArgument(Reason::kAuthorizationQueryParametersError,
                             "a presigned URL may be valid for at most 7 days");
    }
  } else {
    if (!request_time) {
      return PermissionDenied(Reason::kAccessDenied,
                              "a SigV2 request needs a valid Date or x-amz-date header");
    }
    if (*request_time > now_seconds + kMaxSkewSeconds ||
        *request_time < now_seconds - kMaxSkewSeconds) {
      return FailedPrecondition(
          Reason::kRequestTimeTooSkewed,
          "The difference between the request time and the current time is too large.");
    }
  }
  const std::string expected =
      Base64Encode(HmacSha1(secret, StringToSign(request, raw_path, claim)));
  if (expected.size() != claim.signature.size() ||
      CRYPTO_memcmp(expected.data(), claim.signature.data(), expected.size()) != 0) {
    return PermissionDenied(Reason::kSignatureDoesNotMatch,
                            "the request signature does not match the one computed with the "
                            "secret key of " +
                                claim.access_key_id.substr(0, 64));
  }
  return OkStatus();
}

}  // namespace weft::sigv2
