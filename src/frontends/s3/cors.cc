#include "frontends/s3/cors.h"

#include <algorithm>
#include <charconv>

#include "base/ascii.h"
#include "frontends/s3/call.h"

namespace weft::s3 {
namespace {

constexpr size_t kMaxRules = 100;
constexpr std::string_view kMethods[] = {"GET", "PUT", "POST", "DELETE", "HEAD"};

// S3's patterns hold at most one '*', which matches any run of characters.
bool WildcardMatch(std::string_view pattern, std::string_view text, bool ignore_case) {
  auto equal = [&](std::string_view a, std::string_view b) {
    return ignore_case ? EqualsIgnoreCase(a, b) : a == b;
  };
  size_t star = pattern.find('*');
  if (star == std::string_view::npos) return equal(pattern, text);
  std::string_view head = pattern.substr(0, star);
  std::string_view tail = pattern.substr(star + 1);
  return text.size() >= head.size() + tail.size() && equal(text.substr(0, head.size()), head) &&
         equal(text.substr(text.size() - tail.size()), tail);
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Result<CorsRules> ParseCorsXml(const XmlDocument& doc) {
  CorsRules rules;
  for (const XmlElement& r : doc.root().Children("CORSRule")) {
    CorsRule rule;
    if (auto id = r.Child("ID")) rule.id = id->text();
    for (const XmlElement& e : r.Children("AllowedOrigin"))
      rule.allowed_origins.push_back(e.text());
    for (const XmlElement& e : r.Children("AllowedMethod"))
      rule.allowed_methods.push_back(e.text());
    for (const XmlElement& e : r.Children("AllowedHeader"))
      rule.allowed_headers.push_back(e.text());
    for (const XmlElement& e : r.Children("ExposeHeader")) rule.expose_headers.push_back(e.text());
    if (auto age = r.Child("MaxAgeSeconds")) {
      const std::string text = age->text();
      int64_t seconds = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      if (ec != std::errc() || end != text.data() + text.size() || seconds < 0) {
        return InvalidArgument(Reason::kMalformedXML, "MaxAgeSeconds must be a whole number");
      }
      rule.max_age_seconds = seconds;
    }
    if (rule.allowed_origins.empty() || rule.allowed_methods.empty()) {
      return InvalidArgument(Reason::kMalformedXML,
                             "each CORSRule needs an AllowedOrigin and an AllowedMethod");
    }
    for (const std::string& m : rule.allowed_methods) {
      if (std::find(std::begin(kMethods), std::end(kMethods), m) == std::end(kMethods)) {
        return InvalidArgument(Reason::kInvalidRequest,
                               "Found unsupported HTTP method in CORS config: " + m);
      }
    }
    for (const auto* list : {&rule.allowed_origins, &rule.allowed_headers}) {
      for (const std::string& pattern : *list) {
        if (std::count(pattern.begin(), pattern.end(), '*') > 1) {
          return InvalidArgument(Reason::kInvalidRequest,
                                 "a CORS pattern may hold at most one wildcard: " + pattern);
        }
      }
    }
    rules.push_back(std::move(rule));
  }
  if (rules.empty() || rules.size() > kMaxRules) {
    return InvalidArgument(Reason::kMalformedXML, "a CORSConfiguration holds 1 to 100 rules");
  }
  return rules;
}

std::string CorsXml(const CorsRules& rules) {
  XmlWriter xml;
  xml.Open("CORSConfiguration", true);
  for (const CorsRule& rule : rules) {
    xml.Open("CORSRule");
    if (!rule.id.empty()) xml.Element("ID", rule.id);
    for (const std::string& v : rule.allowed_headers) xml.Element("AllowedHeader", v);
    for (const std::string& v : rule.allowed_methods) xml.Element("AllowedMethod", v);
    for (const std::string& v : rule.allowed_origins) xml.Element("AllowedOrigin", v);
    for (const std::string& v : rule.expose_headers) xml.Element("ExposeHeader", v);
    if (rule.max_age_seconds) xml.Element("MaxAgeSeconds", std::to_string(*rule.max_age_seconds));
    xml.Close("CORSRule");
  }
  xml.Close("CORSConfiguration");
  return xml.Finish();
}

Result<CorsRules> CorsFromXml(std::string_view xml) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<XmlDocument> doc,
                        XmlDocument::Parse(xml, "CORSConfiguration"));
  return ParseCorsXml(*doc);
}

const CorsRule* MatchCors(const CorsRules& rules, std::string_view origin, std::string_view method,
                          const std::vector<std::string>& request_headers) {
  for (const CorsRule& rule : rules) {
    auto origin_ok =
        std::any_of(rule.allowed_origins.begin(), rule.allowed_origins.end(),
                    [&](const std::string& p) { return WildcardMatch(p, origin, false); });
    auto method_ok = std::find(rule.allowed_methods.begin(), rule.allowed_methods.end(), method) !=
                     rule.allowed_methods.end();
    auto headers_ok =
        std::all_of(request_headers.begin(), request_headers.end(), [&](const std::string& h) {
          return std::any_of(rule.allowed_headers.begin(), rule.allowed_headers.end(),
                             [&](const std::string& p) { return WildcardMatch(p, h, true); });
        });
    if (origin_ok && method_ok && headers_ok) return &rule;
  }
  return nullptr;
}

std::vector<net::HttpHeader> CorsHeaders(const CorsRule& rule, std::string_view origin) {
  const bool any = std::find(rule.allowed_origins.begin(), rule.allowed_origins.end(), "*") !=
                   rule.allowed_origins.end();
  std::vector<net::HttpHeader> headers = {
      {"Access-Control-Allow-Origin", any ? "*" : std::string(origin)},
      {"Access-Control-Allow-Methods", Join(rule.allowed_methods)},
      {"Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"}};
  if (!any) headers.push_back({"Access-Control-Allow-Credentials", "true"});
  if (!rule.expose_headers.empty()) {
    headers.push_back({"Access-Control-Expose-Headers", Join(rule.expose_headers)});
  }
  if (rule.max_age_seconds) {
    headers.push_back({"Access-Control-Max-Age", std::to_string(*rule.max_age_seconds)});
  }
  return headers;
}

}  // namespace weft::s3

// ---- Handlers --------------------------------------------------------------------------------

namespace weft::s3 {

void S3Frontend::Call::GetBucketCors() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto it = bucket->attributes.find(std::string(kAttrCors));
  if (it == bucket->attributes.end()) {
    return SendError(
        MakeError(Reason::kNoSuchCORSConfiguration, "The CORS configuration does not exist"));
  }
  SendXml(200, it->second);
}

void S3Frontend::Call::PutBucketCors() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto doc = ReadXmlBody("CORSConfiguration");
  if (!doc.ok()) return SendStatus(doc.status());
  auto rules = ParseCorsXml(**doc);
  if (!rules.ok()) return SendStatus(rules.status());
  Status done = SetBucketSetting(*bucket, kAttrCors, CorsXml(*rules));
  if (!done.ok()) return SendStatus(done, Missing::kBucket);
  SendEmpty(200);
}

void S3Frontend::Call::DeleteBucketCors() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  Status done = SetBucketSetting(*bucket, kAttrCors, std::nullopt);
  if (!done.ok()) return SendStatus(done, Missing::kBucket);
  SendEmpty(204);
}

}  // namespace weft::s3
