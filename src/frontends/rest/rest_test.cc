// Unit tests of the REST front end on in-memory fakes: a LocalVolume over MemKvStore and
// MemChunkStore, an IdentityStore over MemKvStore with a FakeClock, and in-memory HTTP bodies.
// Requests go straight to RestFrontend::Handle, as the Router hands them over.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "access/recording_volume.h"
#include "chunk/mem_chunk_store.h"
#include "frontends/rest/rest_frontend.h"
#include "meta/kv_store.h"
#include "net/test_http.h"
#include "vfs/local_volume.h"

namespace weft::rest {
namespace {

using nlohmann::json;

constexpr int64_t kSecond = 1'000'000'000;
constexpr char kRootKey[] = "ROOTACCESSKEY0000000";
constexpr char kRootSecret[] = "rootsecret";

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;
  json body;  // null for an empty body
  std::string Error() const {
    return body.is_object() && body.contains("error") ? body["error"].get<std::string>() : "";
  }
};

class RestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto volume = NewLocalVolume(NewMemKvStore(), NewMemChunkStore());
    ASSERT_TRUE(volume.ok());
    volume_ = std::move(volume).value();
    auto identities = auth::IdentityStore::Open(NewMemKvStore(), std::string(32, 'k'), &clock_);
    ASSERT_TRUE(identities.ok());
    identities_ = std::move(identities).value();
    ASSERT_TRUE(identities_->ImportKey("root", kRootKey, kRootSecret).ok());
    recording_ = std::make_unique<access::RecordingVolume>(volume_.get());
    authorized_ = std::make_unique<access::AuthorizedVolume>(recording_.get(), identities_.get());
    frontend_ = std::make_unique<RestFrontend>(*authorized_, &clock_);
    root_ = Token(kRootKey, kRootSecret);
    ASSERT_FALSE(root_.empty());
  }

  // Sends `method` on kApiPrefix + `target` with `token` (none when empty).
  Reply Send(const std::string& method, const std::string& target, const std::string& token,
             const std::string& body = "") {
    net::HttpRequest http;
    http.method = method;
    http.target = std::string(kApiPrefix) + target;
    size_t q = http.target.find('?');
    http.path = http.target.substr(0, q);
    http.query = q == std::string::npos ? "" : http.target.substr(q + 1);
    if (!body.empty()) http.content_length = body.size();
    if (!token.empty()) http.headers.push_back({"Authorization", "Bearer " + token});
    net::StringBodyReader reader(body);
    net::RecordingResponseWriter response;
    frontend_->Handle(http, reader, response);
    EXPECT_TRUE(response.started_);
    Reply reply{response.status_, response.headers_, nullptr};
    if (!response.body_.empty()) {
      reply.body = json::parse(response.body_, nullptr, false);
      EXPECT_FALSE(reply.body.is_discarded()) << response.body_;
      EXPECT_EQ(response.headers_["content-type"], "application/json");
    }
    return reply;
  }

  std::string Token(const std::string& id, const std::string& secret) {
    Reply r = Send("POST", "tokens", "",
                   json{{"access_key_id", id}, {"secret_access_key", secret}}.dump());
    if (r.status != 200) return "";
    return r.body["token"].get<std::string>();
  }

  // Creates `name` with a key and returns a token for it.
  std::string UserWithToken(const std::string& name) {
    EXPECT_EQ(Send("POST", "users", root_, json{{"name", name}}.dump()).status, 201);
    Reply key = Send("POST", "users/" + name + "/keys", root_);
    EXPECT_EQ(key.status, 201);
    return Token(key.body["access_key_id"].get<std::string>(),
                 key.body["secret_access_key"].get<std::string>());
  }

  void Rule(const std::string& subject, const std::string& prefix, const std::string& perms) {
    json rule = {{"subject", subject}, {"prefix", prefix}, {"permissions", perms}};
    ASSERT_EQ(Send("POST", "rules", root_, rule.dump()).status, 201);
  }

  void WriteFile(const std::string& path, const std::string& data) {
    WriteOptions opts;
    opts.create_parents = true;
    auto writer = volume_->OpenWriter(RequestContext{}, path, opts);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Write(AsBytes(data)).ok());
    ASSERT_TRUE((*writer)->Commit().ok());
  }

  FakeClock clock_;
  std::unique_ptr<Volume> volume_;
  std::unique_ptr<auth::IdentityStore> identities_;
  std::unique_ptr<access::RecordingVolume> recording_;
  std::unique_ptr<access::AuthorizedVolume> authorized_;
  std::unique_ptr<RestFrontend> frontend_;
  std::string root_;
};

