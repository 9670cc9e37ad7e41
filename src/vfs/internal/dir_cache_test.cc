#include "vfs/internal/dir_cache.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

NamespaceView::Resolved Dir(uint64_t ino) {
  NamespaceView::Resolved r;
  r.ino = ino;
  r.inode.type = FileType::kDirectory;
  return r;
}

uint64_t Token(DirCache& cache) {
  return cache.Confirm(cache.Begin());
}

TEST(DirCacheTest, ServesWhatWasInsertedUntilACommit) {
  DirCache cache;
  const uint64_t t = Token(cache);
  ASSERT_NE(t, DirCache::kNoToken);
  EXPECT_FALSE(cache.Find(t, "/a").has_value());
  cache.Insert(t, "/a", Dir(7));
  ASSERT_TRUE(cache.Find(t, "/a").has_value());
  EXPECT_EQ(cache.Find(t, "/a")->ino, 7u);

  cache.StartWrite();
  cache.EndWrite();
  const uint64_t after = Token(cache);
  EXPECT_FALSE(cache.Find(t, "/a").has_value());      // the old token is void
  EXPECT_FALSE(cache.Find(after, "/a").has_value());  // and the entry is gone
}

// A reader whose snapshot may include a commit in progress uses no entries.
TEST(DirCacheTest, NoTokenWhileACommitIsWriting) {
  DirCache cache;
  const uint64_t before = Token(cache);
  cache.Insert(before, "/a", Dir(7));
  cache.StartWrite();
  EXPECT_EQ(cache.Begin(), DirCache::kNoToken);
  EXPECT_FALSE(cache.Find(before, "/a").has_value());
  cache.EndWrite();
}

// Begin, then a whole commit, then Confirm: the snapshot taken in between may show the new
// namespace, so the token must not serve entries of the old one.
TEST(DirCacheTest, ACommitBetweenBeginAndConfirmVoidsTheToken) {
  DirCache cache;
  const uint64_t begun = cache.Begin();
  cache.StartWrite();
  cache.EndWrite();
  EXPECT_EQ(cache.Confirm(begun), DirCache::kNoToken);
}

// A reader that resolved before a commit must not store what it saw after the commit.
TEST(DirCacheTest, InsertAfterACommitIsDropped) {
  DirCache cache;
  const uint64_t t = Token(cache);
  cache.StartWrite();
  cache.Insert(t, "/a", Dir(7));  // during the write
  cache.EndWrite();
  cache.Insert(t, "/b", Dir(8));  // after it
  const uint64_t now = Token(cache);
  EXPECT_FALSE(cache.Find(now, "/a").has_value());
  EXPECT_FALSE(cache.Find(now, "/b").has_value());
}

TEST(DirCacheTest, StaysWithinItsSize) {
  DirCache cache(2);
  const uint64_t t = Token(cache);
  cache.Insert(t, "/a", Dir(1));
  cache.Insert(t, "/b", Dir(2));
  cache.Insert(t, "/c", Dir(3));  // full: starts over
  EXPECT_FALSE(cache.Find(t, "/a").has_value());
  EXPECT_TRUE(cache.Find(t, "/c").has_value());
}

}  // namespace
}  // namespace weft
