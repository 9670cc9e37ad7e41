#include "auth/sigv2.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::sigv2 {
namespace {

// The examples of AWS's "Signing and authenticating REST requests" (Signature Version 2).
constexpr std::string_view kAkid = "AKIAIOSFODNN7EXAMPLE";
constexpr std::string_view kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr int64_t kMarch27 = 1175024202;  // Tue, 27 Mar 2007 19:36:42 GMT

sigv4::Request Signed(std::string method, std::vector<sigv4::Header> headers,
                      std::vector<sigv4::QueryParam> query = {}) {
  sigv4::Request r;
  r.method = std::move(method);
  r.headers = std::move(headers);
  r.query = std::move(query);
  return r;
}

Status Check(const sigv4::Request& r, std::string_view raw_path, int64_t now = kMarch27,
             std::optional<int64_t> time = kMarch27) {
  auto claim = ParseAuth(r);
  if (!claim.ok()) return claim.status();
  return Verify(*claim, r, raw_path, kSecret, now, time);
}

std::string Auth(std::string_view signature) {
  return "AWS " + std::string(kAkid) + ":" + std::string(signature);
}

TEST(SigV2, ObjectGet) {
  auto r = Signed("GET", {{"Date", "Tue, 27 Mar 2007 19:36:42 +0000"},
                          {"Authorization", Auth("bWq2s1WEIj+Ydj0vQ697zp+IXMU=")}});
  ASSERT_TRUE(Claims(r));
  auto claim = ParseAuth(r);
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(StringToSign(r, "/johnsmith/photos/puppy.jpg", *claim),
            "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg");
  EXPECT_TRUE(Check(r, "/johnsmith/photos/puppy.jpg").ok());
  // Another object, another secret, another method: refused.
  EXPECT_EQ(Check(r, "/johnsmith/photos/kitten.jpg").reason(), Reason::kSignatureDoesNotMatch);
  auto claim2 = ParseAuth(r);
  EXPECT_EQ(Verify(*claim2, r, "/johnsmith/photos/puppy.jpg", "wrong", kMarch27, kMarch27).reason(),
            Reason::kSignatureDoesNotMatch);
  r.method = "DELETE";
  EXPECT_EQ(Check(r, "/johnsmith/photos/puppy.jpg").reason(), Reason::kSignatureDoesNotMatch);
}

TEST(SigV2, ObjectPutSignsTheContentType) {
  auto r = Signed("PUT", {{"Content-Type", "image/jpeg"},
                          {"Content-Length", "94328"},
                          {"Date", "Tue, 27 Mar 2007 21:15:45 +0000"},
                          {"Authorization", Auth("MyyxeRY7whkBe+bq8fHCL/2kKUg=")}});
  EXPECT_TRUE(Check(r, "/johnsmith/photos/puppy.jpg").ok());
  r.headers[0].value = "image/png";
  EXPECT_EQ(Check(r, "/johnsmith/photos/puppy.jpg").reason(), Reason::kSignatureDoesNotMatch);
}

TEST(SigV2, ListSignsNoListingParametersButSubresources) {
  auto list = Signed("GET",
                     {{"User-Agent", "Mozilla/5.0"},
                      {"Date", "Tue, 27 Mar 2007 19:42:41 +0000"},
                      {"Authorization", Auth("htDYFYduRNen8P9ZfE/s9SuKy0U=")}},
                     {{"prefix", "photos"}, {"max-keys", "50"}, {"marker", "puppy"}});
  EXPECT_TRUE(Check(list, "/johnsmith/").ok());
  auto acl = Signed("GET",
                    {{"Date", "Tue, 27 Mar 2007 19:44:46 +0000"},
                     {"Authorization", Auth("c2WLPFtWHVgbEmeEG93a4cG37dM=")}},
                    {{"acl", ""}});
  EXPECT_TRUE(Check(acl, "/johnsmith/").ok());
  // Without the subresource the same signature names another resource.
  acl.query.clear();
  EXPECT_EQ(Check(acl, "/johnsmith/").reason(), Reason::kSignatureDoesNotMatch);
}

TEST(SigV2, AmzHeadersAreSortedLowerCasedAndJoined) {
  auto r = Signed("PUT", {{"User-Agent", "curl/7.15.5"},
                          {"Date", "Tue, 27 Mar 2007 21:06:08 +0000"},
                          {"x-amz-acl", "public-read"},
                          {"content-type", "application/x-download"},
                          {"Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="},
                          {"X-Amz-Meta-ReviewedBy", "joe@johnsmith.net"},
                          {"X-Amz-Meta-ReviewedBy", "jane@johnsmith.net"},
                          {"X-Amz-Meta-FileChecksum", "0x02661779"},
                          {"X-Amz-Meta-ChecksumAlgorithm", "crc32"},
                          {"Content-Disposition", "attachment; filename=database.dat"},
                          {"Content-Encoding", "gzip"},
                          {"Authorization", Auth("ilyl83RwaSoYIEdixDQcA4OnAnc=")}});
  EXPECT_TRUE(Check(r, "/static.johnsmith.net/db-backup.dat.gz").ok());
}

TEST(SigV2, PresignedUrlsExpire) {
  auto r = Signed("GET", {},
                  {{"AWSAccessKeyId", std::string(kAkid)},
                   {"Expires", "1175139620"},
                   {"Signature", "NpgCjnDzrM+WFzoENXmpNDUsSn8="}});
  ASSERT_TRUE(Claims(r));
  EXPECT_TRUE(Check(r, "/johnsmith/photos/puppy.jpg", 1175139620, std::nullopt).ok());
  Status late = Check(r, "/johnsmith/photos/puppy.jpg", 1175139621, std::nullopt);
  EXPECT_EQ(late.reason(), Reason::kAccessDenied);
  // A later expiry is another signature.
  r.query[1].value = "1175139999";
  EXPECT_EQ(Check(r, "/johnsmith/photos/puppy.jpg", kMarch27, std::nullopt).reason(),
            Reason::kSignatureDoesNotMatch);
}

TEST(SigV2, ClockSkewAndMalformedClaims) {
  auto r = Signed("GET", {{"Date", "Tue, 27 Mar 2007 19:36:42 +0000"},
                          {"Authorization", Auth("bWq2s1WEIj+Ydj0vQ697zp+IXMU=")}});
  EXPECT_EQ(Check(r, "/johnsmith/photos/puppy.jpg", kMarch27 + 16 * 60).reason(),
            Reason::kRequestTimeTooSkewed);
  EXPECT_EQ(Check(r, "/johnsmith/photos/puppy.jpg", kMarch27, std::nullopt).reason(),
            Reason::kAccessDenied);
  for (std::string bad : {"AWS ", "AWS nocolon", "AWS :sig", "AWS akid:"}) {
    auto m = Signed("GET", {{"Authorization", bad}});
    EXPECT_EQ(ParseAuth(m).status().reason(), Reason::kAuthorizationHeaderMalformed) << bad;
  }
  auto no_expiry = Signed("GET", {}, {{"AWSAccessKeyId", "A"}, {"Signature", "s"}});
  EXPECT_EQ(ParseAuth(no_expiry).status().reason(), Reason::kInvalidRequest);
  auto bad_expiry =
      Signed("GET", {}, {{"AWSAccessKeyId", "A"}, {"Expires", "soon"}, {"Signature", "s"}});
  EXPECT_EQ(ParseAuth(bad_expiry).status().reason(), Reason::kInvalidRequest);
  EXPECT_FALSE(Claims(Signed("GET", {{"Authorization", "AWS4-HMAC-SHA256 Credential=x"}})));
}

}  // namespace
}  // namespace weft::sigv2
