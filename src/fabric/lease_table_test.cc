#include "fabric/lease_table.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace weft::fabric {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

Affected Dirs(std::initializer_list<std::string> dirs) {
  Affected a;
  a.dirs.insert(dirs.begin(), dirs.end());
  return a;
}

TEST(LeaseTableTest, PathHelpers) {
  EXPECT_EQ(ParentDir("/a/b/c"), "/a/b");
  EXPECT_EQ(ParentDir("/a"), "/");
  EXPECT_EQ(ParentDir("/"), "/");
  EXPECT_TRUE(IsAtOrUnder("/a/b", "/a"));
  EXPECT_TRUE(IsAtOrUnder("/a", "/a"));
  EXPECT_TRUE(IsAtOrUnder("/a", "/"));
  EXPECT_FALSE(IsAtOrUnder("/ab", "/a"));
  EXPECT_FALSE(IsAtOrUnder("/a", "/a/b"));
}

TEST(LeaseTableTest, RevokeWithoutHoldersReturnsAtOnce) {
  LeaseTable table(LeaseTableOptions{milliseconds(5000)});
  auto start = Steady::now();
  auto r = table.Revoke(Dirs({"/a"}));
  EXPECT_LT(Steady::now() - start, milliseconds(100));
}

TEST(LeaseTableTest, RevokeWaitsForTheHolderToAcknowledge) {
  LeaseTable table(LeaseTableOptions{milliseconds(5000)});
  EXPECT_EQ(table.Grant("s1", "/a"), milliseconds(5000));
  auto revoked = std::async(std::launch::async, [&] {
    auto start = Steady::now();
    auto r = table.Revoke(Dirs({"/a"}));
    return Steady::now() - start;
  });
  // The holder sees the invalidation, then acknowledges it with its next poll.
  auto invs = table.Poll("s1", 0, milliseconds(2000));
  ASSERT_EQ(invs.size(), 1u);
  EXPECT_EQ(invs[0].dirs, std::vector<std::string>{"/a"});
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(revoked.wait_for(milliseconds(0)), std::future_status::timeout);
  EXPECT_TRUE(table.Poll("s1", invs[0].seq, milliseconds(0)).empty());
  auto took = revoked.get();
  EXPECT_GE(took, milliseconds(50));
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_EQ(table.expired_waits(), 0u);
  EXPECT_EQ(table.Stats()["s1"].leases, 0u);  // the lease is gone with the invalidation
}

TEST(LeaseTableTest, SilentHolderIsWaitedForOnlyUntilItsLeaseEnds) {
  LeaseTable table(LeaseTableOptions{milliseconds(200)});
  table.Grant("s1", "/a");
  auto start = Steady::now();
  { auto r = table.Revoke(Dirs({"/a"})); }
  auto took = Steady::now() - start;
  EXPECT_GE(took, milliseconds(150));
  EXPECT_LT(took, milliseconds(1000));
  EXPECT_EQ(table.expired_waits(), 1u);
}

// Renew extends only a lease the spoke still holds, and none while its directory is revoked.
TEST(LeaseTableTest, RenewExtendsOnlyALeaseStillHeld) {
  const auto t0 = Steady::now();
  LeaseState state(LeaseTableOptions{milliseconds(1000)}, t0);
  EXPECT_EQ(state.Renew("s1", "/a", t0).count(), 0);  // never granted
  EXPECT_EQ(state.Grant("s1", "/a", t0).count(), 1000);
  EXPECT_EQ(state.Renew("s2", "/a", t0).count(), 0);  // another spoke's lease
  EXPECT_EQ(state.Renew("s1", "/a", t0 + milliseconds(900)).count(), 1000);
  EXPECT_EQ(state.Renew("s1", "/a", t0 + milliseconds(1800)).count(), 1000);  // ran to 1900
  EXPECT_EQ(state.Renew("s1", "/a", t0 + milliseconds(2900)).count(), 0);     // lapsed at 2800
  state.Grant("s1", "/b", t0 + milliseconds(3000));
  state.BeginRevoke(Dirs({"/b"}), t0 + milliseconds(3000));
  EXPECT_EQ(state.Renew("s1", "/b", t0 + milliseconds(3100)).count(), 0);
}

TEST(LeaseTableTest, NoGrantsWhileRevokingAndOnlyAffectedHoldersAreAsked) {
  LeaseTable table(LeaseTableOptions{milliseconds(5000)});
  table.Grant("s1", "/other");
  Affected a;
  a.subtrees.insert("/a");
  {
    auto r = table.Revoke(a);
    EXPECT_EQ(table.Grant("s2", "/a/b/c"), milliseconds(0));  // inside the revoked subtree
    EXPECT_EQ(table.Grant("s2", "/ab"), milliseconds(5000));  // not inside
    EXPECT_TRUE(table.Poll("s1", 0, milliseconds(0)).empty());
  }
  EXPECT_EQ(table.Grant("s2", "/a/b/c"), milliseconds(5000));  // the revocation ended
}

TEST(LeaseTableTest, OverlappingRevocationsEachWaitForTheHolder) {
  LeaseTable table(LeaseTableOptions{milliseconds(5000)});
  table.Grant("s1", "/a");
  auto first = std::async(std::launch::async, [&] { auto r = table.Revoke(Dirs({"/a"})); });
  auto invs = table.Poll("s1", 0, milliseconds(2000));
  ASSERT_EQ(invs.size(), 1u);
  auto second = std::async(std::launch::async, [&] { auto r = table.Revoke(Dirs({"/a"})); });
  std::this_thread::sleep_for(milliseconds(50));
  // Neither may finish before the holder acknowledged every invalidation sent to it.
  EXPECT_EQ(first.wait_for(milliseconds(0)), std::future_status::timeout);
  EXPECT_EQ(second.wait_for(milliseconds(0)), std::future_status::timeout);
  uint64_t ack = 0;
  for (int i = 0; i < 10 && (first.wait_for(milliseconds(0)) != std::future_status::ready ||
                             second.wait_for(milliseconds(0)) != std::future_status::ready);
       ++i) {
    for (const Invalidation& inv : table.Poll("s1", ack, milliseconds(100))) {
      ack = std::max(ack, inv.seq);
    }
  }
  first.get();
  second.get();
  EXPECT_EQ(table.expired_waits(), 0u);
}

}  // namespace
}  // namespace weft::fabric
