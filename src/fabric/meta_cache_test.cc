#include "fabric/meta_cache.h"

#include <gtest/gtest.h>

namespace weft::fabric {
namespace {

using std::chrono::milliseconds;

CachedLookup Found(const std::string& path) {
  CachedLookup l;
  l.info.path = path;
  return l;
}

class MetaCacheTest : public ::testing::Test {
 protected:
  SteadyTime t0_ = std::chrono::steady_clock::now();
  MetaCache cache_;
};

TEST_F(MetaCacheTest, AnswersOnlyUnderTheLeaseItCameWith) {
  auto ticket = cache_.Begin("/d", t0_);
  EXPECT_TRUE(cache_.InstallLookup(ticket, 1000, t0_ + milliseconds(10), "/d/a", Found("/d/a")));
  EXPECT_TRUE(cache_.FindLookup("/d", "/d/a", t0_ + milliseconds(899)).has_value());
  // The lease counts from the send, less a tenth: it ends here before it ends at the hub.
  EXPECT_FALSE(cache_.FindLookup("/d", "/d/a", t0_ + milliseconds(900)).has_value());
  // No lease, no caching.
  auto t2 = cache_.Begin("/e", t0_);
  EXPECT_FALSE(cache_.InstallLookup(t2, 0, t0_, "/e/a", Found("/e/a")));
  EXPECT_FALSE(cache_.FindLookup("/e", "/e/a", t0_).has_value());
}

TEST_F(MetaCacheTest, StatsAreAnsweredFromListings) {
  ReadDirPage page;
  for (const char* name : {"a", "b"}) {
    DirEntry e;
    e.name = name;
    e.info = FileInfo{};
    e.info->size = 7;
    page.entries.push_back(e);
  }
  auto t = cache_.Begin("/d", t0_);
  ASSERT_TRUE(cache_.InstallListed(t, 1000, t0_, "/d", page, /*whole=*/false));
  auto a = cache_.FindForStat("/d", "/d/a", t0_);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->status.ok());
  EXPECT_EQ(a->info.path, "/d/a");
  EXPECT_EQ(a->info.size, 7u);
  EXPECT_FALSE(cache_.FindLookup("/d", "/d/a", t0_).has_value());   // no chunks: not for reads
  EXPECT_FALSE(cache_.FindForStat("/d", "/d/c", t0_).has_value());  // maybe on a later page
  // A lookup answers before a listing; a whole listing says what is not there.
  ASSERT_TRUE(cache_.InstallLookup(t, 1000, t0_, "/d/a", Found("/d/a-looked-up")));
  EXPECT_EQ(cache_.FindForStat("/d", "/d/a", t0_)->info.path, "/d/a-looked-up");
  ASSERT_TRUE(cache_.InstallListed(t, 1000, t0_, "/d", page, /*whole=*/true));
  auto c = cache_.FindForStat("/d", "/d/c", t0_);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->status.code(), StatusCode::kNotFound);
  EXPECT_FALSE(cache_.FindForStat("/d", "/d/a", t0_ + milliseconds(900)).has_value());
  // A whole listing without infos cannot tell what is missing.
  ReadDirPage bare;
  bare.entries.push_back(DirEntry{});
  bare.entries.back().name = "x";
  auto t2 = cache_.Begin("/e", t0_);
  ASSERT_TRUE(cache_.InstallListed(t2, 1000, t0_, "/e", bare, /*whole=*/true));
  EXPECT_FALSE(cache_.FindForStat("/e", "/e/y", t0_).has_value());
}

TEST_F(MetaCacheTest, AnAnswerOvertakenByAnInvalidationIsNotInstalled) {
  auto ticket = cache_.Begin("/d", t0_);
  cache_.Invalidate(Affected{{"/d"}, {}});
  EXPECT_FALSE(cache_.InstallLookup(ticket, 1000, t0_, "/d/a", Found("/d/a")));
  // Subtree invalidations overtake answers for every key.
  auto t2 = cache_.Begin("/x/y", t0_);
  cache_.Invalidate(Affected{{}, {"/q"}});
  EXPECT_FALSE(cache_.InstallLookup(t2, 1000, t0_, "/x/y/z", Found("/x/y/z")));
  auto t3 = cache_.Begin("/x/y", t0_);
  EXPECT_TRUE(cache_.InstallLookup(t3, 1000, t0_, "/x/y/z", Found("/x/y/z")));
}

TEST_F(MetaCacheTest, InvalidationDropsTheDirectoryAndSubtrees) {
  for (const char* key : {"/a", "/a/b", "/ab", "/c"}) {
    auto t = cache_.Begin(key, t0_);
    ASSERT_TRUE(cache_.InstallLookup(t, 5000, t0_, std::string(key) + "/f", Found(key)));
  }
  cache_.Invalidate(Affected{{"/c"}, {"/a"}});
  EXPECT_FALSE(cache_.FindLookup("/a", "/a/f", t0_).has_value());
  EXPECT_FALSE(cache_.FindLookup("/a/b", "/a/b/f", t0_).has_value());
  EXPECT_FALSE(cache_.FindLookup("/c", "/c/f", t0_).has_value());
  EXPECT_TRUE(cache_.FindLookup("/ab", "/ab/f", t0_).has_value());
}

