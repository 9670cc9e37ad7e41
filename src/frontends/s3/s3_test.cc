// Unit tests of the S3 front end on in-memory fakes: a LocalVolume over MemKvStore and
// MemChunkStore, an IdentityStore over MemKvStore, and in-memory HTTP bodies. Requests are
// signed with SigV4 as a client would sign them. Real clients (boto3, awscli, s3cmd, rclone)
// are exercised by tests/integration/test_s3_*.py.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "access/recording_volume.h"
#include "auth/identity_store.h"
#include "auth/sigv4.h"
#include "base/ascii.h"
#include "base/bytes.h"
#include "base/clock.h"
#include "base/hash.h"
#include "chunk/chunk_id.h"
#include "chunk/mem_chunk_store.h"
#include "frontends/s3/listing.h"
#include "frontends/s3/request.h"
#include "frontends/s3/s3_error.h"
#include "frontends/s3/s3_frontend.h"
#include "frontends/s3/xml.h"
#include "io/mem_file_system.h"
#include "meta/kv_store.h"
#include "net/test_http.h"
#include "vfs/local_volume.h"

namespace weft::s3 {
namespace {

constexpr int64_t kNow = 1'780'000'000;  // seconds; 2026-05-28

struct Reply {
  int status;
  std::map<std::string, std::string> headers;
  std::string body;
  bool HasCode(std::string_view code) const {
    return body.find("<Code>" + std::string(code) + "</Code>") != std::string::npos;
  }
};

class S3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.SetNanos(kNow * 1'000'000'000);
    chunks_ = NewMemChunkStore();
    auto volume = NewLocalVolume(NewMemKvStore(), chunks_);
    ASSERT_TRUE(volume.ok());
    volume_ = std::move(volume).value();
    auto identities = auth::IdentityStore::Open(NewMemKvStore(), std::string(32, 'k'), &clock_);
    ASSERT_TRUE(identities.ok());
    identities_ = std::move(identities).value();
    ASSERT_TRUE(identities_->ImportKey("root", "ROOTACCESSKEY0000000", "rootsecret").ok());
    S3Options options;
    options.clock = &clock_;
    recording_ = std::make_unique<access::RecordingVolume>(volume_.get());
    authorized_ = std::make_unique<access::AuthorizedVolume>(recording_.get(), identities_.get());
    frontend_ = std::make_unique<S3Frontend>(*authorized_, options);
  }

  // Sends a request signed by `access`/`secret` (or anonymous when access is empty).
  // `make_body`, when given, builds the body from the request's signature (aws-chunked chains
  // chunk signatures to it) and `payload_hash` is what x-amz-content-sha256 says.
  using BodyMaker = std::function<std::string(const sigv4::ChunkVerifier& seed)>;
  Reply Send(std::string method, std::string target, std::string body = "",
             std::vector<net::HttpHeader> headers = {}, std::string access = "ROOTACCESSKEY0000000",
             std::string secret = "rootsecret", std::string payload_hash = "",
             BodyMaker make_body = nullptr) {
    net::HttpRequest http;
    http.method = method;
    http.target = target;
    size_t q = target.find('?');
    http.path = target.substr(0, q);
    http.query = q == std::string::npos ? "" : target.substr(q + 1);
    http.content_length = body.size();
    http.headers = headers;
    http.headers.push_back({"Host", "127.0.0.1:9000"});
    if (!access.empty()) {
      time_t now = static_cast<time_t>(clock_.NowNanos() / 1'000'000'000 + sign_skew_seconds_);
      struct tm tm_utc;
      gmtime_r(&now, &tm_utc);
      char stamp[32];
      strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm_utc);
      std::string amz_date = stamp;
      if (payload_hash.empty()) payload_hash = sigv4::Sha256Hex(body);
      http.headers.push_back({"x-amz-date", amz_date});
      http.headers.push_back({"x-amz-content-sha256", payload_hash});
      sigv4::Request req;
      req.method = method;
      req.path = *sigv4::UriDecode(http.path, false);
      req.query = *sigv4::ParseQueryString(http.query);
      std::vector<std::string> signed_headers;
      for (const auto& h : http.headers) {
        std::string name = AsciiLower(h.name);
        req.headers.push_back({name, h.value});
        signed_headers.push_back(name);
      }
      std::sort(signed_headers.begin(), signed_headers.end());
      sigv4::Credential cred{access, amz_date.substr(0, 8), "us-east-1", "s3"};
      auto signature =
          sigv4::ComputeSignature(req, signed_headers, payload_hash, amz_date, cred, secret);
      EXPECT_TRUE(signature.ok()) << signature.status().ToString();
      std::string joined;
      for (const auto& n : signed_headers) joined += (joined.empty() ? "" : ";") + n;
      http.headers.push_back({"Authorization", "AWS4-HMAC-SHA256 Credential=" + access + "/" +
                                                   amz_date.substr(0, 8) +
                                                   "/us-east-1/s3/aws4_request, "
                                                   "SignedHeaders=" +
                                                   joined + ", Signature=" + *signature});
      if (make_body) {
        std::string scope = cred.Scope();
        sigv4::ChunkVerifier seed(sigv4::SigningKey(secret, cred.date, cred.region, "s3"), amz_date,
                                  scope, *signature);
        body = make_body(seed);
        http.content_length = body.size();
      }
    }
    net::StringBodyReader reader(body);
    net::RecordingResponseWriter response;
    frontend_->Handle(http, reader, response);
    return Reply{response.status_, response.headers_, response.body_};
  }