TEST_F(RestTest, TokenIssueAndExpiry) {
  Reply r = Send(
      "POST", "tokens", "",
      json{{"access_key_id", kRootKey}, {"secret_access_key", kRootSecret}, {"ttl_seconds", 60}}
          .dump());
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["user"], "root");
  EXPECT_EQ(r.headers["cache-control"], "no-store");
  std::string token = r.body["token"];
  // FakeClock starts at 1'700'000'000 s = 2023-11-14T22:13:20Z.
  EXPECT_EQ(r.body["expires"], "2023-11-14T22:14:20Z");
  EXPECT_EQ(r.body["expires_in"], 60);
  EXPECT_EQ(Send("GET", "whoami", token).status, 200);
  clock_.AdvanceNanos(60 * kSecond);
  Reply expired = Send("GET", "whoami", token);
  EXPECT_EQ(expired.status, 401);
  EXPECT_EQ(expired.Error(), "Unauthenticated");
  EXPECT_EQ(expired.headers["www-authenticate"], "Bearer realm=\"weft\"");
}

TEST_F(RestTest, TokenRejectsWrongCredentialsAlike) {
  Reply bad_secret = Send("POST", "tokens", "",
                          json{{"access_key_id", kRootKey}, {"secret_access_key", "wrong"}}.dump());
  Reply bad_id = Send(
      "POST", "tokens", "",
      json{{"access_key_id", "NOSUCHKEY00000000000"}, {"secret_access_key", kRootSecret}}.dump());
  EXPECT_EQ(bad_secret.status, 401);
  EXPECT_EQ(bad_secret.Error(), "InvalidCredentials");
  EXPECT_EQ(bad_secret.body, bad_id.body);  // no hint which part was wrong
  // TTL bounds: default 1 h, at most 7 days.
  Reply def = Send("POST", "tokens", "",
                   json{{"access_key_id", kRootKey}, {"secret_access_key", kRootSecret}}.dump());
  EXPECT_EQ(def.body["expires"], "2023-11-14T23:13:20Z");
  for (json ttl : {json(0), json(7 * 24 * 3600 + 1), json("60"), json(1.5)}) {
    Reply r = Send(
        "POST", "tokens", "",
        json{{"access_key_id", kRootKey}, {"secret_access_key", kRootSecret}, {"ttl_seconds", ttl}}
            .dump());
    EXPECT_EQ(r.status, 400) << ttl;
  }
  EXPECT_EQ(Send("GET", "tokens", "").status, 405);
}

TEST_F(RestTest, EverythingElseNeedsAValidToken) {
  for (const char* target : {"whoami", "users", "usage", "namespace/stat?path=/", "nosuch"}) {
    Reply r = Send("GET", target, "");
    EXPECT_EQ(r.status, 401) << target;
    EXPECT_EQ(r.Error(), "Unauthenticated") << target;
  }
  EXPECT_EQ(Send("GET", "whoami", "wt1.forged.token").status, 401);
  std::string tampered = root_;
  tampered[5] = tampered[5] == 'A' ? 'B' : 'A';  // inside the signed payload
  EXPECT_EQ(Send("GET", "whoami", tampered).status, 401);
  // Basic auth is not accepted.
  net::HttpRequest http;
  http.method = "GET";
  http.path = http.target = std::string(kApiPrefix) + "whoami";
  http.headers.push_back({"Authorization", "Basic cm9vdDpyb290"});
  net::StringBodyReader body("");
  net::RecordingResponseWriter response;
  frontend_->Handle(http, body, response);
  EXPECT_EQ(response.status_, 401);
}

