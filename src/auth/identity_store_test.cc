#include "auth/identity_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <thread>

#include "io/mem_file_system.h"

namespace weft::auth {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

std::string ServerKey(char fill) {
  return std::string(kServerKeyBytes, fill);
}

class IdentityStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = Reopen(ServerKey('k')); }

  std::unique_ptr<IdentityStore> Reopen(const std::string& server_key) {
    auto store = IdentityStore::Open(kv_, server_key, &clock_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  void Put(std::string_view key, std::string_view value) {
    WriteBatch batch;
    batch.Put(key, value);
    ASSERT_TRUE(kv_->Write(batch).ok());
  }

  std::vector<std::pair<std::string, std::string>> Dump() {
    std::vector<std::pair<std::string, std::string>> out;
    auto it = kv_->NewIterator();
    for (it->Seek(""); it->Valid(); it->Next()) {
      out.emplace_back(std::string(it->key()), std::string(it->value()));
    }
    return out;
  }

  Rule MakeRule(std::string subject, std::string prefix, uint8_t permissions) {
    Rule rule;
    rule.subject = std::move(subject);
    rule.prefix = std::move(prefix);
    rule.permissions = permissions;
    return rule;
  }

  std::string AddRuleOrDie(std::string subject, std::string prefix, uint8_t permissions) {
    auto rule = store_->AddRule(MakeRule(std::move(subject), std::move(prefix), permissions));
    EXPECT_TRUE(rule.ok()) << rule.status().ToString();
    return rule.ok() ? rule->id : "";
  }

  StatusCode AuthCode(std::string_view principal, uint8_t needed, std::string_view path) {
    return store_->Authorize(principal, needed, path).code();
  }

  std::shared_ptr<KvStore> kv_ = NewMemKvStore();
  FakeClock clock_;
  std::unique_ptr<IdentityStore> store_;
};

TEST_F(IdentityStoreTest, OpenRejectsShortServerKey) {
  EXPECT_EQ(IdentityStore::Open(kv_, "short", &clock_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(IdentityStoreTest, UserLifecycle) {
  auto alice = store_->CreateUser("alice", {"eng", "data", "eng"});
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->groups, (std::vector<std::string>{"data", "eng"}));
  EXPECT_EQ(alice->created_ns, clock_.NowNanos());
  ASSERT_TRUE(store_->CreateUser("bob.smith_2-x", {}).ok());

  auto got = store_->GetUser("alice");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->groups, alice->groups);
  auto root = store_->GetUser("root");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->name, "root");
  EXPECT_EQ(store_->GetUser("carol").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetUser("anonymous").status().code(), StatusCode::kNotFound);

  auto users = store_->ListUsers();
  ASSERT_TRUE(users.ok());
  std::vector<std::string> names;
  for (const User& u : *users) names.push_back(u.name);
  EXPECT_EQ(names, (std::vector<std::string>{"alice", "bob.smith_2-x", "root"}));

  auto updated = store_->SetGroups("alice", {"ops"});
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ(updated->groups, std::vector<std::string>{"ops"});
  EXPECT_EQ(updated->created_ns, alice->created_ns);
  EXPECT_EQ(store_->SetGroups("carol", {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->SetGroups("root", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->SetGroups("alice", {"Bad"}).status().code(), StatusCode::kInvalidArgument);

  // Everything survives a reopen.
  store_ = Reopen(ServerKey('k'));
  got = store_->GetUser("alice");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->groups, std::vector<std::string>{"ops"});
  EXPECT_EQ(got->created_ns, alice->created_ns);

  EXPECT_TRUE(store_->DeleteUser("alice").ok());
  EXPECT_EQ(store_->GetUser("alice").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteUser("alice").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteUser("root").code(), StatusCode::kInvalidArgument);
  store_ = Reopen(ServerKey('k'));
  EXPECT_EQ(store_->GetUser("alice").status().code(), StatusCode::kNotFound);
}

TEST_F(IdentityStoreTest, CreateUserErrors) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  EXPECT_EQ(store_->CreateUser("alice", {}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->CreateUser("root", {}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->CreateUser("anonymous", {}).status().code(), StatusCode::kInvalidArgument);
  for (const std::string& bad :
       std::vector<std::string>{"", "Alice", "-a", ".a", "a/b", "a b", "a:b", std::string(65, 'a'),
                                std::string("a\0b", 3)}) {
    EXPECT_EQ(store_->CreateUser(bad, {}).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(store_->CreateUser(std::string(64, 'a'), {}).ok());
  EXPECT_EQ(store_->CreateUser("bob", {"ok", "Not-ok"}).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<std::string> many;
  for (int i = 0; i < 65; ++i) many.push_back("g" + std::to_string(i));
  EXPECT_EQ(store_->CreateUser("bob", many).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetUser("bob").status().code(), StatusCode::kNotFound);
}

TEST_F(IdentityStoreTest, KeyLifecycle) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  auto key = store_->CreateKey("alice");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  ASSERT_EQ(key->access_key_id.size(), 20u);
  EXPECT_TRUE(key->access_key_id.starts_with("WK"));
  for (char c : key->access_key_id) EXPECT_TRUE(std::isupper(c) || std::isdigit(c)) << c;
  ASSERT_EQ(key->secret_key.size(), 40u);
  for (char c : key->secret_key) EXPECT_TRUE(std::isalnum(c) || c == '+' || c == '/') << c;
  EXPECT_EQ(key->user, "alice");
  EXPECT_EQ(key->created_ns, clock_.NowNanos());

  auto other = store_->CreateKey("alice");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->access_key_id, key->access_key_id);
  EXPECT_NE(other->secret_key, key->secret_key);

  auto looked = store_->LookupKey(key->access_key_id);
  ASSERT_TRUE(looked.ok()) << looked.status().ToString();
  EXPECT_EQ(looked->secret_key, key->secret_key);
  EXPECT_EQ(looked->user, "alice");
  EXPECT_EQ(looked->created_ns, key->created_ns);

  auto listed = store_->ListKeys("alice");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  for (const AccessKey& k : *listed) {
    EXPECT_TRUE(k.secret_key.empty());
    EXPECT_EQ(k.user, "alice");
  }
  EXPECT_LT((*listed)[0].access_key_id, (*listed)[1].access_key_id);
  EXPECT_EQ(store_->ListKeys("nobody").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->CreateKey("nobody").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->CreateKey("anonymous").status().code(), StatusCode::kNotFound);

  EXPECT_TRUE(store_->DeleteKey(other->access_key_id).ok());
  EXPECT_EQ(store_->LookupKey(other->access_key_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteKey(other->access_key_id).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->LookupKey("").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->LookupKey(std::string(300, 'A')).status().code(), StatusCode::kNotFound);

  // Deleting the user deletes its keys.
  ASSERT_TRUE(store_->DeleteUser("alice").ok());
  EXPECT_EQ(store_->LookupKey(key->access_key_id).status().code(), StatusCode::kNotFound);
}

TEST_F(IdentityStoreTest, ImportKey) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  const std::string id = "AKIAIOSFODNN7EXAMPLE";
  const std::string secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  auto root_key = store_->ImportKey("root", id, secret);
  ASSERT_TRUE(root_key.ok()) << root_key.status().ToString();
  auto looked = store_->LookupKey(id);
  ASSERT_TRUE(looked.ok());
  EXPECT_EQ(looked->user, "root");
  EXPECT_EQ(looked->secret_key, secret);
  ASSERT_TRUE(store_->CreateKey("root").ok());
  EXPECT_EQ(store_->ListKeys("root")->size(), 2u);

  // Same id, same user: the secret is replaced and the creation time kept.
  clock_.AdvanceNanos(kSecond);
  ASSERT_TRUE(store_->ImportKey("root", id, "another-secret").ok());
  looked = store_->LookupKey(id);
  ASSERT_TRUE(looked.ok());
  EXPECT_EQ(looked->secret_key, "another-secret");
  EXPECT_EQ(looked->created_ns, root_key->created_ns);
  // Same id, other user: refused, nothing changes.
  EXPECT_EQ(store_->ImportKey("alice", id, secret).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->LookupKey(id)->user, "root");

  EXPECT_EQ(store_->ImportKey("nobody", "ABCDEFGHIJKLMNOP", secret).status().code(),
            StatusCode::kNotFound);
  for (const std::string& bad_id :
       std::vector<std::string>{"SHORT", std::string(129, 'A'), std::string("ABCDEFGHIJKLMNO-"),
                                std::string("ABCDEFGHIJKLMNO\0", 16)}) {
    EXPECT_EQ(store_->ImportKey("alice", bad_id, secret).status().code(),
              StatusCode::kInvalidArgument);
  }
  for (const std::string& bad_secret : std::vector<std::string>{
           "short", "has a space in it", std::string(129, 'x'), std::string("tab\there!"),
           std::string("\x80\x81\x82\x83\x84\x85\x86\x87")}) {
    EXPECT_EQ(store_->ImportKey("alice", "ABCDEFGHIJKLMNOP", bad_secret).status().code(),
              StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(store_->ImportKey("alice", std::string(128, 'z'), std::string(128, '~')).ok());
}

// A rotation gives a new key and lets the old ones work for the overlap, not a moment longer;
// the records survive a reopen, and an expired key is never brought back by importing it.
TEST_F(IdentityStoreTest, RotatedKeysWorkForTheOverlapThenStop) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  auto first = store_->CreateKey("alice");
  auto other = store_->CreateKey("root");
  ASSERT_TRUE(first.ok() && other.ok());
  EXPECT_EQ(store_->LookupKey(first->access_key_id)->expires_ns, 0);  // cached: never expires
  auto second = store_->RotateKey("alice", 60 * kSecond);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(second->access_key_id, first->access_key_id);
  EXPECT_FALSE(second->secret_key.empty());
  const int64_t until = clock_.NowNanos() + 60 * kSecond;
  auto old = store_->LookupKey(first->access_key_id);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->expires_ns, until);
  EXPECT_EQ(store_->ListKeys("alice")->size(), 2u);
  // A second rotation inside the overlap does not lengthen the first key's life.
  clock_.AdvanceNanos(10 * kSecond);
  auto third = store_->RotateKey("alice", 3600 * kSecond);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(store_->LookupKey(first->access_key_id)->expires_ns, until);
  EXPECT_EQ(store_->LookupKey(second->access_key_id)->expires_ns,
            clock_.NowNanos() + 3600 * kSecond);
  store_ = Reopen(ServerKey('k'));
  clock_.AdvanceNanos(50 * kSecond);  // exactly the first key's expiry
  EXPECT_EQ(store_->LookupKey(first->access_key_id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->LookupKey(second->access_key_id).ok());
  EXPECT_EQ(store_->ListKeys("alice")->size(), 2u);
  EXPECT_EQ(store_->ImportKey("alice", first->access_key_id, "a-new-secret-for-it").status().code(),
            StatusCode::kFailedPrecondition);
  // Overlap 0: every other key stops at once. Root's key was never touched.
  auto fourth = store_->RotateKey("alice", 0);
  ASSERT_TRUE(fourth.ok());
  auto left = store_->ListKeys("alice");
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].access_key_id, fourth->access_key_id);
  EXPECT_EQ(store_->LookupKey(third->access_key_id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->LookupKey(other->access_key_id).ok());
  EXPECT_EQ(store_->RotateKey("alice", -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->RotateKey("nobody", 0).status().code(), StatusCode::kNotFound);
}

TEST_F(IdentityStoreTest, SecretsAreEncryptedAtRest) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  auto generated = store_->CreateKey("alice");
  ASSERT_TRUE(generated.ok());
  const std::string imported = "imported-secret-value-123";
  ASSERT_TRUE(store_->ImportKey("alice", "ABCDEFGHIJKLMNOP", imported).ok());
  for (const auto& [key, value] : Dump()) {
    EXPECT_EQ(value.find(generated->secret_key), std::string::npos) << key;
    EXPECT_EQ(value.find(imported), std::string::npos) << key;
    EXPECT_EQ(value.find(ServerKey('k')), std::string::npos) << key;
  }

  // Same server key: the secrets read back.
  store_ = Reopen(ServerKey('k'));
  auto looked = store_->LookupKey(generated->access_key_id);
  ASSERT_TRUE(looked.ok()) << looked.status().ToString();
  EXPECT_EQ(looked->secret_key, generated->secret_key);
  EXPECT_EQ(store_->LookupKey("ABCDEFGHIJKLMNOP")->secret_key, imported);

  // A record copied under another key id does not decrypt (the id is authenticated data).
  auto value = kv_->Get("AkABCDEFGHIJKLMNOP");
  ASSERT_TRUE(value.ok() && value->has_value());
  Put("AkQRSTUVWXYZ012345", **value);
  auto moved = store_->LookupKey("QRSTUVWXYZ012345");
  EXPECT_EQ(moved.status().code(), StatusCode::kCorruption);

  // Another server key: the store opens, but no secret decrypts.
  store_ = Reopen(ServerKey('x'));
  auto wrong = store_->LookupKey(generated->access_key_id);
  ASSERT_EQ(wrong.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(wrong.status().message(), "access key " + generated->access_key_id +
                                          ": secret does not decrypt (wrong server key?)");
}

TEST_F(IdentityStoreTest, RuleLifecycle) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  auto r1 = store_->AddRule(MakeRule("user:alice", "/b/alice/", kRead | kList));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_FALSE(r1->id.empty());
  const std::string r2 = AddRuleOrDie("group:eng", "/", kAdmin);
  const std::string r3 = AddRuleOrDie("authenticated", "/pub", kRead);
  const std::string r4 = AddRuleOrDie("*", "/pub/", kList);
  const std::string r5 = AddRuleOrDie("user:root", "/", kWrite);
  auto rules = store_->ListRules();
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 5u);
  EXPECT_EQ((*rules)[0].id, r1->id);
  EXPECT_EQ((*rules)[0].subject, "user:alice");
  EXPECT_EQ((*rules)[0].prefix, "/b/alice/");
  EXPECT_EQ((*rules)[0].permissions, kRead | kList);
  EXPECT_EQ((*rules)[1].id, r2);
  EXPECT_EQ((*rules)[4].id, r5);

  ASSERT_TRUE(store_->DeleteRule(r5).ok());
  EXPECT_EQ(store_->DeleteRule(r5).code(), StatusCode::kNotFound);
  for (std::string_view bad : {"", "r", "r0", "r99", "x1", "r1x", "r-1", "r01"}) {
    EXPECT_EQ(store_->DeleteRule(bad).code(), StatusCode::kNotFound) << bad;
  }

  // Rules and the id counter persist: a deleted id is never handed out again.
  store_ = Reopen(ServerKey('k'));
  rules = store_->ListRules();
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 4u);
  EXPECT_EQ((*rules)[3].id, r4);
  const std::string r6 = AddRuleOrDie("*", "/x/", kRead);
  EXPECT_NE(r6, r5);
  EXPECT_EQ(store_->ListRules()->back().id, r6);

  // Deleting a user deletes its user: rules, nothing else.
  ASSERT_TRUE(store_->DeleteUser("alice").ok());
  rules = store_->ListRules();
  ASSERT_EQ(rules->size(), 4u);
  for (const Rule& rule : *rules) EXPECT_NE(rule.id, r1->id);
}

TEST_F(IdentityStoreTest, AddRuleValidates) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  struct Case {
    std::string subject;
    std::string prefix;
    uint8_t permissions;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {"user:alice", "/", kRead, StatusCode::kOk},
      {"group:new-group", "/b/", kRead, StatusCode::kOk},
      {"user:nobody", "/", kRead, StatusCode::kNotFound},
      {"user:anonymous", "/", kRead, StatusCode::kInvalidArgument},
      {"user:", "/", kRead, StatusCode::kInvalidArgument},
      {"user:Alice", "/", kRead, StatusCode::kInvalidArgument},
      {"group:", "/", kRead, StatusCode::kInvalidArgument},
      {"alice", "/", kRead, StatusCode::kInvalidArgument},
      {"", "/", kRead, StatusCode::kInvalidArgument},
      {"**", "/", kRead, StatusCode::kInvalidArgument},
      {"*", "", kRead, StatusCode::kInvalidArgument},
      {"*", "b/", kRead, StatusCode::kInvalidArgument},
      {"*", "/b/../c", kRead, StatusCode::kInvalidArgument},
      {"*", "/b/./c", kRead, StatusCode::kInvalidArgument},
      {"*", "/b/..", kRead, StatusCode::kInvalidArgument},
      {"*", "/..", kRead, StatusCode::kInvalidArgument},
      {"*", std::string("/b\0c", 4), kRead, StatusCode::kInvalidArgument},
      {"*", "/" + std::string(4095, 'a'), kRead, StatusCode::kOk},
      {"*", "/" + std::string(4096, 'a'), kRead, StatusCode::kInvalidArgument},
      {"*", "/b/..x/", kRead, StatusCode::kOk},
      {"*", "/", 0, StatusCode::kInvalidArgument},
      {"*", "/", 16, StatusCode::kInvalidArgument},
  };
  size_t added = 0;
  for (const Case& c : cases) {
    auto rule = store_->AddRule(MakeRule(c.subject, c.prefix, c.permissions));
    EXPECT_EQ(rule.status().code(), c.code) << c.subject << " " << c.prefix.substr(0, 20);
    if (rule.ok()) ++added;
  }
  EXPECT_EQ(store_->ListRules()->size(), added);
}

TEST_F(IdentityStoreTest, AuthorizeTruthTable) {
  ASSERT_TRUE(store_->CreateUser("alice", {"eng"}).ok());
  ASSERT_TRUE(store_->CreateUser("bob", {}).ok());
  ASSERT_TRUE(store_->CreateUser("carol", {"ops"}).ok());

  // Nothing is allowed without a rule, except to root.
  EXPECT_TRUE(store_->Authorize("root", kAdmin | kWrite, "/anything").ok());
  EXPECT_EQ(AuthCode("alice", kRead, "/b/alice/x"), StatusCode::kPermissionDenied);
  EXPECT_EQ(AuthCode("anonymous", kRead, "/pub/x"), StatusCode::kPermissionDenied);

  const std::string user_rule = AddRuleOrDie("user:alice", "/b/alice/", kRead | kWrite | kList);
  AddRuleOrDie("group:ops", "/b/ops", kAdmin);
  AddRuleOrDie("authenticated", "/shared/", kRead);
  const std::string public_rule = AddRuleOrDie("*", "/pub/", kRead | kList);

  struct Case {
    std::string principal;
    uint8_t needed;
    std::string path;
    bool allowed;
  };
  const std::vector<Case> cases = {
      {"root", kAdmin, "/", true},
      // A user rule: covers its prefix, only its bits, only its user.
      {"alice", kRead, "/b/alice/x", true},
      {"alice", kRead | kWrite | kList, "/b/alice/dir/", true},
      {"alice", kList, "/b/alice/", true},
      {"alice", kRead, "/b/alice", false},  // "/b/alice/" does not cover "/b/alice"
      {"alice", kAdmin, "/b/alice/x", false},
      {"alice", kRead, "/b/bob/x", false},
      {"bob", kRead, "/b/alice/x", false},
      // A group rule with admin: every bit, and a prefix without '/' covers "/b/ops2" too.
      {"carol", kRead | kWrite | kList | kAdmin, "/b/ops/x", true},
      {"carol", kWrite, "/b/ops", true},
      {"carol", kWrite, "/b/ops2/y", true},
      {"carol", kWrite, "/b/op", false},
      {"alice", kRead, "/b/ops/x", false},
      // "authenticated": every user, not anonymous.
      {"bob", kRead, "/shared/a", true},
      {"bob", kWrite, "/shared/a", false},
      {"anonymous", kRead, "/shared/a", false},
      // "*": anonymous and users alike.
      {"anonymous", kRead | kList, "/pub/a", true},
      {"anonymous", kWrite, "/pub/a", false},
      {"bob", kList, "/pub/", true},
      {"anonymous", kRead, "/pub", false},
      // Permissions from several rules add up.
      {"alice", kRead | kList, "/pub/a", true},
      // Unknown principals and malformed requests are denied.
      {"mallory", kRead, "/pub/a", false},
      {"", kRead, "/pub/a", false},
      {"alice", kRead, "/b/alice/../bob/x", false},
      {"alice", kRead, "/b/alice/./x", false},
      {"alice", kRead, "b/alice/x", false},
      {"alice", kRead, "", false},
      {"alice", 0, "/b/alice/x", false},
      {"alice", 32, "/b/alice/x", false},
  };
  for (const Case& c : cases) {
    const Status s = store_->Authorize(c.principal, c.needed, c.path);
    EXPECT_EQ(s.ok(), c.allowed) << c.principal << " " << int{c.needed} << " " << c.path << ": "
                                 << s.ToString();
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
      EXPECT_EQ(s.reason(), Reason::kAccessDenied) << s.message();
    }
  }
  EXPECT_EQ(store_->Authorize("bob", kWrite | kRead, "/shared/a").message(),
            "bob may not write /shared/a");

  // Mutations take effect at once: rule deletion, group change, user deletion.
  ASSERT_TRUE(store_->DeleteRule(public_rule).ok());
  EXPECT_EQ(AuthCode("anonymous", kRead, "/pub/a"), StatusCode::kPermissionDenied);
  ASSERT_TRUE(store_->SetGroups("bob", {"ops"}).ok());
  EXPECT_TRUE(store_->Authorize("bob", kWrite, "/b/ops/x").ok());
  ASSERT_TRUE(store_->SetGroups("carol", {}).ok());
  EXPECT_EQ(AuthCode("carol", kWrite, "/b/ops/x"), StatusCode::kPermissionDenied);
  ASSERT_TRUE(store_->DeleteUser("alice").ok());
  EXPECT_EQ(AuthCode("alice", kRead, "/b/alice/x"), StatusCode::kPermissionDenied);
  EXPECT_EQ(AuthCode("alice", kRead, "/shared/x"), StatusCode::kPermissionDenied);
  // A new alice does not inherit the old one's rules.
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  EXPECT_EQ(AuthCode("alice", kRead, "/b/alice/x"), StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_->Authorize("alice", kRead, "/shared/x").ok());
  EXPECT_EQ(store_->DeleteRule(user_rule).code(), StatusCode::kNotFound);

  // And a reopened store answers the same.
  store_ = Reopen(ServerKey('k'));
  EXPECT_TRUE(store_->Authorize("bob", kWrite, "/b/ops/x").ok());
  EXPECT_EQ(AuthCode("anonymous", kRead, "/pub/a"), StatusCode::kPermissionDenied);
}

TEST_F(IdentityStoreTest, AnonymousNeedsAnEveryoneRule) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  AddRuleOrDie("authenticated", "/", kRead);
  EXPECT_EQ(AuthCode("anonymous", kRead, "/x"), StatusCode::kPermissionDenied);
  const std::string id = AddRuleOrDie("*", "/", kRead);
  EXPECT_TRUE(store_->Authorize("anonymous", kRead, "/x").ok());
  EXPECT_EQ(AuthCode("anonymous", kWrite, "/x"), StatusCode::kPermissionDenied);
  ASSERT_TRUE(store_->DeleteRule(id).ok());
  EXPECT_EQ(AuthCode("anonymous", kRead, "/x"), StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_->Authorize("alice", kRead, "/x").ok());
}