  FakeClock clock_;
  int64_t sign_skew_seconds_ = 0;  // the client's clock minus the server's
  std::shared_ptr<ChunkStore> chunks_;
  std::unique_ptr<Volume> volume_;
  std::unique_ptr<auth::IdentityStore> identities_;
  std::unique_ptr<access::RecordingVolume> recording_;
  std::unique_ptr<access::AuthorizedVolume> authorized_;
  std::unique_ptr<S3Frontend> frontend_;
};

TEST(S3ValidationTest, BucketNames) {
  EXPECT_TRUE(ValidateBucketName("my-data.v2").ok());
  for (std::string bad :
       std::vector<std::string>{"ab", "UPPER", "-lead", "trail-", "a..b", "192.168.1.1", "a_b",
                                std::string(64, 'a'), ".weft-uploads"}) {
    Status s = ValidateBucketName(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(ErrorFromStatus(s).code, "InvalidBucketName") << bad;
  }
}

TEST(S3ValidationTest, HostileKeysAreRejected) {
  EXPECT_TRUE(ValidateKey("a/b/c.jpg").ok());
  EXPECT_TRUE(ValidateKey("dir/").ok());
  for (std::string bad :
       std::vector<std::string>{"../etc/passwd", "a/../b", "./a", "a/./b", "a//b", "/a",
                                std::string("a\0b", 3), "a\\b", std::string(1025, 'k')}) {
    EXPECT_FALSE(ValidateKey(bad).ok()) << bad;
  }
  EXPECT_EQ(ErrorFromStatus(ValidateKey(std::string(300, 'k'))).code, "KeyTooLongError");
}

TEST(S3ValidationTest, ErrorsMapToS3Codes) {
  EXPECT_EQ(ErrorFromStatus(NotFound("x")).code, "NoSuchKey");
  EXPECT_EQ(ErrorFromStatus(NotFound("x"), Missing::kBucket).http_status, 404);
  EXPECT_EQ(ErrorFromStatus(PermissionDenied(Reason::kSignatureDoesNotMatch, "bad")).code,
            "SignatureDoesNotMatch");
  EXPECT_EQ(
      ErrorFromStatus(Status(StatusCode::kFailedPrecondition, Reason::kRequestTimeTooSkewed, "x"))
          .http_status,
      403);
  EXPECT_EQ(ErrorFromStatus(NotADirectory("a is a file")).code, "ObjectConflict");
  EXPECT_EQ(ErrorFromStatus(Internal("bug")).http_status, 500);
  EXPECT_EQ(XmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;\"'");
  EXPECT_FALSE(XmlDocument::Parse("<Delete><Object>", "Delete").ok());
  EXPECT_FALSE(XmlDocument::Parse("<Other/>", "Delete").ok());
  auto doc = XmlDocument::Parse(
      R"(<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key> k </Key></Object></Delete>)",
      "Delete");
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ((*doc)->root().Children("Object").size(), 1u);
  EXPECT_EQ((*doc)->root().Children("Object")[0].Child("Key")->text(), "k");
}

TEST_F(S3Test, KeyWalkerListsInS3Order) {
  ASSERT_EQ(Send("PUT", "/bk1").status, 200);
  for (std::string key : {"a/b", "a-1", "a.txt", "a0", "a/c/d", "z"}) {
    ASSERT_EQ(Send("PUT", "/bk1/" + key, "x").status, 200) << key;
  }
  KeyWalker::Options all;
  all.bucket = "bk1";
  KeyWalker walker(*volume_, RequestContext{}, all);
  std::vector<std::string> keys;
  while (true) {
    auto next = walker.Next();
    ASSERT_TRUE(next.ok());
    if (!next->has_value()) break;
    if (!(*next)->is_directory) keys.push_back((*next)->key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a-1", "a.txt", "a/b", "a/c/d", "a0", "z"}));

  // Starting inside the order: after "a.txt" comes the directory "a" (as "a/").
  KeyWalker::Options after = all;
  after.start_after = "a.txt";
  KeyWalker from(*volume_, RequestContext{}, after);
  auto first = from.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->key, "a/");
}

// A GET streams its range window by window from the chunks that hold it: every range, whether
// it starts or ends inside a chunk or a window, gets exactly its bytes.
TEST_F(S3Test, RangesOfAManyChunkObjectGetTheirBytes) {
  ASSERT_EQ(Send("PUT", "/data").status, 200);
  std::string body(3 * (1 << 20) + 123, '\0');
  uint64_t x = 88172645463325252ull;  // xorshift: content-defined cuts need varied bytes
  for (char& c : body) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  ASSERT_EQ(Send("PUT", "/data/big", body).status, 200);
  EXPECT_EQ(Send("GET", "/data/big").body, body);
  for (auto [first, last] :
       std::vector<std::pair<size_t, size_t>>{{0, 0},
                                              {1, 70000},
                                              {500000, 2600000},
                                              {524287, 524288},
                                              {body.size() - 1, body.size() - 1}}) {
    Reply got = Send("GET", "/data/big", "",
                     {{"Range", "bytes=" + std::to_string(first) + "-" + std::to_string(last)}});
    EXPECT_EQ(got.status, 206);
    EXPECT_EQ(got.body, body.substr(first, last - first + 1)) << first << "-" << last;
  }
}

// A GET whose bytes cannot be read (here: its chunks are gone from the store) is a clean
// server error, not a 200 with a short body nor a NoSuchKey: the object exists.
TEST_F(S3Test, AnObjectWhoseBytesCannotBeReadIsAServerError) {
  ASSERT_EQ(Send("PUT", "/data").status, 200);
  ASSERT_EQ(Send("PUT", "/data/lost", std::string(200'000, 'x')).status, 200);
  ASSERT_TRUE(chunks_->Sweep([](const ChunkId&) { return false; }).ok());
  Reply got = Send("GET", "/data/lost");
  EXPECT_EQ(got.status, 500);
  EXPECT_TRUE(got.HasCode("InternalError")) << got.body;
  EXPECT_EQ(Send("HEAD", "/data/lost").status, 200);  // its metadata is intact
}

TEST_F(S3Test, PutGetRoundTripWithMetadataAndRanges) {
  ASSERT_EQ(Send("PUT", "/data").status, 200);
  std::string body = "hello, weft";
  Reply put = Send("PUT", "/data/dir/obj.txt", body,
                   {{"Content-Type", "text/plain"}, {"x-amz-meta-owner", "alice"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.headers["etag"], "\"" + Md5Hex(AsBytes(body)) + "\"");

  Reply get = Send("GET", "/data/dir/obj.txt");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, body);
  EXPECT_EQ(get.headers["content-type"], "text/plain");
  EXPECT_EQ(get.headers["x-amz-meta-owner"], "alice");

  Reply range = Send("GET", "/data/dir/obj.txt", "", {{"Range", "bytes=7-"}});
  EXPECT_EQ(range.status, 206);
  EXPECT_EQ(range.body, "weft");
  EXPECT_EQ(range.headers["content-range"], "bytes 7-10/11");
  EXPECT_EQ(Send("GET", "/data/dir/obj.txt", "", {{"Range", "bytes=-3"}}).body, "eft");
  EXPECT_EQ(Send("GET", "/data/dir/obj.txt", "", {{"Range", "bytes=99-"}}).status, 416);

  std::string etag = put.headers["etag"];
  EXPECT_EQ(Send("GET", "/data/dir/obj.txt", "", {{"If-None-Match", etag}}).status, 304);
  EXPECT_EQ(Send("GET", "/data/dir/obj.txt", "", {{"If-Match", "\"nope\""}}).status, 412);
  EXPECT_EQ(Send("HEAD", "/data/dir/obj.txt").headers["content-type"], "text/plain");
  EXPECT_EQ(Send("GET", "/data/dir/obj.txt?response-content-type=a%2Fb").headers["content-type"],
            "a/b");
  // A response-* value that would forge a header is refused (found by fuzz_s3_request).
  Reply forged = Send("GET", "/data/dir/obj.txt?response-content-type=a%0D%0ASet-Cookie%3A%20x");
  EXPECT_EQ(forged.status, 400);
  EXPECT_TRUE(forged.HasCode("InvalidArgument"));
  EXPECT_TRUE(Send("GET", "/data/missing").HasCode("NoSuchKey"));
  EXPECT_TRUE(Send("GET", "/nobucket/x").HasCode("NoSuchBucket"));
  // A key below an object conflicts.
  EXPECT_TRUE(Send("PUT", "/data/dir/obj.txt/sub", "x").HasCode("ObjectConflict"));
}

TEST_F(S3Test, AuthenticationAndAuthorisation) {
  ASSERT_EQ(Send("PUT", "/data").status, 200);
  ASSERT_EQ(Send("PUT", "/data/alice/a", "1").status, 200);
  ASSERT_EQ(Send("PUT", "/data/bob/b", "2").status, 200);

  EXPECT_TRUE(Send("GET", "/data/alice/a", "", {}, "").HasCode("AccessDenied"));
  EXPECT_TRUE(Send("GET", "/data/alice/a", "", {}, "ROOTACCESSKEY0000000", "wrong")
                  .HasCode("SignatureDoesNotMatch"));
  EXPECT_TRUE(Send("GET", "/data/alice/a", "", {}, "NOSUCHKEY00000000000", "x")
                  .HasCode("InvalidAccessKeyId"));

  ASSERT_TRUE(identities_->CreateUser("alice", {}).ok());
  auto key = identities_->CreateKey("alice");
  ASSERT_TRUE(key.ok());
  auth::Rule rule;
  rule.subject = "user:alice";
  rule.prefix = "/data/alice/";
  rule.permissions = auth::kRead | auth::kWrite | auth::kList;
  ASSERT_TRUE(identities_->AddRule(rule).ok());
  auto as_alice = [&](std::string method, std::string target, std::string body = "") {
    return Send(method, target, body, {}, key->access_key_id, key->secret_key);
  };
  EXPECT_EQ(as_alice("GET", "/data/alice/a").body, "1");
  EXPECT_EQ(as_alice("PUT", "/data/alice/new", "n").status, 200);
  EXPECT_TRUE(as_alice("GET", "/data/bob/b").HasCode("AccessDenied"));
  EXPECT_TRUE(as_alice("PUT", "/data/bob/x", "x").HasCode("AccessDenied"));
  EXPECT_TRUE(as_alice("GET", "/data?list-type=2").HasCode("AccessDenied"));
  EXPECT_EQ(as_alice("GET", "/data?list-type=2&prefix=alice/").status, 200);
  // A copy source outside the caller's rights is refused before any handler runs.
  Reply copy = Send("PUT", "/data/alice/copy", "", {{"x-amz-copy-source", "/data/bob/b"}},
                    key->access_key_id, key->secret_key);
  EXPECT_TRUE(copy.HasCode("AccessDenied"));
  EXPECT_EQ(Send("GET", "/data/alice/copy").status, 404);
}

// Every operation the front end serves, sent by a signed-in user without a single rule: each is
// refused (ListBuckets lists nothing), and no call of theirs
// reaches the volume beneath the AuthorizedVolume. The samples must cover S3Operations(), so a
// new operation cannot be added without being sent here.
TEST_F(S3Test, EveryOperationIsRefusedToAUserWithoutRules) {
  ASSERT_EQ(Send("PUT", "/bkt").status, 200);
  ASSERT_EQ(Send("PUT", "/bkt/k", "bytes").status, 200);
  Reply created = Send("POST", "/bkt/up?uploads");
  ASSERT_EQ(created.status, 200);
  const size_t at = created.body.find("<UploadId>") + 10;
  const std::string upload = created.body.substr(at, created.body.find("</UploadId>") - at);
  ASSERT_TRUE(identities_->CreateUser("nobody", {}).ok());
  auto key = identities_->CreateKey("nobody");
  ASSERT_TRUE(key.ok());
  const std::string deletes =
      "<Delete><Object><Key>k</Key></Object><Object><Key>z</Key></Object></Delete>";
  const std::string complete =
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"x\"</ETag></Part>"
      "</CompleteMultipartUpload>";
  const std::string cors =
      "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
      "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>";
  const std::string tags =
      "<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet>"
      "</Tagging>";
  auto content_md5 = [](std::string_view body) {
    return Base64Encode(*FromHex(Md5Hex(AsBytes(body))));
  };
  struct Sample {
    std::string method, target, body;
    std::vector<net::HttpHeader> headers;
  };
  const std::string md5 = content_md5(deletes);
  const std::vector<Sample> samples = {
      {"GET", "/", "", {}},
      {"PUT", "/nbkt", "", {}},
      {"HEAD", "/bkt", "", {}},
      {"DELETE", "/bkt", "", {}},
      {"GET", "/bkt?list-type=2", "", {}},
      {"GET", "/bkt", "", {}},
      {"GET", "/bkt?versions", "", {}},
      {"GET", "/bkt?uploads", "", {}},
      {"GET", "/bkt?location", "", {}},
      {"GET", "/bkt?versioning", "", {}},
      {"PUT",
       "/bkt?versioning",
       "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
       {}},
      {"GET", "/bkt?cors", "", {}},
      {"PUT", "/bkt?cors", cors, {{"Content-MD5", content_md5(cors)}}},
      {"DELETE", "/bkt?cors", "", {}},
      {"GET", "/bkt?tagging", "", {}},
      {"PUT", "/bkt?tagging", tags, {}},
      {"DELETE", "/bkt?tagging", "", {}},
      {"POST", "/bkt?delete", deletes, {{"Content-MD5", md5}}},
      {"GET", "/bkt/k", "", {}},
      {"HEAD", "/bkt/k", "", {}},
      {"PUT", "/bkt/k2", "new bytes", {}},
      {"PUT", "/bkt/k3", "", {{"x-amz-copy-source", "/bkt/k"}}},
      {"DELETE", "/bkt/k", "", {}},
      {"GET", "/bkt/k?attributes", "", {{"x-amz-object-attributes", "ETag"}}},
      {"GET", "/bkt/k?tagging", "", {}},
      {"PUT", "/bkt/k?tagging", tags, {}},
      {"DELETE", "/bkt/k?tagging", "", {}},
      {"POST", "/bkt/k4?uploads", "", {}},
      {"PUT", "/bkt/up?partNumber=1&uploadId=" + upload, "part", {}},
      {"PUT", "/bkt/up?partNumber=2&uploadId=" + upload, "", {{"x-amz-copy-source", "/bkt/k"}}},
      {"GET", "/bkt/up?uploadId=" + upload, "", {}},
      {"POST", "/bkt/up?uploadId=" + upload, complete, {}},
      {"DELETE", "/bkt/up?uploadId=" + upload, "", {}},
  };
  std::set<std::string_view> covered;
  for (const Sample& sample : samples) {
    net::HttpRequest http;
    http.method = sample.method;
    http.target = sample.target;
    const size_t q = sample.target.find('?');
    http.path = sample.target.substr(0, q);
    http.query = q == std::string::npos ? "" : sample.target.substr(q + 1);
    http.headers = sample.headers;
    auto operation = S3OperationOf(http);
    ASSERT_TRUE(operation.ok()) << sample.method << " " << sample.target;
    covered.insert(*operation);
    Reply reply = Send(sample.method, sample.target, sample.body, sample.headers,
                       key->access_key_id, key->secret_key);
    if (*operation == "ListBuckets") {
      EXPECT_EQ(reply.status, 200);
      EXPECT_EQ(reply.body.find("<Bucket>"), std::string::npos) << reply.body;
    } else if (sample.method == "HEAD") {
      EXPECT_EQ(reply.status, 403) << *operation;
    } else {
      EXPECT_TRUE(reply.HasCode("AccessDenied")) << *operation << ": " << reply.body;
    }
  }
  std::set<std::string_view> all(S3Operations().begin(), S3Operations().end());
  EXPECT_EQ(covered, all);
  EXPECT_TRUE(recording_->calls().empty()) << *recording_->callers().begin();
  // As it was: the object, the upload, nothing else.
  EXPECT_EQ(Send("GET", "/bkt/k").body, "bytes");
  EXPECT_EQ(Send("GET", "/bkt/up?uploadId=" + upload).status, 200);
  EXPECT_EQ(Send("HEAD", "/nbkt").status, 404);
  EXPECT_EQ(Send("HEAD", "/bkt/k2").status, 404);
}

TEST_F(S3Test, ListObjectsV2PaginatesWithDelimiter) {
  ASSERT_EQ(Send("PUT", "/dset").status, 200);
  for (std::string key : {"train/0", "train/1", "val/0", "readme", "test/x/y"}) {
    ASSERT_EQ(Send("PUT", "/dset/" + key, "x").status, 200);
  }
  Reply page = Send("GET", "/dset?list-type=2&delimiter=/&max-keys=2");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<Key>readme</Key>"), std::string::npos);
  EXPECT_NE(page.body.find("<Prefix>test/</Prefix>"), std::string::npos);
  EXPECT_NE(page.body.find("<IsTruncated>true</IsTruncated>"), std::string::npos);
  size_t at = page.body.find("<NextContinuationToken>");
  ASSERT_NE(at, std::string::npos);
  std::string token = page.body.substr(at + 23, page.body.find('<', at + 23) - at - 23);
  Reply next = Send("GET", "/dset?list-type=2&delimiter=/&max-keys=2&continuation-token=" +
                               sigv4::UriEncode(token));
  EXPECT_NE(next.body.find("<Prefix>train/</Prefix>"), std::string::npos) << next.body;
  EXPECT_NE(next.body.find("<Prefix>val/</Prefix>"), std::string::npos);
  EXPECT_EQ(next.body.find("test/"), std::string::npos);
  EXPECT_NE(next.body.find("<IsTruncated>false</IsTruncated>"), std::string::npos);

  Reply all = Send("GET", "/dset?list-type=2&prefix=train/");
  EXPECT_NE(all.body.find("<KeyCount>2</KeyCount>"), std::string::npos) << all.body;
}

TEST_F(S3Test, MultipartUploadConcatenatesPartsWithS3Etag) {
  ASSERT_EQ(Send("PUT", "/mpu").status, 200);
  Reply created = Send("POST", "/mpu/big.bin?uploads", "", {{"Content-Type", "app/x"}});
  ASSERT_EQ(created.status, 200) << created.body;
  size_t at = created.body.find("<UploadId>");
  std::string id = created.body.substr(at + 10, 32);
  std::string part1(5 << 20, 'a');
  std::string part2 = "tail";
  Reply p1 = Send("PUT", "/mpu/big.bin?partNumber=1&uploadId=" + id, part1);
  Reply p2 = Send("PUT", "/mpu/big.bin?partNumber=2&uploadId=" + id, part2);
  ASSERT_EQ(p1.status, 200);
  ASSERT_EQ(p2.status, 200);
  EXPECT_EQ(Send("GET", "/mpu/big.bin").status, 404);  // nothing visible before complete

  std::string complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                         p1.headers["etag"] +
                         "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" +
                         p2.headers["etag"] + "</ETag></Part></CompleteMultipartUpload>";
  Reply done = Send("POST", "/mpu/big.bin?uploadId=" + id, complete);
  ASSERT_EQ(done.status, 200) << done.body;
  std::string md5s = *FromHex(Md5Hex(AsBytes(part1))) + *FromHex(Md5Hex(AsBytes(part2)));
  std::string etag = "\"" + Md5Hex(AsBytes(md5s)) + "-2\"";
  EXPECT_NE(done.body.find(etag), std::string::npos) << done.body;
  Reply got = Send("GET", "/mpu/big.bin");
  EXPECT_EQ(got.body, part1 + part2);
  EXPECT_EQ(got.headers["etag"], etag);
  EXPECT_EQ(got.headers["content-type"], "app/x");
  // Completing again with the same parts succeeds, as in S3; with other parts it is over.
  Reply again = Send("POST", "/mpu/big.bin?uploadId=" + id, complete);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.body.find(etag), std::string::npos) << again.body;
  std::string other = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                      p1.headers["etag"] + "</ETag></Part></CompleteMultipartUpload>";
  EXPECT_TRUE(Send("POST", "/mpu/big.bin?uploadId=" + id, other).HasCode("NoSuchUpload"));
  // A part of the object, as uploaded.
  Reply second = Send("GET", "/mpu/big.bin?partNumber=2");
  EXPECT_EQ(second.status, 206);
  EXPECT_EQ(second.body, part2);
  EXPECT_EQ(second.headers["x-amz-mp-parts-count"], "2");
  EXPECT_TRUE(Send("GET", "/mpu/big.bin?partNumber=3").HasCode("InvalidPartNumber"));
  EXPECT_EQ(Send("GET", "/?").status, 200);
}

TEST_F(S3Test, BadInputChangesNothing) {
  ASSERT_EQ(Send("PUT", "/bad").status, 200);
  // A body that does not match its signed SHA-256 is refused and not stored.
  Reply mismatch = Send("PUT", "/bad/k", "abc", {{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}});
  EXPECT_TRUE(mismatch.HasCode("BadDigest")) << mismatch.body;
  EXPECT_EQ(Send("GET", "/bad/k").status, 404);
  const std::string broken = "<Delete><Object>";
  EXPECT_TRUE(Send("POST", "/bad?delete", broken,
                   {{"Content-MD5", Base64Encode(*FromHex(Md5Hex(AsBytes(broken))))}})
                  .HasCode("MalformedXML"));
  // DeleteObjects needs a digest of its body: a cut list must not delete some keys.
  EXPECT_TRUE(Send("POST", "/bad?delete", "<Delete><Object><Key>k</Key></Object></Delete>")
                  .HasCode("InvalidRequest"));
  EXPECT_TRUE(Send("PUT", "/bad/a/../b", "x").HasCode("InvalidArgument"));
  EXPECT_TRUE(Send("PUT", "/Bad_Name").HasCode("InvalidBucketName"));
  EXPECT_TRUE(Send("GET", "/bad/k?acl").HasCode("NotImplemented"));
  // A client whose clock is an hour behind.
  sign_skew_seconds_ = -3600;
  EXPECT_TRUE(Send("GET", "/bad/k").HasCode("RequestTimeTooSkewed"));
}

// aws-chunked with a signature per chunk, chained to the request's: the real stream is
// accepted, and a tampered chunk is refused with nothing stored.
TEST_F(S3Test, StreamingSignedPayload) {
  ASSERT_EQ(Send("PUT", "/stream").status, 200);
  std::vector<std::string> chunks = {std::string(70000, 'a'), "tail", ""};
  auto framed = [&](bool tamper) {
    return [&, tamper](const sigv4::ChunkVerifier& seed) {
      sigv4::ChunkVerifier chain = seed;
      std::string body;
      for (const std::string& chunk : chunks) {
        std::string hash = sigv4::Sha256Hex(chunk);
        std::string signature = chain.Expected(hash);
        EXPECT_TRUE(chain.Verify(signature, hash).ok());
        char size[32];
        snprintf(size, sizeof size, "%zx", chunk.size());
        std::string data = chunk;
        if (tamper && !data.empty()) data[0] ^= 1;
        body += std::string(size) + ";chunk-signature=" + signature + "\r\n" + data + "\r\n";
      }
      return body;
    };
  };
  std::vector<net::HttpHeader> headers = {{"Content-Encoding", "aws-chunked"},
                                          {"x-amz-decoded-content-length", "70004"}};
  Reply ok = Send("PUT", "/stream/ok", "", headers, "ROOTACCESSKEY0000000", "rootsecret",
                  std::string(sigv4::kStreamingPayload), framed(false));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Send("GET", "/stream/ok").body, chunks[0] + chunks[1]);
  EXPECT_EQ(Send("HEAD", "/stream/ok").headers.count("content-encoding"), 0u);
  Reply bad = Send("PUT", "/stream/bad", "", headers, "ROOTACCESSKEY0000000", "rootsecret",
                   std::string(sigv4::kStreamingPayload), framed(true));
  EXPECT_TRUE(bad.HasCode("SignatureDoesNotMatch")) << bad.body;
  EXPECT_EQ(Send("GET", "/stream/bad").status, 404);
}

// aws-chunked with unsigned chunks and a CRC32 trailer, as current AWS SDKs send.
TEST_F(S3Test, StreamingTrailerChecksum) {
  ASSERT_EQ(Send("PUT", "/trailer").status, 200);
  auto framed = [](std::string checksum) {
    return [checksum](const sigv4::ChunkVerifier&) {
      return "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:" + checksum + "\r\n\r\n";
    };
  };
  std::vector<net::HttpHeader> headers = {{"Content-Encoding", "aws-chunked"},
                                          {"x-amz-decoded-content-length", "5"},
                                          {"x-amz-trailer", "x-amz-checksum-crc32"}};
  std::string mode(sigv4::kStreamingUnsignedTrailer);
  // crc32("hello") = 0x3610a686.
  Reply ok = Send("PUT", "/trailer/ok", "", headers, "ROOTACCESSKEY0000000", "rootsecret", mode,
                  framed("NhCmhg=="));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Send("GET", "/trailer/ok").body, "hello");
  Reply bad = Send("PUT", "/trailer/bad", "", headers, "ROOTACCESSKEY0000000", "rootsecret", mode,
                   framed("AAAAAA=="));
  EXPECT_TRUE(bad.HasCode("BadDigest")) << bad.body;
  EXPECT_EQ(Send("GET", "/trailer/bad").status, 404);
  // A body cut short inside a chunk is IncompleteBody.
  Reply cut = Send("PUT", "/trailer/cut", "", headers, "ROOTACCESSKEY0000000", "rootsecret", mode,
                   [](const sigv4::ChunkVerifier&) { return std::string("5\r\nhel"); });
  EXPECT_TRUE(cut.HasCode("IncompleteBody")) << cut.body;
  EXPECT_EQ(Send("GET", "/trailer/cut").status, 404);
}

// docs/s3.md's conditional PUT and copy conditions.
TEST_F(S3Test, ConditionalPutAndCopy) {
  ASSERT_EQ(Send("PUT", "/cond").status, 200);
  Reply first = Send("PUT", "/cond/k", "one", {{"If-None-Match", "*"}});
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_TRUE(
      Send("PUT", "/cond/k", "two", {{"If-None-Match", "*"}}).HasCode("PreconditionFailed"));
  EXPECT_TRUE(
      Send("PUT", "/cond/k", "two", {{"If-Match", "\"0000\""}}).HasCode("PreconditionFailed"));
  EXPECT_EQ(Send("GET", "/cond/k").body, "one");
  EXPECT_EQ(Send("PUT", "/cond/k", "two", {{"If-Match", first.headers["etag"]}}).status, 200);
  EXPECT_EQ(Send("GET", "/cond/k").body, "two");
  Reply copy = Send("PUT", "/cond/copy", "",
                    {{"x-amz-copy-source", "/cond/k"}, {"x-amz-copy-source-if-match", "\"0\""}});
  EXPECT_TRUE(copy.HasCode("PreconditionFailed")) << copy.body;
  EXPECT_EQ(Send("GET", "/cond/copy").status, 404);
}

// Versioning "Enabled" keeps every old version through garbage collection; "Suspended" lets
// them expire again.
TEST_F(S3Test, VersioningControlsGarbageCollection) {
  ASSERT_EQ(Send("PUT", "/vers").status, 200);
  const std::string enabled =
      "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
  ASSERT_EQ(Send("PUT", "/vers?versioning", enabled).status, 200);
  Reply v1 = Send("PUT", "/vers/k", "old");
  ASSERT_EQ(Send("PUT", "/vers/k", "new").status, 200);
  std::string id = v1.headers["x-amz-version-id"];
  ASSERT_FALSE(id.empty());
  GcOptions now;
  now.keep_noncurrent_ns = 0;
  ASSERT_TRUE(volume_->CollectGarbage(RequestContext{}, now).ok());
  EXPECT_EQ(Send("GET", "/vers/k?versionId=" + id).body, "old");

  ASSERT_EQ(Send("PUT", "/vers?versioning",
                 "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>")
                .status,
            200);
  ASSERT_TRUE(volume_->CollectGarbage(RequestContext{}, now).ok());
  EXPECT_EQ(Send("GET", "/vers/k?versionId=" + id).status, 404);
  EXPECT_TRUE(Send("PUT", "/vers?versioning",
                   "<VersioningConfiguration><Status>On</Status>"
                   "</VersioningConfiguration>")
                  .HasCode("MalformedXML"));
}

// A key ending in '/' with an empty body is a directory: it lists as a common prefix.
TEST_F(S3Test, DirectoryMarker) {
  ASSERT_EQ(Send("PUT", "/dirs").status, 200);
  ASSERT_EQ(Send("PUT", "/dirs/photos/", "").status, 200);
  Reply list = Send("GET", "/dirs?list-type=2&delimiter=/");
  EXPECT_NE(list.body.find("<Prefix>photos/</Prefix>"), std::string::npos) << list.body;
  EXPECT_EQ(Send("PUT", "/dirs/photos/", "not empty").status, 400);
}

// Signature Version 2 is refused with a message that says what to change, not treated as
// anonymous.
TEST_F(S3Test, SignatureVersion2IsCheckedOrRefusedWhenOff) {
  ASSERT_EQ(Send("PUT", "/sigv2").status, 200);
  // Accepted by default, so a wrong signature or an expired URL is refused as such.
  Reply header = Send("GET", "/sigv2", "",
                      {{"Authorization", "AWS ROOTACCESSKEY0000000:abc="},
                       {"Date", "Mon, 07 Dec 2026 00:00:00 GMT"}},
                      /*access=*/"");
  EXPECT_TRUE(header.HasCode("SignatureDoesNotMatch") || header.HasCode("RequestTimeTooSkewed"))
      << header.body;
  Reply expired = Send("GET", "/sigv2?AWSAccessKeyId=ROOTACCESSKEY0000000&Signature=x&Expires=1",
                       "", {}, /*access=*/"");
  EXPECT_TRUE(expired.HasCode("AccessDenied")) << expired.body;
  Reply unknown = Send("GET", "/sigv2?AWSAccessKeyId=NOSUCHKEY&Signature=x&Expires=1", "", {},
                       /*access=*/"");
  EXPECT_TRUE(unknown.HasCode("InvalidAccessKeyId")) << unknown.body;

  S3Options off;
  off.clock = &clock_;
  off.sigv2 = false;
  frontend_ = std::make_unique<S3Frontend>(*authorized_, off);
  header = Send("GET", "/sigv2", "", {{"Authorization", "AWS ROOTACCESSKEY0000000:abc="}},
                /*access=*/"");
  EXPECT_TRUE(header.HasCode("InvalidRequest")) << header.body;
  EXPECT_NE(header.body.find("s3v4"), std::string::npos);
  Reply query = Send("GET", "/sigv2?AWSAccessKeyId=ROOTACCESSKEY0000000&Signature=x&Expires=1", "",
                     {}, /*access=*/"");
  EXPECT_TRUE(query.HasCode("InvalidRequest")) << query.body;
}

}  // namespace
}  // namespace weft::s3