TEST_F(RestTest, UserKeyAndRuleCrudByRoot) {
  Reply created = Send("POST", "users", root_, json{{"name", "alice"}, {"groups", {"eng"}}}.dump());
  ASSERT_EQ(created.status, 201);
  EXPECT_EQ(created.body["groups"], json({"eng"}));
  EXPECT_EQ(Send("POST", "users", root_, json{{"name", "alice"}}.dump()).status, 409);
  EXPECT_EQ(Send("POST", "users", root_, json{{"name", "Bad Name"}}.dump()).status, 400);

  Reply users = Send("GET", "users", root_);
  ASSERT_EQ(users.status, 200);
  bool found = false;
  for (const json& u : users.body["users"]) found |= u["name"] == "alice";
  EXPECT_TRUE(found);

  Reply groups = Send("PUT", "users/alice/groups", root_, json{{"groups", {"ops", "eng"}}}.dump());
  ASSERT_EQ(groups.status, 200);
  EXPECT_EQ(groups.body["groups"], json({"eng", "ops"}));
  EXPECT_EQ(Send("GET", "users/alice", root_).body["groups"], json({"eng", "ops"}));

  Reply key = Send("POST", "users/alice/keys", root_);
  ASSERT_EQ(key.status, 201);
  std::string id = key.body["access_key_id"];
  EXPECT_EQ(key.body["user"], "alice");
  EXPECT_EQ(key.body["secret_access_key"].get<std::string>().size(), 40u);
  Reply keys = Send("GET", "users/alice/keys", root_);
  ASSERT_EQ(keys.body["keys"].size(), 1u);
  EXPECT_EQ(keys.body["keys"][0]["access_key_id"], id);
  EXPECT_FALSE(keys.body["keys"][0].contains("secret_access_key"));
  EXPECT_EQ(Send("DELETE", "keys/" + id, root_).status, 204);
  EXPECT_EQ(Send("DELETE", "keys/" + id, root_).status, 404);

  Reply rule = Send(
      "POST", "rules", root_,
      json{{"subject", "user:alice"}, {"prefix", "/data/"}, {"permissions", "list,read"}}.dump());
  ASSERT_EQ(rule.status, 201);
  EXPECT_EQ(rule.body["permissions"], "read,list");
  std::string rule_id = rule.body["id"];
  EXPECT_EQ(Send("GET", "rules", root_).body["rules"].size(), 1u);
  EXPECT_EQ(Send("POST", "rules", root_,
                 json{{"subject", "user:alice"}, {"prefix", "/"}, {"permissions", "fly"}}.dump())
                .status,
            400);
  EXPECT_EQ(Send("DELETE", "rules/" + rule_id, root_).status, 204);
  EXPECT_EQ(Send("DELETE", "rules/" + rule_id, root_).status, 404);

  EXPECT_EQ(Send("DELETE", "users/alice", root_).status, 204);
  Reply gone = Send("GET", "users/alice", root_);
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.Error(), "NotFound");
  EXPECT_EQ(Send("DELETE", "users/root", root_).status, 400);
}

