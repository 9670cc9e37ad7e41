// CachingChunkStore: serves repeated reads from memory, bounded by bytes, and drops swept
// chunks. (The ChunkStore contract over it runs in chunk_store_test.cc.)
#include "chunk/caching_chunk_store.h"

#include <gtest/gtest.h>

#include "chunk/mem_chunk_store.h"

namespace weft {
namespace {

ChunkId PutBytes(ChunkStore* store, const std::string& data) {
  ChunkId id = ChunkId::Of(AsBytes(data));
  EXPECT_TRUE(store->Put(id, AsBytes(data)).ok());
  return id;
}

TEST(CachingChunkStoreTest, RepeatedReadsHitAndCapacityBounds) {
  auto base = std::make_shared<MemChunkStore>();
  CachingChunkStore cache(base, 10000);
  ChunkId a = PutBytes(&cache, std::string(2000, 'a'));
  ChunkId b = PutBytes(&cache, std::string(2000, 'b'));
  ASSERT_EQ(*cache.Get(a), std::string(2000, 'a'));
  ASSERT_EQ(*cache.Get(a), std::string(2000, 'a'));
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), 1u);
  // The shared bytes are the cached copy itself.
  EXPECT_EQ(cache.GetShared(a)->get(), cache.GetShared(a)->get());

  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(cache.Get(PutBytes(&cache, std::string(2000, 'c' + i))).ok());
  EXPECT_LE(cache.cached_bytes(), 10000u);
  ASSERT_TRUE(cache.Get(b).ok());  // evicted long ago: read again from below
  EXPECT_GE(cache.misses(), 12u);
}

// A scan reads through GetSharedOnce: hits are served, misses are not kept, so the hot set
// survives the scan.
TEST(CachingChunkStoreTest, GetSharedOnceKeepsTheHotSet) {
  auto base = std::make_shared<MemChunkStore>();
  CachingChunkStore cache(base, 10000);
  ChunkId hot = PutBytes(&cache, std::string(2000, 'h'));
  ASSERT_TRUE(cache.Get(hot).ok());
  const auto kept = cache.GetShared(hot);
  for (int i = 0; i < 20; ++i) {
    const std::string data(2000, 'k' + i % 10);
    const ChunkId id = PutBytes(&cache, data + std::to_string(i));
    auto got = cache.GetSharedOnce(id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(**got, data + std::to_string(i));
  }
  EXPECT_EQ(cache.cached_bytes(), 2000u);
  EXPECT_EQ(cache.GetSharedOnce(hot)->get(), kept->get());  // a hit is the cached copy
}

// GetManyOnce: hits from memory, misses from below in one call, all in the asked order;
// misses are not kept.
TEST(CachingChunkStoreTest, GetManyOnceMergesHitsAndMissesInOrder) {
  auto base = std::make_shared<MemChunkStore>();
  CachingChunkStore cache(base, 100000);
  std::vector<ChunkId> ids;
  for (char c = 'a'; c < 'f'; ++c) ids.push_back(PutBytes(&cache, std::string(1000, c)));
  ASSERT_TRUE(cache.GetShared(ids[1]).ok());  // cached
  ASSERT_TRUE(cache.GetShared(ids[3]).ok());
  const uint64_t cached = cache.cached_bytes();
  auto got = cache.GetManyOnce(ids);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(*(*got)[i], std::string(1000, 'a' + i)) << i;
  EXPECT_EQ((*got)[1].get(), cache.GetShared(ids[1])->get());  // the cached copy itself
  EXPECT_EQ(cache.cached_bytes(), cached);
  std::vector<ChunkId> unknown = {ids[0], ChunkId::Of(AsBytes(std::string("zz")))};
  EXPECT_EQ(cache.GetManyOnce(unknown).status().code(), StatusCode::kNotFound);
}

TEST(CachingChunkStoreTest, ServesOnlyVerifiedBytes) {
  auto base = std::make_shared<MemChunkStore>();
  CachingChunkStore cache(base, 1 << 20);
  ChunkId id = PutBytes(&cache, "payload");
  ASSERT_TRUE(base->CorruptForTest(id));
  EXPECT_EQ(cache.Get(id).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(cache.cached_bytes(), 0u);  // failures are not cached
}

TEST(CachingChunkStoreTest, SweepDropsDeadChunks) {
  auto base = std::make_shared<MemChunkStore>();
  CachingChunkStore cache(base, 1 << 20);
  ChunkId keep = PutBytes(&cache, "keep");
  ChunkId drop = PutBytes(&cache, "drop");
  ASSERT_TRUE(cache.Get(keep).ok() && cache.Get(drop).ok());
  auto swept = cache.Sweep([&](const ChunkId& id) { return id == keep; });
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(swept->chunks_removed, 1u);
  EXPECT_EQ(cache.cached_bytes(), 4u);
  EXPECT_EQ(cache.Get(drop).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*cache.Get(keep), "keep");
}

}  // namespace
}  // namespace weft
