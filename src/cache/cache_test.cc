#include "cache/cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weft::cache {
namespace {

Request Req(Key key, uint64_t size = 1) {
  Request r;
  r.item.key = key;
  r.item.size = size;
  return r;
}

// Records every call, evicts the oldest insert (or what `forced_victim` says).
class ScriptedPolicy : public Policy {
 public:
  std::string name() const override { return "scripted"; }
  void OnAccess(const Request& r, bool hit) override {
    log += (hit ? "hit:" : "miss:") + std::to_string(r.item.key) + " ";
  }
  void OnInsert(const Request& r) override {
    log += std::string(r.prefetch ? "prefetch:" : "insert:") + std::to_string(r.item.key) + " ";
    order.push_back(r.item.key);
  }
  void OnRemove(Key key) override {
    log += "remove:" + std::to_string(key) + " ";
    std::erase(order, key);
  }
  std::optional<Key> Victim(const Request&) override {
    if (bypass) return std::nullopt;
    if (forced_victim.has_value()) return forced_victim;
    return order.front();
  }

  std::string log;
  std::vector<Key> order;
  bool bypass = false;
  std::optional<Key> forced_victim;
};

TEST(CacheTest, HitMissAndEvictionByBytes) {
  auto owned = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* p = owned.get();
  Cache cache(10, std::move(owned));
  std::vector<Key> evicted;
  EXPECT_EQ(cache.Read(Req(1, 4), &evicted), Outcome::kAdmitted);
  EXPECT_EQ(cache.Read(Req(2, 4), &evicted), Outcome::kAdmitted);
  EXPECT_EQ(cache.Read(Req(1, 4), &evicted), Outcome::kHit);
  EXPECT_EQ(cache.used_bytes(), 8u);
  // 7 bytes need both out: the policy is asked until the item fits.
  EXPECT_EQ(cache.Read(Req(3, 7), &evicted), Outcome::kAdmitted);
  EXPECT_EQ(evicted, (std::vector<Key>{1, 2}));
  EXPECT_EQ(cache.used_bytes(), 7u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(p->log, "miss:1 insert:1 miss:2 insert:2 hit:1 miss:3 remove:1 remove:2 insert:3 ");
}

TEST(CacheTest, TooLargeOrPolicyBypassLeavesItemOut) {
  auto owned = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* p = owned.get();
  Cache cache(10, std::move(owned));
  std::vector<Key> evicted;
  EXPECT_EQ(cache.Read(Req(1, 11), &evicted), Outcome::kBypassed);
  EXPECT_EQ(cache.Read(Req(2, 6), &evicted), Outcome::kAdmitted);
  p->bypass = true;
  EXPECT_EQ(cache.Read(Req(3, 6), &evicted), Outcome::kBypassed);
  EXPECT_TRUE(evicted.empty());
  EXPECT_TRUE(cache.Contains(2));
  EXPECT_FALSE(cache.Contains(3));
  EXPECT_EQ(cache.Read(Req(4, 4), nullptr), Outcome::kAdmitted);  // fits without a victim
}

TEST(CacheTest, InsertIsAPrefetchAndNotARead) {
  auto owned = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* p = owned.get();
  Cache cache(2, std::move(owned));
  std::vector<Key> evicted;
  EXPECT_TRUE(cache.Insert(Req(1), &evicted));
  EXPECT_FALSE(cache.Insert(Req(1), &evicted));  // already cached
  EXPECT_EQ(cache.Read(Req(1), &evicted), Outcome::kHit);
  EXPECT_EQ(p->log, "prefetch:1 hit:1 ");
}

TEST(CacheTest, InsertIfRoomNeverEvicts) {
  auto owned = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* p = owned.get();
  Cache cache(3, std::move(owned));
  EXPECT_TRUE(cache.InsertIfRoom(Req(1, 2)));
  EXPECT_EQ(cache.free_bytes(), 1u);
  EXPECT_FALSE(cache.InsertIfRoom(Req(2, 2)));  // would need an eviction: left out
  EXPECT_TRUE(cache.Contains(1));
  EXPECT_FALSE(cache.Contains(2));
  EXPECT_TRUE(cache.InsertIfRoom(Req(3, 1)));
  EXPECT_EQ(cache.free_bytes(), 0u);
  EXPECT_EQ(p->log, "prefetch:1 prefetch:3 ");  // 2 never reached the policy
}

TEST(CacheTest, EraseTellsThePolicy) {
  auto owned = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* p = owned.get();
  Cache cache(5, std::move(owned));
  ASSERT_EQ(cache.Read(Req(1, 3), nullptr), Outcome::kAdmitted);
  cache.Erase(1);
  cache.Erase(9);  // unknown: nothing happens
  EXPECT_EQ(cache.used_bytes(), 0u);
  EXPECT_FALSE(cache.Contains(1));
  EXPECT_EQ(p->log, "miss:1 insert:1 remove:1 ");
}

TEST(CacheDeathTest, UncachedVictimIsABypass) {
  auto owned = std::make_unique<ScriptedPolicy>();
  ScriptedPolicy* p = owned.get();
  Cache cache(1, std::move(owned));
  ASSERT_EQ(cache.Read(Req(1), nullptr), Outcome::kAdmitted);
  p->forced_victim = 42;
  std::vector<Key> evicted;
  EXPECT_DEBUG_DEATH(
      {
        EXPECT_EQ(cache.Read(Req(2), &evicted), Outcome::kBypassed);
        EXPECT_TRUE(cache.Contains(1));
      },
      "uncached victim");
}

TEST(MakePolicyTest, KnownAndUnknownNames) {
  for (const std::string& name : PolicyNames()) {
    auto p = MakePolicy(name, 100);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name(), name);
  }
  std::string error;
  EXPECT_EQ(MakePolicy("mru", 100, 1, &error), nullptr);
  EXPECT_NE(error.find("\"mru\""), std::string::npos) << error;
  EXPECT_NE(error.find("lru, arc, sieve, s3fifo, pin, epoch, neural, belady"), std::string::npos)
      << error;
  EXPECT_EQ(MakePolicy("mru", 100), nullptr);  // no error sink: still no crash
}

}  // namespace
}  // namespace weft::cache