TEST_F(RestTest, NonAdminIsDeniedAdminEndpointsButManagesItsOwnKeys) {
  std::string bob = UserWithToken("bob");
  UserWithToken("carol");
  ASSERT_FALSE(bob.empty());
  Reply who = Send("GET", "whoami", bob);
  ASSERT_EQ(who.status, 200);
  EXPECT_EQ(who.body["user"], "bob");
  EXPECT_EQ(who.body["groups"], json::array());

  struct Case {
    const char* method;
    const char* target;
    std::string body;
  };
  for (const Case& c : std::vector<Case>{
           {"GET", "users", ""},
           {"POST", "users", json{{"name", "eve"}}.dump()},
           {"GET", "users/carol", ""},
           {"PUT", "users/bob/groups", json{{"groups", {"admins"}}}.dump()},
           {"DELETE", "users/carol", ""},
           {"GET", "users/carol/keys", ""},
           {"POST", "users/carol/keys", ""},
           {"GET", "rules", ""},
           {"POST", "rules",
            json{{"subject", "user:bob"}, {"prefix", "/"}, {"permissions", "admin"}}.dump()},
           {"DELETE", "rules/r1", ""},
           {"GET", "usage", ""},
           {"POST", "snapshots", json{{"name", "s"}}.dump()},
           {"DELETE", "keys/NOSUCHKEY0000000000", ""},
           {"GET", "namespace/stat?path=/", ""},
           {"GET", "namespace/list?path=/", ""},
           {"GET", "namespace/versions?path=/f", ""},
           {"GET", "namespace/residency?path=/", ""},
           {"PUT", "namespace/residency?path=/d", json{{"tags", {"eu"}}}.dump()},
           {"GET", "snapshots", ""},
           {"DELETE", "snapshots/nightly", ""},
       }) {
    Reply r = Send(c.method, c.target, bob, c.body);
    EXPECT_EQ(r.status, 403) << c.method << " " << c.target;
    EXPECT_EQ(r.Error(), "AccessDenied") << c.method << " " << c.target;
  }
  // None of it reached the namespace beneath the AuthorizedVolume but a snapshot list, which
  // shows bob nothing.
  for (const std::string& call : recording_->calls()) EXPECT_EQ(call, "ListSnapshots");

  // Its own keys: create, list, delete; another user's key stays out of reach.
  Reply key = Send("POST", "users/bob/keys", bob);
  ASSERT_EQ(key.status, 201);
  EXPECT_EQ(Send("GET", "users/bob/keys", bob).body["keys"].size(), 2u);
  EXPECT_EQ(Send("DELETE", "keys/" + key.body["access_key_id"].get<std::string>(), bob).status,
            204);
  Reply carol_keys = Send("GET", "users/carol/keys", root_);
  std::string carol_key = carol_keys.body["keys"][0]["access_key_id"];
  EXPECT_EQ(Send("DELETE", "keys/" + carol_key, bob).status, 403);
  EXPECT_EQ(Send("DELETE", "keys/" + carol_key, root_).status, 204);
}

TEST_F(RestTest, NamespacePermissionsFollowPrefixes) {
  WriteFile("/data/a.txt", "hello");
  WriteFile("/data/sub/b.txt", "world!");
  WriteFile("/secret/x", "no");
  std::string dave = UserWithToken("dave");
  Rule("user:dave", "/data/", "read,list");

  Reply stat = Send("GET", "namespace/stat?path=/data/a.txt", dave);
  ASSERT_EQ(stat.status, 200);
  EXPECT_EQ(stat.body["type"], "file");
  EXPECT_EQ(stat.body["size"], 5);
  EXPECT_EQ(stat.body["etag"], "5d41402abc4b2a76b9719d911017c592");

  Reply list = Send("GET", "namespace/list?path=%2Fdata", dave);
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["entries"].size(), 2u);
  EXPECT_EQ(list.body["entries"][0]["name"], "a.txt");
  EXPECT_EQ(list.body["entries"][0]["etag"], "5d41402abc4b2a76b9719d911017c592");
  EXPECT_EQ(list.body["entries"][1]["name"], "sub");
  EXPECT_EQ(list.body["entries"][1]["type"], "directory");
  EXPECT_FALSE(list.body["truncated"]);

  Reply page = Send("GET", "namespace/list?path=/data/&limit=1", dave);
  ASSERT_EQ(page.status, 200);
  EXPECT_TRUE(page.body["truncated"]);
  EXPECT_EQ(page.body["next_start_after"], "a.txt");
  Reply next = Send("GET", "namespace/list?path=/data/&limit=1&start_after=a.txt", dave);
  EXPECT_EQ(next.body["entries"][0]["name"], "sub");

  Reply versions = Send("GET", "namespace/versions?path=/data/a.txt", dave);
  ASSERT_EQ(versions.status, 200);
  ASSERT_EQ(versions.body["versions"].size(), 1u);
  EXPECT_TRUE(versions.body["versions"][0]["is_current"]);

  EXPECT_EQ(Send("GET", "namespace/stat?path=/secret/x", dave).status, 403);
  EXPECT_EQ(Send("GET", "namespace/list?path=/secret", dave).status, 403);
  EXPECT_EQ(Send("GET", "namespace/list?path=/", dave).status, 403);
  EXPECT_EQ(Send("GET", "namespace/stat?path=/data/missing", dave).status, 404);
  EXPECT_EQ(Send("GET", "namespace/stat?path=/data/a.txt", root_).status, 200);
  // Query validation.
  EXPECT_EQ(Send("GET", "namespace/stat", dave).status, 400);
  EXPECT_EQ(Send("GET", "namespace/stat?path=/data/a.txt&bogus=1", dave).status, 400);
  EXPECT_EQ(Send("GET", "namespace/list?path=/data&limit=0", dave).status, 400);
  EXPECT_EQ(Send("GET", "namespace/list?path=/data&limit=x", dave).status, 400);
  EXPECT_EQ(Send("GET", "namespace/list?path=/data&path=/secret", dave).status, 400);
}

