// CORS for browsers that talk to S3 directly: a bucket's rules (PutBucketCors), the answer to a
// preflight OPTIONS request, and the headers an actual cross-origin request gets. The rules
// are kept as the canonical XML this module writes, in a bucket attribute. Value types and
// pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "frontends/s3/xml.h"
#include "net/http_server.h"

namespace weft::s3 {

struct CorsRule {
  std::string id;
  std::vector<std::string> allowed_origins;  // may hold one '*' wildcard each
  std::vector<std::string> allowed_methods;  // GET PUT POST DELETE HEAD
  std::vector<std::string> allowed_headers;  // may hold one '*' wildcard each
  std::vector<std::string> expose_headers;
  std::optional<int64_t> max_age_seconds;
};

using CorsRules = std::vector<CorsRule>;

// A CORSConfiguration document's rules (MalformedXML / InvalidRequest when they break S3's
// rules: at most 100 rules, each with an origin and a method S3 knows).
Result<CorsRules> ParseCorsXml(const XmlDocument& doc);
// The CORSConfiguration document for `rules`, and back from it.
std::string CorsXml(const CorsRules& rules);
Result<CorsRules> CorsFromXml(std::string_view xml);

// The first rule that allows `origin` to send `method` with `request_headers` (lower-case
// names), or nullptr.
const CorsRule* MatchCors(const CorsRules& rules, std::string_view origin, std::string_view method,
                          const std::vector<std::string>& request_headers);

// The Access-Control-* headers a request from `origin` gets under `rule`.
std::vector<net::HttpHeader> CorsHeaders(const CorsRule& rule, std::string_view origin);

}  // namespace weft::s3