TEST_F(IdentityStoreTest, AuthorizeRacesWithMutations) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  AddRuleOrDie("user:alice", "/a/", kRead);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (!store_->Authorize("alice", kRead, "/a/x").ok()) failures.fetch_add(1);
        (void)store_->Authorize("alice", kWrite, "/b/x");
      }
    });
  }
  for (int i = 0; i < 50; ++i) {
    const std::string id = AddRuleOrDie("user:alice", "/b/", kWrite);
    ASSERT_TRUE(store_->DeleteRule(id).ok());
    ASSERT_TRUE(store_->SetGroups("alice", {"g" + std::to_string(i % 3)}).ok());
  }
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(IdentityStoreTest, Tokens) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  auto token = store_->IssueToken("alice", 60 * kSecond);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_TRUE(token->token.starts_with("wt1."));
  for (char c : token->token) EXPECT_TRUE(std::isalnum(c) || c == '-' || c == '_' || c == '.');
  EXPECT_EQ(token->user, "alice");
  EXPECT_EQ(token->expires_ns, clock_.NowNanos() + 60 * kSecond);
  auto user = store_->VerifyToken(token->token);
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  EXPECT_EQ(*user, "alice");
  // Issuing writes nothing; a reopened store with the same key accepts the token.
  store_ = Reopen(ServerKey('k'));
  EXPECT_TRUE(store_->VerifyToken(token->token).ok());

  auto root = store_->IssueToken("root", kSecond);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(*store_->VerifyToken(root->token), "root");
  EXPECT_EQ(store_->IssueToken("nobody", kSecond).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->IssueToken("anonymous", kSecond).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->IssueToken("alice", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_->IssueToken("alice", INT64_MAX).ok());

  // Tampering: every single-character change, truncation, junk.
  const std::string& t = token->token;
  for (size_t i = 0; i < t.size(); ++i) {
    std::string bad = t;
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    EXPECT_EQ(store_->VerifyToken(bad).status().code(), StatusCode::kPermissionDenied) << i;
  }
  for (const std::string& bad : std::vector<std::string>{
           std::string(), std::string("wt1."), std::string("wt1.."), t.substr(0, t.size() - 1),
           t + "A", t + ".x", std::string(600, 'w')}) {
    EXPECT_EQ(store_->VerifyToken(bad).status().code(), StatusCode::kPermissionDenied) << bad;
  }
  // Another server key rejects it.
  auto other = Reopen(ServerKey('x'));
  EXPECT_EQ(other->VerifyToken(t).status().code(), StatusCode::kPermissionDenied);

  // Expiry.
  clock_.AdvanceNanos(60 * kSecond - 1);
  EXPECT_TRUE(store_->VerifyToken(t).ok());
  clock_.AdvanceNanos(1);
  auto expired = store_->VerifyToken(t);
  EXPECT_EQ(expired.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(expired.status().message().find("expired"), std::string::npos);

  // A deleted user's tokens die with it, and a new user of the same name does not revive them.
  auto fresh = store_->IssueToken("alice", 60 * kSecond);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(store_->DeleteUser("alice").ok());
  EXPECT_EQ(store_->VerifyToken(fresh->token).status().code(), StatusCode::kPermissionDenied);
  clock_.AdvanceNanos(1);
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  EXPECT_EQ(store_->VerifyToken(fresh->token).status().code(), StatusCode::kPermissionDenied);
}

TEST(PermissionsTest, RoundTrip) {
  for (uint8_t p = 1; p < 16; ++p) {
    const std::string text = PermissionsToString(p);
    auto parsed = ParsePermissions(text);
    ASSERT_TRUE(parsed.ok()) << text;
    EXPECT_EQ(*parsed, p) << text;
  }
  EXPECT_EQ(PermissionsToString(kRead | kList), "read,list");
  EXPECT_EQ(PermissionsToString(kAdmin | kRead | kWrite | kList), "read,write,list,admin");
  EXPECT_EQ(*ParsePermissions("list, read"), kRead | kList);
  EXPECT_EQ(*ParsePermissions("write,write"), kWrite);
  for (std::string_view bad : {"", ",", "read,", "Read", "execute", "read;write", "read,,list"}) {
    EXPECT_EQ(ParsePermissions(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(IdentityStoreTest, CorruptUserRecordFailsOpen) {
  ASSERT_TRUE(store_->CreateUser("alice", {"a", "b"}).ok());
  auto value = kv_->Get("Aualice");
  ASSERT_TRUE(value.ok() && value->has_value());
  const std::string good = **value;
  // Every truncation, a trailing byte, a wrong codec, unsorted groups, a bad name in the key.
  std::vector<std::string> bad_values;
  for (size_t n = 0; n < good.size(); ++n) bad_values.push_back(good.substr(0, n));
  bad_values.push_back(good + "x");
  bad_values.push_back("\x02" + good.substr(1));
  bad_values.push_back(good.substr(0, good.size() - 4) + "\x01" + "b\x01" + "a");
  for (const std::string& bad : bad_values) {
    Put("Aualice", bad);
    auto store = IdentityStore::Open(kv_, ServerKey('k'), &clock_);
    EXPECT_EQ(store.status().code(), StatusCode::kCorruption);
  }
  Put("Aualice", good);
  EXPECT_TRUE(IdentityStore::Open(kv_, ServerKey('k'), &clock_).ok());
  Put("AuBad Name", good);
  EXPECT_EQ(IdentityStore::Open(kv_, ServerKey('k'), &clock_).status().code(),
            StatusCode::kCorruption);
}

TEST_F(IdentityStoreTest, CorruptRuleRecordFailsOpen) {
  const std::string id = AddRuleOrDie("*", "/pub/", kRead);
  std::string key;
  for (const auto& [k, v] : Dump()) {
    if (k.starts_with("Ar")) key = k;
  }
  ASSERT_EQ(key.size(), 10u);
  const std::string good = *kv_->Get(key).value();
  std::vector<std::string> bad_values;
  for (size_t n = 0; n < good.size(); ++n) bad_values.push_back(good.substr(0, n));
  bad_values.push_back(good + "x");
  std::string zero_perms = good;
  zero_perms.back() = '\0';
  bad_values.push_back(zero_perms);
  std::string bad_prefix = good;
  bad_prefix.replace(bad_prefix.find("/pub/"), 5, "/../x");
  bad_values.push_back(bad_prefix);
  for (const std::string& bad : bad_values) {
    Put(key, bad);
    EXPECT_EQ(IdentityStore::Open(kv_, ServerKey('k'), &clock_).status().code(),
              StatusCode::kCorruption);
  }
  Put(key, good);
  EXPECT_TRUE(IdentityStore::Open(kv_, ServerKey('k'), &clock_).ok());
  Put("Arshort", good);
  EXPECT_EQ(IdentityStore::Open(kv_, ServerKey('k'), &clock_).status().code(),
            StatusCode::kCorruption);
}

TEST_F(IdentityStoreTest, CorruptKeyRecord) {
  ASSERT_TRUE(store_->CreateUser("alice", {}).ok());
  auto key = store_->CreateKey("alice");
  ASSERT_TRUE(key.ok());
  const std::string kv_key = "Ak" + key->access_key_id;
  const std::string good = *kv_->Get(kv_key).value();
  std::vector<std::string> bad_values;
  for (size_t n = 0; n < good.size(); ++n) bad_values.push_back(good.substr(0, n));
  bad_values.push_back(good + "x");
  for (const std::string& bad : bad_values) {
    Put(kv_key, bad);
    EXPECT_EQ(store_->LookupKey(key->access_key_id).status().code(), StatusCode::kCorruption);
    EXPECT_EQ(store_->ListKeys("alice").status().code(), StatusCode::kCorruption);
  }
  // A flipped ciphertext byte or a record edited to name another user: does not decrypt.
  std::string flipped = good;
  flipped[flipped.size() - 20] ^= 1;
  Put(kv_key, flipped);
  EXPECT_EQ(store_->LookupKey(key->access_key_id).status().code(), StatusCode::kCorruption);
  ASSERT_TRUE(store_->CreateUser("bobby", {}).ok());
  std::string renamed = good;
  renamed.replace(renamed.find("alice"), 5, "bobby");
  Put(kv_key, renamed);
  EXPECT_EQ(store_->LookupKey(key->access_key_id).status().code(), StatusCode::kCorruption);
  Put(kv_key, good);
  EXPECT_EQ(store_->LookupKey(key->access_key_id)->secret_key, key->secret_key);
}

TEST_F(IdentityStoreTest, FormatVersion) {
  auto format = kv_->Get("Af");
  ASSERT_TRUE(format.ok() && format->has_value());
  EXPECT_EQ(**format, std::string("\0\0\0\x01", 4));
  Put("Af", std::string("\0\0\0\x02", 4));
  EXPECT_EQ(IdentityStore::Open(kv_, ServerKey('k'), &clock_).status().code(),
            StatusCode::kFailedPrecondition);
  Put("Af", "x");
  EXPECT_EQ(IdentityStore::Open(kv_, ServerKey('k'), &clock_).status().code(),
            StatusCode::kCorruption);
  Put("Af", std::string("\0\0\0\x01", 4));
  Put("An", "bad");
  EXPECT_EQ(IdentityStore::Open(kv_, ServerKey('k'), &clock_).status().code(),
            StatusCode::kCorruption);
}

TEST(ServerKeyTest, CreatesThenLoadsOnMemFileSystem) {
  auto fs = NewMemFileSystem();
  ASSERT_TRUE(fs->CreateDirs("/data").ok());
  auto created = LoadOrCreateServerKey(*fs, "/data/server.key");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->size(), kServerKeyBytes);
  auto loaded = LoadOrCreateServerKey(*fs, "/data/server.key");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(*loaded, *created);
  // Two fresh keys differ.
  auto other = LoadOrCreateServerKey(*fs, "/data/other.key");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *created);
  // A missing directory is an error, not a key.
  EXPECT_FALSE(LoadOrCreateServerKey(*fs, "/missing/server.key").ok());

  ASSERT_TRUE(WriteFileAtomically(fs.get(), "/data/short.key", "too short").ok());
  auto bad = LoadOrCreateServerKey(*fs, "/data/short.key");
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("/data/short.key holds 9 bytes, expected 32"),
            std::string::npos)
      << bad.status().message();
  // The bad file is left alone for the operator.
  EXPECT_EQ(*ReadFileToString(fs.get(), "/data/short.key"), "too short");
}

TEST(ServerKeyTest, PosixFileIsPrivate) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/weft-key-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/server.key";
  auto created = LoadOrCreateServerKey(*PosixFileSystem(), path);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, static_cast<off_t>(kServerKeyBytes));
  auto loaded = LoadOrCreateServerKey(*PosixFileSystem(), path);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(*loaded, *created);
  EXPECT_EQ(PosixFileSystem()->ListDir(dir)->size(), 1u);  // no temp file left behind
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// LookupKey keeps decrypted keys in memory; every mutation must be seen at once.
TEST_F(IdentityStoreTest, KeyCacheFollowsMutations) {
  ASSERT_TRUE(store_->CreateUser("carol", {}).ok());
  auto key = store_->ImportKey("carol", "CAROLKEY000000000001", "first-secret");
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(store_->LookupKey("CAROLKEY000000000001")->secret_key, "first-secret");
  ASSERT_TRUE(store_->ImportKey("carol", "CAROLKEY000000000001", "second-secret").ok());
  EXPECT_EQ(store_->LookupKey("CAROLKEY000000000001")->secret_key, "second-secret");
  ASSERT_TRUE(store_->DeleteKey("CAROLKEY000000000001").ok());
  EXPECT_EQ(store_->LookupKey("CAROLKEY000000000001").status().code(), StatusCode::kNotFound);
  auto other = store_->CreateKey("carol");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(store_->LookupKey(other->access_key_id).ok());
  ASSERT_TRUE(store_->DeleteUser("carol").ok());
  EXPECT_EQ(store_->LookupKey(other->access_key_id).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::auth