TEST_F(RestTest, HostilePathsAreRejectedBeforeAuthorisation) {
  WriteFile("/data/a.txt", "hello");
  WriteFile("/secret/x", "no");
  std::string dave = UserWithToken("dave");
  Rule("user:dave", "/data/", "read,list");
  for (const char* path : {"/data/../secret/x", "%2Fdata%2F..%2Fsecret%2Fx", "/data/./a.txt",
                           "data/a.txt", "/data/a%00.txt", "", "/data//a.txt", "%zz"}) {
    Reply r = Send("GET", std::string("namespace/stat?path=") + path, dave);
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_EQ(r.Error(), "InvalidArgument") << path;
  }
  EXPECT_EQ(Send("GET", "namespace/stat?path=/data/../secret/x", root_).status, 400);
}

TEST_F(RestTest, SnapshotsCreateListReadDelete) {
  WriteFile("/proj/a.txt", "v1");
  std::string erin = UserWithToken("erin");
  Rule("user:erin", "/proj/", "admin");

  Reply created = Send("POST", "snapshots", erin, json{{"name", "s1"}, {"path", "/proj"}}.dump());
  ASSERT_EQ(created.status, 201);
  EXPECT_EQ(created.body["name"], "s1");
  EXPECT_EQ(created.body["path"], "/proj");
  EXPECT_EQ(Send("POST", "snapshots", erin, json{{"name", "s1"}, {"path", "/proj"}}.dump()).status,
            409);
  // Admin on /proj/ does not reach "/".
  EXPECT_EQ(Send("POST", "snapshots", erin, json{{"name", "all"}}.dump()).status, 403);
  EXPECT_EQ(Send("POST", "snapshots", root_, json{{"name", "all"}}.dump()).status, 201);

  WriteFile("/proj/a.txt", "v2 longer");
  Reply old = Send("GET", "namespace/stat?path=/proj/a.txt&snapshot=s1", erin);
  ASSERT_EQ(old.status, 200);
  EXPECT_EQ(old.body["size"], 2);
  Reply via_path = Send("GET", "namespace/stat?path=/.weft/snapshots/s1/proj/a.txt", erin);
  ASSERT_EQ(via_path.status, 200);
  EXPECT_EQ(via_path.body["size"], 2);
  EXPECT_EQ(Send("GET", "namespace/list?path=/proj&snapshot=s1", erin).body["entries"].size(), 1u);
  EXPECT_EQ(Send("GET", "namespace/stat?path=/proj/a.txt", erin).body["size"], 9);

  // Listing snapshots needs list on "/".
  EXPECT_EQ(Send("GET", "snapshots", erin).status, 403);
  Reply list = Send("GET", "snapshots", root_);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body["snapshots"].size(), 2u);

  EXPECT_EQ(Send("DELETE", "snapshots/all", erin).status, 403);
  EXPECT_EQ(Send("DELETE", "snapshots/nosuch", erin).status, 403);  // no existence oracle
  EXPECT_EQ(Send("DELETE", "snapshots/nosuch", root_).status, 404);
  EXPECT_EQ(Send("DELETE", "snapshots/s1", erin).status, 204);
  EXPECT_EQ(Send("GET", "namespace/stat?path=/proj/a.txt&snapshot=s1", erin).status, 404);
  EXPECT_EQ(Send("DELETE", "snapshots/all", root_).status, 204);
}

