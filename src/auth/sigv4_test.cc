#include "auth/sigv4.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "base/hash.h"

namespace weft::sigv4 {
namespace {

// The example credentials, date and bucket of AWS's published S3 SigV4 examples. The expected
// canonical-request hashes and signatures below are the published values.
constexpr std::string_view kAkid = "AKIAIOSFODNN7EXAMPLE";
constexpr std::string_view kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr std::string_view kAmzDate = "20130524T000000Z";
constexpr std::string_view kScope = "20130524/us-east-1/s3/aws4_request";
constexpr std::string_view kHost = "examplebucket.s3.amazonaws.com";
constexpr int64_t kExampleTime = 1369353600;  // 2013-05-24T00:00:00Z

Credential ExampleCredential() {
  return {std::string(kAkid), "20130524", "us-east-1", "s3"};
}

std::string Auth(std::string_view signed_headers, std::string_view signature) {
  return "AWS4-HMAC-SHA256 Credential=" + std::string(kAkid) + "/" + std::string(kScope) +
         ",SignedHeaders=" + std::string(signed_headers) + ",Signature=" + std::string(signature);
}

std::vector<std::string> Names(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t semi = list.find(';', start);
    out.emplace_back(list.substr(start, semi - start));
    if (semi == std::string_view::npos) return out;
    start = semi + 1;
  }
}

// Parses the request's auth (as the front end will) and verifies it at `now`.
Status ParseAndVerify(const Request& r, std::string_view secret = kSecret,
                      int64_t now = kExampleTime) {
  Result<ParsedAuth> auth = ParseRequestAuth(r);
  if (!auth.ok()) return auth.status();
  return VerifyRequest(*auth, r, secret, now);
}

// Whether "<reason>: <message>" starts with `prefix` ("SignatureDoesNotMatch", or with the
// start of the message: "AccessDenied: Request has expired").
bool StartsWith(const Status& s, std::string_view prefix) {
  const std::string described = std::string(ReasonName(s.reason())) + ": " + s.message();
  return described.rfind(prefix, 0) == 0;
}

// ---- The single-chunk header examples --------------------------------------------------

Request GetObjectRequest() {
  Request r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {{"Host", std::string(kHost)},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", std::string(kEmptySha256)},
               {"x-amz-date", std::string(kAmzDate)}};
  return r;
}

TEST(SigV4Example, GetObjectWithRange) {
  Request r = GetObjectRequest();
  const auto signed_headers = Names("host;range;x-amz-content-sha256;x-amz-date");
  Result<std::string> canonical = CanonicalRequest(r, signed_headers, kEmptySha256);
  ASSERT_TRUE(canonical.ok()) << canonical.status().ToString();
  EXPECT_EQ(*canonical,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(StringToSign(kAmzDate, kScope, *canonical),
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  Result<std::string> sig =
      ComputeSignature(r, signed_headers, kEmptySha256, kAmzDate, ExampleCredential(), kSecret);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(*sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

  r.headers.push_back({"Authorization", Auth("host;range;x-amz-content-sha256;x-amz-date", *sig)});
  EXPECT_TRUE(ParseAndVerify(r).ok()) << ParseAndVerify(r).ToString();
}

Request PutObjectRequest() {
  Request r;
  r.method = "PUT";
  r.path = "/test$file.text";
  r.headers = {{"Host", std::string(kHost)},
               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-date", std::string(kAmzDate)},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", Sha256Hex("Welcome to Amazon S3.")}};
  return r;
}

TEST(SigV4Example, PutObject) {
  Request r = PutObjectRequest();
  const std::string payload = Sha256Hex("Welcome to Amazon S3.");
  EXPECT_EQ(payload, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const auto signed_headers =
      Names("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
  Result<std::string> canonical = CanonicalRequest(r, signed_headers, payload);
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(canonical->substr(0, 21), "PUT\n/test%24file.text");
  EXPECT_EQ(Sha256Hex(*canonical),
            "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  Result<std::string> sig =
      ComputeSignature(r, signed_headers, payload, kAmzDate, ExampleCredential(), kSecret);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(*sig, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");

  r.headers.push_back(
      {"Authorization",
       Auth("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class", *sig)});
  EXPECT_TRUE(ParseAndVerify(r).ok());
}

Request BucketRequest(std::vector<QueryParam> query) {
  Request r;
  r.method = "GET";
  r.path = "/";
  r.query = std::move(query);
  r.headers = {{"Host", std::string(kHost)},
               {"x-amz-date", std::string(kAmzDate)},
               {"x-amz-content-sha256", std::string(kEmptySha256)}};
  return r;
}

TEST(SigV4Example, GetBucketLifecycle) {
  Result<std::vector<QueryParam>> query = ParseQueryString("lifecycle");
  ASSERT_TRUE(query.ok());
  Request r = BucketRequest(*query);
  const auto signed_headers = Names("host;x-amz-content-sha256;x-amz-date");
  Result<std::string> canonical = CanonicalRequest(r, signed_headers, kEmptySha256);
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(canonical->substr(0, 17), "GET\n/\nlifecycle=\n");
  EXPECT_EQ(Sha256Hex(*canonical),
            "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca");
  Result<std::string> sig =
      ComputeSignature(r, signed_headers, kEmptySha256, kAmzDate, ExampleCredential(), kSecret);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(*sig, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4Example, ListObjectsSortsTheQuery) {
  // Sent out of order on purpose: the canonical form sorts it.
  Result<std::vector<QueryParam>> query = ParseQueryString("prefix=J&max-keys=2");
  ASSERT_TRUE(query.ok());
  Request r = BucketRequest(*query);
  const auto signed_headers = Names("host;x-amz-content-sha256;x-amz-date");
  Result<std::string> canonical = CanonicalRequest(r, signed_headers, kEmptySha256);
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(Sha256Hex(*canonical),
            "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
  Result<std::string> sig =
      ComputeSignature(r, signed_headers, kEmptySha256, kAmzDate, ExampleCredential(), kSecret);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(*sig, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");

  r.headers.push_back({"Authorization", "AWS4-HMAC-SHA256 Credential=" + std::string(kAkid) + "/" +
                                            std::string(kScope) +
                                            ", SignedHeaders=host;x-amz-content-sha256;x-amz-"
                                            "date, Signature=" +
                                            *sig});
  EXPECT_TRUE(ParseAndVerify(r).ok());

  // A tampered query value.
  Request tampered = r;
  tampered.query[0].value = "K";
  Status s = ParseAndVerify(tampered);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(s, "SignatureDoesNotMatch")) << s.ToString();
  // An added query parameter.
  tampered = r;
  tampered.query.push_back({"delimiter", "/"});
  EXPECT_TRUE(StartsWith(ParseAndVerify(tampered), "SignatureDoesNotMatch"));
}

// ---- The presigned URL example ---------------------------------------------------------

constexpr std::string_view kPresignedQuery =
    "X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
    "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

Request PresignedRequest() {
  Request r;
  r.method = "GET";
  r.path = "/test.txt";
  Result<std::vector<QueryParam>> q = ParseQueryString(kPresignedQuery);
  EXPECT_TRUE(q.ok());
  if (q.ok()) r.query = *q;
  r.headers = {{"Host", std::string(kHost)}};
  return r;
}

TEST(SigV4Example, PresignedUrl) {
  Request r = PresignedRequest();
  Result<std::string> canonical =
      CanonicalRequest(r, Names("host"), kUnsignedPayload, "X-Amz-Signature");
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(*canonical,
            "GET\n/test.txt\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
            "AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date="
            "20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\n"
            "host:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD");
  EXPECT_EQ(Sha256Hex(*canonical),
            "3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04");

  Result<ParsedAuth> auth = ParseRequestAuth(r);
  ASSERT_TRUE(auth.ok()) << auth.status().ToString();
  EXPECT_EQ(auth->mode, AuthMode::kPresigned);
  EXPECT_EQ(auth->credential.access_key_id, kAkid);
  EXPECT_EQ(auth->credential.Scope(), kScope);
  EXPECT_EQ(auth->expires_seconds, 86400);
  EXPECT_EQ(auth->request_time, kExampleTime);
  EXPECT_EQ(auth->signature, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
  EXPECT_TRUE(VerifyRequest(*auth, r, kSecret, kExampleTime).ok());
  EXPECT_TRUE(VerifyRequest(*auth, r, kSecret, kExampleTime + 86400).ok());

  // Expired: a distinct error from a bad signature and from skew.
  Status expired = VerifyRequest(*auth, r, kSecret, kExampleTime + 86401);
  EXPECT_EQ(expired.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(StartsWith(expired, "AccessDenied: Request has expired")) << expired.ToString();
  // Dated far in the future.
  Status early = VerifyRequest(*auth, r, kSecret, kExampleTime - kMaxSkewSeconds - 1);
  EXPECT_EQ(early.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(StartsWith(early, "RequestTimeTooSkewed"));

  Status wrong = VerifyRequest(*auth, r, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ", kExampleTime);
  EXPECT_EQ(wrong.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(wrong, "SignatureDoesNotMatch"));

  // Longer expiry than signed: the signature covers X-Amz-Expires.
  Request longer = r;
  for (QueryParam& p : longer.query) {
    if (p.name == "X-Amz-Expires") p.value = "604800";
  }
  EXPECT_TRUE(
      StartsWith(ParseAndVerify(longer, kSecret, kExampleTime + 90000), "SignatureDoesNotMatch"));
  // Another object.
  Request other = r;
  other.path = "/secret.txt";
  EXPECT_TRUE(StartsWith(ParseAndVerify(other), "SignatureDoesNotMatch"));
  // Another host.
  Request host = r;
  host.headers[0].value = "otherbucket.s3.amazonaws.com";
  EXPECT_TRUE(StartsWith(ParseAndVerify(host), "SignatureDoesNotMatch"));
  // An unsigned x-amz-* header added to a captured URL.
  Request extra = r;
  extra.headers.push_back({"X-Amz-Copy-Source", "/bucket/other"});
  Status unsigned_header = ParseAndVerify(extra);
  EXPECT_EQ(unsigned_header.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(unsigned_header, "AccessDenied")) << unsigned_header.ToString();
}

// ---- The streaming (aws-chunked) example -----------------------------------------------

TEST(SigV4Example, StreamingSeedAndChunkSignatures) {
  Request r;
  r.method = "PUT";
  r.path = "/examplebucket/chunkObject.txt";
  r.headers = {{"Host", "s3.amazonaws.com"},
               {"x-amz-date", std::string(kAmzDate)},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", std::string(kStreamingPayload)},
               {"Content-Encoding", "aws-chunked"},
               {"x-amz-decoded-content-length", "66560"},
               {"Content-Length", "66824"}};
  const std::string signed_list =
      "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
      "x-amz-decoded-content-length;x-amz-storage-class";
  Result<std::string> canonical = CanonicalRequest(r, Names(signed_list), kStreamingPayload);
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(Sha256Hex(*canonical),
            "cee3fed04b70f867d036f722359b0b1f2f0e5dc0efadbc082b76c4c60e316455");
  constexpr std::string_view kSeed =
      "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
  Result<std::string> seed = ComputeSignature(r, Names(signed_list), kStreamingPayload, kAmzDate,
                                              ExampleCredential(), kSecret);
  ASSERT_TRUE(seed.ok());
  EXPECT_EQ(*seed, kSeed);
  r.headers.push_back({"Authorization", Auth(signed_list, kSeed)});
  Result<ParsedAuth> auth = ParseRequestAuth(r);
  ASSERT_TRUE(auth.ok());
  ASSERT_TRUE(VerifyRequest(*auth, r, kSecret, kExampleTime).ok());

  const std::string chunk1(65536, 'a'), chunk2(1024, 'a');
  EXPECT_EQ(ChunkStringToSign(kAmzDate, kScope, kSeed, Sha256Hex(chunk1)),
            "AWS4-HMAC-SHA256-PAYLOAD\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "bf718b6f653bebc184e1479f1935b8da974d701b893afcf49e701f3e2f9f9c5a");

  // Walk the documented body exactly as a front end would.
  const std::string sigs[] = {"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                              "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                              "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"};
  std::string body = "10000;chunk-signature=" + sigs[0] + "\r\n" + chunk1 + "\r\n" +
                     "400;chunk-signature=" + sigs[1] + "\r\n" + chunk2 + "\r\n" +
                     "0;chunk-signature=" + sigs[2] + "\r\n\r\n";
  ASSERT_EQ(body.size(), 66824u);
  ChunkVerifier verifier(*auth, kSecret);
  std::string_view rest = body;
  std::string decoded;
  for (int i = 0; i < 3; ++i) {
    Result<std::optional<ChunkHeader>> h = ParseChunkHeader(rest);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    ASSERT_TRUE(h->has_value());
    const ChunkHeader& header = **h;
    EXPECT_EQ(header.signature, sigs[i]);
    rest.remove_prefix(header.header_bytes);
    ASSERT_GE(rest.size(), header.size + 2);
    const std::string_view data = rest.substr(0, header.size);
    EXPECT_EQ(verifier.Expected(Sha256Hex(data)), sigs[i]);
    ASSERT_TRUE(verifier.Verify(header.signature, Sha256Hex(data)).ok()) << i;
    decoded += data;
    ASSERT_EQ(rest.substr(header.size, 2), "\r\n");
    rest.remove_prefix(header.size + 2);
  }
  EXPECT_TRUE(rest.empty());
  EXPECT_EQ(decoded.size(), 66560u);
}

// SigningKey remembers derived keys: every part of the scope must pick its own, however the
// calls interleave.
TEST(SigningKeyTest, CachedKeysMatchTheDerivationForEachScope) {
  auto derive = [](std::string_view secret, std::string_view date, std::string_view region,
                   std::string_view service) {
    std::string k = HmacSha256("AWS4" + std::string(secret), date);
    k = HmacSha256(k, region);
    k = HmacSha256(k, service);
    return HmacSha256(k, "aws4_request");
  };
  const std::vector<std::array<std::string, 4>> scopes = {
      {std::string(kSecret), "20130524", "us-east-1", "s3"},
      {"other-secret", "20130524", "us-east-1", "s3"},
      {std::string(kSecret), "20130525", "us-east-1", "s3"},
      {std::string(kSecret), "20130524", "eu-west-1", "s3"},
      {std::string(kSecret), "20130524", "us-east-1", "sts"},
      // The parts' boundaries matter: "a" + "bc" is not "ab" + "c".
      {"x", "2013052", "4us-east-1", "s3"}};
  for (int round = 0; round < 2; ++round) {
    for (const auto& [secret, date, region, service] : scopes) {
      EXPECT_EQ(SigningKey(secret, date, region, service), derive(secret, date, region, service))
          << secret << " " << date << " " << region << " " << service;
    }
  }
}

TEST(ChunkVerifier, RejectsTamperingAndReorderingWithoutAdvancing) {
  const std::string key = SigningKey(kSecret, "20130524", "us-east-1", "s3");
  const std::string seed(64, '0');
  ChunkVerifier signer(key, std::string(kAmzDate), std::string(kScope), seed);
  const std::string s1 = signer.Expected(Sha256Hex("one"));
  ASSERT_TRUE(signer.Verify(s1, Sha256Hex("one")).ok());
  const std::string s2 = signer.Expected(Sha256Hex("two"));

  ChunkVerifier v(key, std::string(kAmzDate), std::string(kScope), seed);
  Status bad = v.Verify(s1, Sha256Hex("onf"));  // tampered data
  EXPECT_EQ(bad.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(bad, "SignatureDoesNotMatch"));
  EXPECT_EQ(v.previous_signature(), seed);            // a failure does not advance the chain
  EXPECT_FALSE(v.Verify(s2, Sha256Hex("two")).ok());  // out of order
  EXPECT_FALSE(v.Verify(std::string(63, 'a'), Sha256Hex("one")).ok());  // short signature
  EXPECT_TRUE(v.Verify(s1, Sha256Hex("one")).ok());
  EXPECT_FALSE(v.Verify(s1, Sha256Hex("one")).ok());  // replayed
  EXPECT_TRUE(v.Verify(s2, Sha256Hex("two")).ok());
}

// ---- Encoding ----------------------------------------------------------------------------

TEST(UriEncode, KeepsUnreservedOnly) {
  EXPECT_EQ(UriEncode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(UriEncode("a b/c+d=\xc3\xa9*$"), "a%20b%2Fc%2Bd%3D%C3%A9%2A%24");
  EXPECT_EQ(UriEncodePath("/photos/my cat+1.jpg"), "/photos/my%20cat%2B1.jpg");
  EXPECT_EQ(UriEncodePath("/a//b/"), "/a//b/");
  EXPECT_EQ(UriEncode(std::string("\0\xff", 2)), "%00%FF");
}

TEST(UriDecode, DecodesAndRejectsBadEscapes) {
  EXPECT_EQ(*UriDecode("a%20b%2fc+d", false), "a b/c+d");
  EXPECT_EQ(*UriDecode("a%20b+c", true), "a b c");
  for (std::string_view bad : {"%", "%4", "a%zz", "%g0", "%%"}) {
    EXPECT_EQ(UriDecode(bad, false).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // Encoding then decoding is the identity on every byte.
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  EXPECT_EQ(*UriDecode(UriEncode(all), false), all);
}

TEST(ParseQueryString, BareNamesRepeatsAndErrors) {
  Result<std::vector<QueryParam>> q = ParseQueryString("uploads&prefix=a%2Fb&x=1&x=&&y=%2B");
  ASSERT_TRUE(q.ok());
  const std::vector<QueryParam> want = {
      {"uploads", ""}, {"prefix", "a/b"}, {"x", "1"}, {"x", ""}, {"y", "+"}};
  EXPECT_EQ(*q, want);
  EXPECT_EQ(CanonicalQueryString(*q), "prefix=a%2Fb&uploads=&x=&x=1&y=%2B");
  EXPECT_TRUE(ParseQueryString("")->empty());
  EXPECT_FALSE(ParseQueryString("a=%zz").ok());
  EXPECT_FALSE(ParseQueryString("%=1").ok());
}

TEST(CanonicalRequest, HeaderValuesTrimmedCollapsedAndJoined) {
  Request r;
  r.method = "GET";
  r.path = "/";
  r.headers = {{"Host", "h"},
               {"My-Header1", "  a   b \t c  "},
               {"my-header2", "\"a   b\""},
               {"MY-HEADER1", "d"}};
  Result<std::string> c = CanonicalRequest(r, Names("host;my-header1;my-header2"), kEmptySha256);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c,
            "GET\n/\n\nhost:h\nmy-header1:a b c,d\nmy-header2:\"a b\"\n\n"
            "host;my-header1;my-header2\n" +
                std::string(kEmptySha256));
}

TEST(CanonicalRequest, RejectsMalformedPieces) {
  Request r = GetObjectRequest();
  const auto names = Names("host;range");
  EXPECT_TRUE(CanonicalRequest(r, names, kUnsignedPayload).ok());
  EXPECT_TRUE(CanonicalRequest(r, names, kStreamingPayload).ok());
  EXPECT_FALSE(CanonicalRequest(r, names, "UNSIGNED").ok());
  EXPECT_FALSE(CanonicalRequest(r, names, std::string(64, 'A')).ok());  // upper-case hex
  EXPECT_FALSE(CanonicalRequest(r, names, std::string(63, 'a')).ok());
  EXPECT_FALSE(CanonicalRequest(r, Names("host;x-missing"), kEmptySha256).ok());
  EXPECT_FALSE(CanonicalRequest(r, Names("Host"), kEmptySha256).ok());
  EXPECT_FALSE(CanonicalRequest(r, {}, kEmptySha256).ok());
  Request bad = r;
  bad.path = "test.txt";
  EXPECT_FALSE(CanonicalRequest(bad, names, kEmptySha256).ok());
  bad = r;
  bad.method = "GET\nX";
  EXPECT_FALSE(CanonicalRequest(bad, names, kEmptySha256).ok());
  bad = r;
  bad.headers[1].value = "bytes=0-9\r\nx-amz-date:1";  // header injection
  EXPECT_FALSE(CanonicalRequest(bad, names, kEmptySha256).ok());
}

// ---- Parsing errors ----------------------------------------------------------------------

constexpr std::string_view kSig64 =
    "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

TEST(ParseAuthorizationHeader, AcceptsBothSeparatorStyles) {
  const std::string compact = Auth("host;x-amz-date", kSig64);
  Result<ParsedAuth> a = ParseAuthorizationHeader(compact, kAmzDate);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->mode, AuthMode::kHeader);
  EXPECT_EQ(a->credential.access_key_id, kAkid);
  EXPECT_EQ(a->credential.region, "us-east-1");
  EXPECT_EQ(a->signed_headers, Names("host;x-amz-date"));
  EXPECT_EQ(a->request_time, kExampleTime);
  const std::string spaced =
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/"
      "s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=" +
      std::string(kSig64);
  EXPECT_TRUE(ParseAuthorizationHeader(spaced, kAmzDate).ok());
}

TEST(ParseAuthorizationHeader, RejectsEveryMalformedPiece) {
  const std::string cred = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
  const std::string sh = "SignedHeaders=host;x-amz-date";
  const std::string sig = "Signature=" + std::string(kSig64);
  const std::string ok = "AWS4-HMAC-SHA256 " + cred + "," + sh + "," + sig;
  ASSERT_TRUE(ParseAuthorizationHeader(ok, kAmzDate).ok());

  const std::vector<std::string> bad = {
      "",
      "AWS4-HMAC-SHA256",
      "AWS4-HMAC-SHA256 ",
      "AWS4-HMAC-SHA1 " + cred + "," + sh + "," + sig,  // unknown algorithm
      "AWS " + std::string(kAkid) + ":abc",             // SigV2
      "aws4-hmac-sha256 " + cred + "," + sh + "," + sig,
      "AWS4-HMAC-SHA256 " + sh + "," + sig,                            // no Credential
      "AWS4-HMAC-SHA256 " + cred + "," + sig,                          // no SignedHeaders
      "AWS4-HMAC-SHA256 " + cred + "," + sh,                           // no Signature
      "AWS4-HMAC-SHA256 " + cred + "," + sh + "," + sig + "," + sig,   // repeated
      "AWS4-HMAC-SHA256 " + cred + "," + sh + "," + sig + ",Foo=bar",  // unknown
      "AWS4-HMAC-SHA256 " + cred + "," + sh + "," + sig + ",",         // empty component
      "AWS4-HMAC-SHA256 " + cred + ";" + sh + ";" + sig,
      // Credential.
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AK ID/20130524/us-east-1/s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/2013052/us-east-1/s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20131324/us-east-1/s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20130230/us-east-1/s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20130524//s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20130524/US-EAST-1/s3/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/iam/aws4_request," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_req," + sh + "," + sig,
      "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request/x," + sh + "," + sig,
      // Scope date differs from the request date.
      "AWS4-HMAC-SHA256 Credential=AKID/20130523/us-east-1/s3/aws4_request," + sh + "," + sig,
      // SignedHeaders.
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=," + sig,
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=x-amz-date;host," + sig,   // unsorted
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host;host," + sig,         // repeated
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=range;x-amz-date," + sig,  // no host
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=Host;x-amz-date," + sig,   // upper case
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host;;x-amz-date," + sig,
      "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host;x amz," + sig,
      // Signature.
      "AWS4-HMAC-SHA256 " + cred + "," + sh + ",Signature=",
      "AWS4-HMAC-SHA256 " + cred + "," + sh + ",Signature=" + std::string(kSig64.substr(1)),
      "AWS4-HMAC-SHA256 " + cred + "," + sh + ",Signature=" + std::string(kSig64) + "0",
      "AWS4-HMAC-SHA256 " + cred + "," + sh + ",Signature=" + std::string(64, 'F'),
      "AWS4-HMAC-SHA256 " + cred + "," + sh + ",Signature=" + std::string(64, 'g'),
  };
  for (const std::string& header : bad) {
    Result<ParsedAuth> a = ParseAuthorizationHeader(header, kAmzDate);
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << header;
  }
}

TEST(ParseAmzDate, ParsesAndRejects) {
  EXPECT_EQ(*ParseAmzDate("20130524T000000Z"), kExampleTime);
  EXPECT_EQ(*ParseAmzDate("19700101T000000Z"), 0);
  EXPECT_EQ(*ParseAmzDate("20000229T235959Z"), 951868799);
  for (std::string_view bad :
       {"", "20130524T000000", "20130524T000000z", "20130524 000000Z", "2013-05-24T00:00:00Z",
        "20130524T240000Z", "20130524T006000Z", "20130524T000060Z", "20130001T000000Z",
        "20130532T000000Z", "20010229T000000Z", "21000229T000000Z", "2013052aT000000Z",
        "20130524T0000-0Z", "20130524T000000Z ", "Fri, 24 May 2013 00:00:00 GMT"}) {
    EXPECT_FALSE(ParseAmzDate(bad).ok()) << bad;
  }
  const std::string good =
      "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,"
      "SignedHeaders=host,Signature=" +
      std::string(kSig64);
  EXPECT_FALSE(ParseAuthorizationHeader(good, "20130524T250000Z").ok());
  EXPECT_FALSE(ParseAuthorizationHeader(good, "20130525T000000Z").ok());  // scope mismatch
  EXPECT_TRUE(ParseAuthorizationHeader(good, "20130524T235959Z").ok());
}

TEST(ParsePresignedQuery, RejectsEveryMalformedPiece) {
  const std::vector<QueryParam> good = *ParseQueryString(kPresignedQuery);
  ASSERT_TRUE(ParsePresignedQuery(good).ok());
  // Each parameter missing.
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<QueryParam> q = good;
    q.erase(q.begin() + static_cast<long>(i));
    EXPECT_EQ(ParsePresignedQuery(q).status().code(), StatusCode::kInvalidArgument) << i;
    // And each repeated.
    q = good;
    q.push_back(good[i]);
    EXPECT_EQ(ParsePresignedQuery(q).status().code(), StatusCode::kInvalidArgument) << i;
  }
  auto with = [&](std::string_view name, std::string value) {
    std::vector<QueryParam> q = good;
    for (QueryParam& p : q) {
      if (p.name == name) p.value = std::move(value);
    }
    return ParsePresignedQuery(q);
  };
  EXPECT_TRUE(with("X-Amz-Expires", "1").ok());
  EXPECT_TRUE(with("X-Amz-Expires", "604800").ok());
  for (std::string bad : {"0", "604801", "-7", "", "abc", "1e3", "99999999999999999999", " 60"}) {
    EXPECT_FALSE(with("X-Amz-Expires", bad).ok()) << bad;
  }
  EXPECT_FALSE(with("X-Amz-Algorithm", "AWS4-HMAC-SHA1").ok());
  EXPECT_FALSE(with("X-Amz-Date", "20130524").ok());
  EXPECT_FALSE(with("X-Amz-Date", "20130525T000000Z").ok());  // scope date mismatch
  EXPECT_FALSE(with("X-Amz-Credential", "AKID/20130524/us-east-1/s3").ok());
  EXPECT_FALSE(with("X-Amz-SignedHeaders", "x-amz-date").ok());
  EXPECT_FALSE(with("X-Amz-SignedHeaders", "x-amz-date;host").ok());
  EXPECT_FALSE(with("X-Amz-Signature", "abc").ok());
}

TEST(ParseRequestAuth, DecidesTheMode) {
  Request anonymous;
  anonymous.method = "GET";
  anonymous.path = "/";
  anonymous.headers = {{"Host", "h"}};
  EXPECT_EQ(ParseRequestAuth(anonymous).status().code(), StatusCode::kNotFound);

  Request both = PresignedRequest();
  both.headers.push_back({"Authorization", Auth("host", kSig64)});
  EXPECT_EQ(ParseRequestAuth(both).status().code(), StatusCode::kInvalidArgument);

  Request no_date = GetObjectRequest();
  no_date.headers.erase(no_date.headers.begin() + 3);
  no_date.headers.push_back({"Authorization", Auth("host", kSig64)});
  EXPECT_EQ(ParseRequestAuth(no_date).status().code(), StatusCode::kInvalidArgument);

  // A Date header in the ISO form stands in for x-amz-date and must then be signed.
  Request date_only = no_date;
  date_only.headers.push_back({"Date", std::string(kAmzDate)});
  EXPECT_TRUE(ParseRequestAuth(date_only).ok());
}

// ---- Verification ------------------------------------------------------------------------

Request SignedGetObject() {
  Request r = GetObjectRequest();
  r.headers.push_back({"Authorization", Auth("host;range;x-amz-content-sha256;x-amz-date",
                                             "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48d"
                                             "d91039c6036bdb41")});
  return r;
}

TEST(VerifyRequest, ClockSkew) {
  const Request r = SignedGetObject();
  EXPECT_TRUE(ParseAndVerify(r, kSecret, kExampleTime + kMaxSkewSeconds).ok());
  EXPECT_TRUE(ParseAndVerify(r, kSecret, kExampleTime - kMaxSkewSeconds).ok());
  for (int64_t now : {kExampleTime + kMaxSkewSeconds + 1, kExampleTime - kMaxSkewSeconds - 1,
                      int64_t{0}, int64_t{4'000'000'000}}) {
    Status s = ParseAndVerify(r, kSecret, now);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << now;
    EXPECT_TRUE(StartsWith(s, "RequestTimeTooSkewed")) << s.ToString();
  }
  EXPECT_FALSE(ParseAndVerify(r, kSecret, INT64_MAX).ok());
  EXPECT_FALSE(ParseAndVerify(r, kSecret, INT64_MIN).ok());
}

TEST(VerifyRequest, WrongSecretAndTampering) {
  const Request r = SignedGetObject();
  ASSERT_TRUE(ParseAndVerify(r).ok());

  Status wrong = ParseAndVerify(r, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz");
  EXPECT_EQ(wrong.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(StartsWith(wrong, "SignatureDoesNotMatch"));
  EXPECT_TRUE(StartsWith(ParseAndVerify(r, ""), "SignatureDoesNotMatch"));

  Request t = r;
  t.headers[1].value = "bytes=0-99";  // a signed header's value
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "SignatureDoesNotMatch"));
  t = r;
  t.method = "DELETE";
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "SignatureDoesNotMatch"));
  t = r;
  t.path = "/test.txT";
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "SignatureDoesNotMatch"));
  t = r;
  t.query.push_back({"versionId", "1"});
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "SignatureDoesNotMatch"));
  t = r;
  t.headers[2].value = kUnsignedPayload;  // claims another payload hash
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "SignatureDoesNotMatch"));
  t = r;
  t.headers[1].value = "  bytes=0-9 ";  // whitespace is canonicalised away: still valid
  EXPECT_TRUE(ParseAndVerify(t).ok());
  t = r;
  t.headers.push_back({"Range", "bytes=10-19"});  // a second value for a signed header
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "SignatureDoesNotMatch"));
  t = r;
  t.headers.push_back({"x-amz-meta-evil", "1"});  // an unsigned x-amz-* header
  EXPECT_TRUE(StartsWith(ParseAndVerify(t), "AccessDenied"));
  t = r;
  t.headers.push_back({"User-Agent", "curl"});  // unsigned ordinary headers are fine
  EXPECT_TRUE(ParseAndVerify(t).ok());
  t = r;
  t.headers.erase(t.headers.begin() + 1);  // a signed header removed
  EXPECT_EQ(ParseAndVerify(t).code(), StatusCode::kInvalidArgument);
  t = r;
  t.headers.erase(t.headers.begin() + 2);  // no x-amz-content-sha256
  EXPECT_EQ(ParseAndVerify(t).code(), StatusCode::kInvalidArgument);
  t = r;
  t.headers[2].value = "not-a-hash";
  EXPECT_EQ(ParseAndVerify(t).code(), StatusCode::kInvalidArgument);

  // The request date must be signed.
  Request unsigned_date = GetObjectRequest();
  const auto names = Names("host;range;x-amz-content-sha256");
  Result<std::string> sig =
      ComputeSignature(unsigned_date, names, kEmptySha256, kAmzDate, ExampleCredential(), kSecret);
  ASSERT_TRUE(sig.ok());
  unsigned_date.headers.push_back({"Authorization", Auth("host;range;x-amz-content-sha256", *sig)});
  EXPECT_TRUE(StartsWith(ParseAndVerify(unsigned_date), "AccessDenied"));
}

// ---- Chunk headers -----------------------------------------------------------------------

TEST(ParseChunkHeader, ParsesAndRejects) {
  const std::string sig(kSig64);
  Result<std::optional<ChunkHeader>> h =
      ParseChunkHeader("10000;chunk-signature=" + sig + "\r\nxx");
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ((*h)->size, 0x10000u);
  EXPECT_EQ((*h)->signature, sig);
  EXPECT_EQ((*h)->header_bytes, 5 + 17 + 64 + 2u);

  EXPECT_EQ((*ParseChunkHeader("4000000;chunk-signature=" + sig + "\r\n"))->size, kMaxChunkBytes);
  EXPECT_EQ((*ParseChunkHeader("0000000000000400;chunk-signature=" + sig + "\r\n"))->size, 1024u);
  EXPECT_EQ((*ParseChunkHeader("aBc;chunk-signature=" + sig + "\r\n"))->size, 0xabcu);

  // Incomplete: read more.
  for (std::string partial : {std::string(), std::string("1"), "10000;chunk-signature=" + sig,
                              "10000;chunk-signature=" + sig + "\r"}) {
    Result<std::optional<ChunkHeader>> p = ParseChunkHeader(partial);
    ASSERT_TRUE(p.ok()) << partial;
    EXPECT_FALSE(p->has_value()) << partial;
  }

  const std::vector<std::string> bad = {
      "4000001;chunk-signature=" + sig + "\r\n",            // over 64 MiB
      "ffffffffffffffff;chunk-signature=" + sig + "\r\n",   // 2^64 - 1
      "10000000000000000;chunk-signature=" + sig + "\r\n",  // 17 digits: would overflow
      "1g;chunk-signature=" + sig + "\r\n",                 // non-hex
      "-1;chunk-signature=" + sig + "\r\n",
      " 10;chunk-signature=" + sig + "\r\n",
      ";chunk-signature=" + sig + "\r\n",  // no size
      "10\r\n",                            // no signature
      "10;\r\n",
      "10;chunk-signature=\r\n",
      "10;chunk-signature=" + sig.substr(1) + "\r\n",         // short
      "10;chunk-signature=" + sig + "0\r\n",                  // long
      "10;chunk-signature=" + std::string(64, 'G') + "\r\n",  // non-hex
      "10;chunk-signature=" + std::string(64, 'A') + "\r\n",  // upper case
      "10;chunk-sig=" + sig + "\r\n",
      "10;chunk-signature=" + sig + ";x=y\r\n",
      std::string(kMaxChunkHeaderBytes, '1'),  // no CRLF within the limit
      std::string(200, 'a') + "\r\n",
  };
  for (const std::string& b : bad) {
    Result<std::optional<ChunkHeader>> r = ParseChunkHeader(b);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << b;
  }
}

// ---- Robustness: hostile bytes into every parser ------------------------------------------

std::string RandomBytes(std::mt19937_64& rng, size_t max_len, std::string_view alphabet = {}) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::string s(len(rng), '\0');
  for (char& c : s) {
    c = alphabet.empty() ? static_cast<char>(rng() & 0xff) : alphabet[rng() % alphabet.size()];
  }
  return s;
}

std::string Mutate(std::mt19937_64& rng, std::string s) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits; ++i) {
    switch (rng() % 3) {
      case 0:
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng() & 0xff);
        break;
      case 1:
        if (!s.empty()) s.erase(rng() % s.size(), 1 + rng() % 8);
        break;
      default:
        s.insert(rng() % (s.size() + 1), 1, static_cast<char>(rng() & 0xff));
    }
  }
  return s;
}

TEST(Robustness, RandomBytesNeverCrashAndNeverParseAsValidAuth) {
  std::mt19937_64 rng(20130524);
  constexpr std::string_view kAlphabet = "AWS4-HMAC-SHA256 Credential=/,;SignedHeaders%0aZT \r\n";
  for (int i = 0; i < 20000; ++i) {
    const std::string s = RandomBytes(rng, 300, i % 2 ? kAlphabet : std::string_view());
    EXPECT_FALSE(ParseAuthorizationHeader(s, kAmzDate).ok());
    EXPECT_FALSE(ParseAmzDate(s).ok() && s.size() != 16);
    (void)UriDecode(s, i % 2 == 0);
    (void)ParseQueryString(s);
    Result<std::optional<ChunkHeader>> h = ParseChunkHeader(s);
    if (h.ok() && h->has_value()) {
      EXPECT_LE((*h)->size, kMaxChunkBytes);
      EXPECT_LE((*h)->header_bytes, s.size());
    }
    std::vector<QueryParam> q = {{"X-Amz-Algorithm", s}, {RandomBytes(rng, 20), s}};
    EXPECT_FALSE(ParsePresignedQuery(q).ok());
  }
}

TEST(Robustness, MutatedValidInputsNeverCrashOrVerifyAnotherRequest) {
  std::mt19937_64 rng(42);
  const Request header_request = SignedGetObject();
  const Request presigned = PresignedRequest();
  const std::string header_canonical = *CanonicalRequest(
      GetObjectRequest(), Names("host;range;x-amz-content-sha256;x-amz-date"), kEmptySha256);
  const std::string presigned_canonical =
      *CanonicalRequest(presigned, Names("host"), kUnsignedPayload, "X-Amz-Signature");
  const std::string auth_value = header_request.headers.back().value;
  const std::string chunk = "400;chunk-signature=" + std::string(kSig64) + "\r\n";
  int header_verified = 0, presigned_verified = 0;
  for (int i = 0; i < 5000; ++i) {
    // Header mode: mutate one header's value (sometimes its name).
    Request r = header_request;
    const size_t which = rng() % r.headers.size();
    r.headers[which].value = Mutate(rng, r.headers[which].value);
    if (rng() % 4 == 0) r.headers[which].name = Mutate(rng, r.headers[which].name);
    Result<ParsedAuth> a = ParseRequestAuth(r);
    if (a.ok() && VerifyRequest(*a, r, kSecret, kExampleTime).ok()) {
      // Only a mutation the canonical form erases (blanks around a value, an unsigned
      // non-x-amz header) may still verify: the signed content must be the original's.
      ++header_verified;
      std::string_view payload;
      for (const Header& h : r.headers) {
        if (h.name == "x-amz-content-sha256") payload = h.value;
      }
      Result<std::string> c = CanonicalRequest(r, a->signed_headers, payload);
      ASSERT_TRUE(c.ok());
      EXPECT_EQ(*c, header_canonical);
    }

    // Presigned mode: mutate one query name or value, or the path.
    Request p = presigned;
    QueryParam& qp = p.query[rng() % p.query.size()];
    if (rng() % 3 == 0) {
      qp.name = Mutate(rng, qp.name);
    } else {
      qp.value = Mutate(rng, qp.value);
    }
    if (rng() % 5 == 0) p.path = Mutate(rng, p.path);
    Result<ParsedAuth> pa = ParseRequestAuth(p);
    if (pa.ok() && VerifyRequest(*pa, p, kSecret, kExampleTime).ok()) {
      ++presigned_verified;
      Result<std::string> c =
          CanonicalRequest(p, pa->signed_headers, kUnsignedPayload, "X-Amz-Signature");
      ASSERT_TRUE(c.ok());
      EXPECT_EQ(*c, presigned_canonical);
    }

    (void)ParseAuthorizationHeader(Mutate(rng, auth_value), Mutate(rng, std::string(kAmzDate)));
    (void)ParseChunkHeader(Mutate(rng, chunk));
  }
  // Most mutations must be refused.
  EXPECT_LT(header_verified, 500);
  EXPECT_LT(presigned_verified, 50);
}

}  // namespace
}  // namespace weft::sigv4