TEST_F(MetaCacheTest, EntriesFromAnExpiredLeaseDoNotRideOnANewOne) {
  auto t1 = cache_.Begin("/d", t0_);
  ASSERT_TRUE(cache_.InstallLookup(t1, 1000, t0_, "/d/old", Found("/d/old")));
  // Long after the first lease ran out, a new answer arrives with a new lease.
  SteadyTime later = t0_ + milliseconds(5000);
  auto t2 = cache_.Begin("/d", later);
  ASSERT_TRUE(cache_.InstallLookup(t2, 1000, later, "/d/new", Found("/d/new")));
  EXPECT_TRUE(cache_.FindLookup("/d", "/d/new", later).has_value());
  EXPECT_FALSE(cache_.FindLookup("/d", "/d/old", later).has_value());
}

// Renewing a lease that still runs keeps what it protects; one that lapsed, or that an
// invalidation overtook, keeps nothing.
TEST_F(MetaCacheTest, ARenewedLeaseKeepsItsEntriesALapsedOneDoesNot) {
  auto ticket = cache_.Begin("/d", t0_);
  ASSERT_TRUE(cache_.InstallLookup(ticket, 1000, t0_, "/d/a", Found("/d/a")));
  ASSERT_TRUE(cache_.InstallLookup(cache_.Begin("/e", t0_), 1000, t0_, "/e/a", Found("/e/a")));
  // Neither has half its lease left, but only /d was used since: only /d is worth renewing.
  EXPECT_TRUE(cache_.FindLookup("/d", "/d/a", t0_ + milliseconds(400)).has_value());
  EXPECT_TRUE(cache_.Renewable(t0_ + milliseconds(300)).empty());  // over half left
  EXPECT_EQ(cache_.Renewable(t0_ + milliseconds(600)), std::vector<std::string>{"/d"});
  auto renew = cache_.Begin("/d", t0_ + milliseconds(600));
  EXPECT_TRUE(cache_.Renew(renew, 1000, t0_ + milliseconds(620)));
  EXPECT_TRUE(cache_.FindLookup("/d", "/d/a", t0_ + milliseconds(1400)).has_value());
  // /e lapsed at 900 ms: a renewal asked later cannot vouch for its entries.
  EXPECT_FALSE(
      cache_.Renew(cache_.Begin("/e", t0_ + milliseconds(950)), 1000, t0_ + milliseconds(960)));
  EXPECT_FALSE(cache_.FindLookup("/e", "/e/a", t0_ + milliseconds(970)).has_value());
  // An invalidation between the ask and the answer wins.
  auto late = cache_.Begin("/d", t0_ + milliseconds(1200));
  Affected a;
  a.dirs.insert("/d");
  cache_.Invalidate(a);
  EXPECT_FALSE(cache_.Renew(late, 1000, t0_ + milliseconds(1210)));
  EXPECT_FALSE(cache_.FindLookup("/d", "/d/a", t0_ + milliseconds(1220)).has_value());
}

// A directory read counts as in use for kInUseFor, so its lease is renewed through what
// training does between epochs (evaluation, a checkpoint) and the next epoch finds it still
// leased; after that long without reads it runs out.
TEST_F(MetaCacheTest, ADirectoryStaysInUseForAWhileAfterItsLastRead) {
  ASSERT_TRUE(cache_.InstallLookup(cache_.Begin("/d", t0_), 1000, t0_, "/d/a", Found("/d/a")));
  ASSERT_TRUE(cache_.FindLookup("/d", "/d/a", t0_ + milliseconds(100)).has_value());
  SteadyTime renewed_until = t0_;
  const auto in_use = MetaCache::kInUseFor;
  for (auto t = t0_ + milliseconds(600); t < t0_ + in_use + std::chrono::seconds(2);
       t += milliseconds(200)) {
    if (cache_.Renewable(t).empty()) continue;
    ASSERT_TRUE(cache_.Renew(cache_.Begin("/d", t), 1000, t));
    renewed_until = t;
  }
  EXPECT_GT(renewed_until, t0_ + in_use - std::chrono::seconds(1));
  EXPECT_LT(renewed_until, t0_ + in_use + std::chrono::seconds(1));
  // Still leased that long after the last read, with no lookup asked of the hub meanwhile.
  EXPECT_TRUE(cache_.FindLookup("/d", "/d/a", renewed_until).has_value());
}

TEST_F(MetaCacheTest, EpochAndRemainingForChainedSpokes) {
  uint64_t epoch = cache_.Epoch("/d");
  auto t = cache_.Begin("/d", t0_);
  ASSERT_TRUE(cache_.InstallLookup(t, 1000, t0_, "/d/a", Found("/d/a")));
  EXPECT_EQ(cache_.Remaining("/d", epoch, t0_ + milliseconds(400)), milliseconds(500));
  cache_.Invalidate(Affected{{"/d"}, {}});
  EXPECT_EQ(cache_.Remaining("/d", epoch, t0_), milliseconds(0));
}

}  // namespace
}  // namespace weft::fabric