TEST_F(RestTest, UsageReportsDedupRatio) {
  Reply empty = Send("GET", "usage", root_);
  ASSERT_EQ(empty.status, 200);
  EXPECT_TRUE(empty.body["dedup_ratio"].is_null());
  std::string data(100000, 'x');
  for (int i = 0; i < 3; ++i) data[static_cast<size_t>(i) * 30000] = static_cast<char>('a' + i);
  WriteFile("/u/one", data);
  WriteFile("/u/two", data);
  Reply usage = Send("GET", "usage", root_);
  ASSERT_EQ(usage.status, 200);
  EXPECT_EQ(usage.body["files"], 2);
  EXPECT_EQ(usage.body["logical_bytes"], 200000);
  uint64_t stored = usage.body["stored_bytes"];
  ASSERT_GT(stored, 0u);
  EXPECT_DOUBLE_EQ(usage.body["dedup_ratio"].get<double>(), 200000.0 / static_cast<double>(stored));
}

TEST_F(RestTest, MalformedRequestsAreClearErrors) {
  for (const char* body : {"{", "[1,2]", "\"text\"", "{\"name\": 5}", "{\"name\":\"x\",\"typo\":1}",
                           "{\"name\":\"x\",\"groups\":\"eng\"}"}) {
    Reply r = Send("POST", "users", root_, body);
    EXPECT_EQ(r.status, 400) << body;
  }
  EXPECT_EQ(Send("POST", "users", root_, "{").Error(), "MalformedJSON");
  EXPECT_EQ(Send("POST", "users", root_, std::string(100, '[') + std::string(100, ']')).Error(),
            "MalformedJSON");
  EXPECT_EQ(Send("POST", "users", root_, "{\"name\":\"\xff\xfe\"}").Error(), "MalformedJSON");
  Reply big = Send("POST", "users", root_, std::string(2 << 20, ' '));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.Error(), "PayloadTooLarge");
  EXPECT_EQ(Send("POST", "users", root_, "").status, 400);  // name is required
  Reply unknown = Send("GET", "nosuch", root_);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.Error(), "NoSuchEndpoint");
  EXPECT_EQ(Send("GET", "users/", root_).status, 404);
  Reply method = Send("PATCH", "users", root_);
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(method.Error(), "MethodNotAllowed");
  EXPECT_EQ(Send("GET", "users?x=1", root_).status, 400);
}

TEST_F(RestTest, ProtocolErrorsAreJson) {
  net::RecordingResponseWriter response;
  frontend_->HandleProtocolError(400, "BadRequest", "bad head", response);
  EXPECT_EQ(response.status_, 400);
  json body = json::parse(response.body_);
  EXPECT_EQ(body["error"], "BadRequest");
  EXPECT_EQ(body["message"], "bad head");
}

TEST_F(RestTest, ResidencyIsSetOnDirectoriesByAdmins) {
  WriteFile("/eu/scan.dcm", "x");
  Reply set = Send("PUT", "namespace/residency?path=/eu", root_, R"({"tags":["eu","eu-west"]})");
  ASSERT_EQ(set.status, 200) << set.body.dump();
  EXPECT_EQ(set.body["tags"], json::array({"eu", "eu-west"}));
  EXPECT_EQ(volume_->Stat(RequestContext{}, "/eu")->attributes.at(kResidencyAttribute),
            "eu,eu-west");
  EXPECT_EQ(Send("GET", "namespace/residency?path=/eu", root_).body["tags"],
            json::array({"eu", "eu-west"}));
  // Bad tags, files and non-admins change nothing.
  EXPECT_EQ(Send("PUT", "namespace/residency?path=/eu", root_, R"({"tags":["EU!"]})").status, 400);
  EXPECT_EQ(
      Send("PUT", "namespace/residency?path=/eu/scan.dcm", root_, R"({"tags":["eu"]})").status,
      409);
  std::string alice = UserWithToken("alice");
  Rule("user:alice", "/eu/", "read,write,list");
  EXPECT_EQ(Send("PUT", "namespace/residency?path=/eu", alice, R"({"tags":[]})").status, 403);
  EXPECT_EQ(Send("GET", "namespace/residency?path=/eu", alice).status, 200);
  // An empty list lifts it.
  EXPECT_EQ(Send("PUT", "namespace/residency?path=/eu", root_, R"({"tags":[]})").body["tags"],
            json::array());
  EXPECT_EQ(volume_->Stat(RequestContext{}, "/eu")->attributes.count(kResidencyAttribute), 0u);
}

}  // namespace
}  // namespace weft::rest
