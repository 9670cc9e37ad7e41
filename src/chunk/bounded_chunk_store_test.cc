// BoundedChunkStore: capacity, LRU order, holds, chunks present before it, and consistency of
// its LRU with the store below under concurrent Puts and Gets, over MemChunkStore and over a
// PackChunkStore on the in-memory FileSystem.
#include "chunk/bounded_chunk_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "base/test_util.h"
#include "chunk/mem_chunk_store.h"
#include "chunk/pack_chunk_store.h"
#include "io/mem_file_system.h"

namespace weft {
namespace {

using testutil::RandomBytes;

constexpr uint64_t kChunk = 1000;

// Incompressible, so the pack store's raw and stored sizes are alike.
std::string Chunk(int i) {
  return RandomBytes(kChunk, 7000 + i);
}
ChunkId IdOf(int i) {
  return ChunkId::Of(AsBytes(Chunk(i)));
}

class BoundedChunkStoreTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      PackStoreOptions opts;
      opts.target_pack_size_for_test = 16 * 1024;  // several packs, so sweeps compact
      Result<std::unique_ptr<ChunkStore>> opened = OpenPackChunkStore(fs_.get(), "/spoke", opts);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      base_ = std::move(opened).value();
    } else {
      base_ = std::make_shared<MemChunkStore>();
    }
  }

  static ChunkId PutChunk(ChunkStore* store, int i) {
    const std::string data = Chunk(i);
    Result<bool> put = store->Put(IdOf(i), AsBytes(data));
    EXPECT_TRUE(put.ok()) << put.status().ToString();
    return IdOf(i);
  }

  bool Present(ChunkStore* store, int i) {
    Result<std::string> got = store->Get(IdOf(i));
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
      return false;
    }
    EXPECT_EQ(*got, Chunk(i));
    return true;
  }

  // Every chunk the LRU holds is in the store below, and the store below is healthy.
  void ExpectConsistent(const BoundedChunkStore& bounded) {
    for (const ChunkId& id : bounded.KnownIdsForTest()) {
      EXPECT_TRUE(base_->Contains(id)) << id.ShortHex();
    }
    ASSERT_TRUE(base_->Flush().ok());
    std::vector<ChunkProblem> problems;
    ASSERT_TRUE(base_->Verify(&problems).ok());
    EXPECT_TRUE(problems.empty()) << problems[0].where << ": " << problems[0].status.ToString();
  }

  std::unique_ptr<FileSystem> fs_ = NewMemFileSystem();  // outlives base_
  std::shared_ptr<ChunkStore> base_;
};

TEST_P(BoundedChunkStoreTest, CapacityRespectedAfterManyPuts) {
  BoundedChunkStore bounded(base_, 20 * kChunk);
  for (int i = 0; i < 100; ++i) {
    PutChunk(&bounded, i);
    ASSERT_LE(bounded.Stats().raw_bytes, 20 * kChunk) << "after put " << i;
  }
  EXPECT_TRUE(Present(&bounded, 99));
  const BoundedChunkStoreStats stats = bounded.bounded_stats();
  EXPECT_EQ(stats.evictions, 100 - bounded.Stats().chunks);
  EXPECT_EQ(stats.evicted_bytes, stats.evictions * kChunk);
  // Put 20 goes over; each round frees three chunks (down to 90 %), so every third Put after.
  EXPECT_EQ(stats.sweeps, 27u);
  EXPECT_EQ(stats.evictions, 81u);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, GetSavesAnOldChunkFromEviction) {
  BoundedChunkStore bounded(base_, 10 * kChunk);
  for (int i = 0; i < 10; ++i) PutChunk(&bounded, i);  // exactly at capacity: no eviction
  EXPECT_EQ(bounded.bounded_stats().sweeps, 0u);
  ASSERT_TRUE(Present(&bounded, 0));  // 0 becomes the most recently used
  ASSERT_TRUE(bounded.GetShared(IdOf(1)).ok());
  PutChunk(&bounded, 10);  // 11 000 > 10 000: down to 9 000, the two least recently used go
  EXPECT_EQ(bounded.bounded_stats().evictions, 2u);
  EXPECT_FALSE(Present(&bounded, 2));
  EXPECT_FALSE(Present(&bounded, 3));
  for (int i : {0, 1, 4, 5, 6, 7, 8, 9, 10}) EXPECT_TRUE(Present(&bounded, i)) << i;
  EXPECT_EQ(bounded.Stats().raw_bytes, 9 * kChunk);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, EvictedChunksAreNotFoundAndCanBePutAgain) {
  BoundedChunkStore bounded(base_, 10 * kChunk);
  for (int i = 0; i < 30; ++i) PutChunk(&bounded, i);
  EXPECT_EQ(bounded.Get(IdOf(0)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bounded.GetShared(IdOf(0)).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(bounded.Contains(IdOf(0)));
  Result<bool> again = bounded.Put(IdOf(0), AsBytes(Chunk(0)));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again);  // stored anew
  EXPECT_TRUE(Present(&bounded, 0));
  EXPECT_LE(bounded.Stats().raw_bytes, 10 * kChunk);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, HeldChunksSurviveUntilReleased) {
  BoundedChunkStore bounded(base_, 10 * kChunk);
  PutChunk(&bounded, 0);
  bounded.Hold(IdOf(0));
  bounded.Hold(IdOf(1));  // before its Put: protected from the first byte
  PutChunk(&bounded, 1);
  bounded.Hold(IdOf(1));  // counted: two holds need two releases
  for (int i = 2; i < 40; ++i) PutChunk(&bounded, i);
  EXPECT_TRUE(Present(&bounded, 0));
  EXPECT_TRUE(Present(&bounded, 1));

  bounded.Release(IdOf(0));
  bounded.Release(IdOf(1));
  bounded.Release(IdOf(77));  // not held: nothing happens
  for (int i = 40; i < 60; ++i) PutChunk(&bounded, i);
  EXPECT_FALSE(Present(&bounded, 0));
  EXPECT_TRUE(Present(&bounded, 1));  // still held once
  bounded.Release(IdOf(1));
  for (int i = 60; i < 80; ++i) PutChunk(&bounded, i);
  EXPECT_FALSE(Present(&bounded, 1));
  EXPECT_LE(bounded.Stats().raw_bytes, 10 * kChunk);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, HeldChunksAloneOverCapacityEvictEverythingElse) {
  BoundedChunkStore bounded(base_, 3 * kChunk);
  for (int i = 0; i < 5; ++i) bounded.Hold(IdOf(i));
  for (int i = 0; i < 5; ++i) PutChunk(&bounded, i);
  for (int i = 5; i < 10; ++i) PutChunk(&bounded, i);
  // Only the chunk just put joins the held ones; the store stays over capacity until released.
  EXPECT_EQ(bounded.Stats().raw_bytes, 6 * kChunk);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Present(&bounded, i)) << i;
  EXPECT_TRUE(Present(&bounded, 9));
  for (int i = 0; i < 5; ++i) bounded.Release(IdOf(i));
  PutChunk(&bounded, 10);
  EXPECT_LE(bounded.Stats().raw_bytes, 3 * kChunk);
  EXPECT_TRUE(Present(&bounded, 10));
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, TrimAfterReleaseComesBackWithinCapacity) {
  BoundedChunkStore bounded(base_, 3 * kChunk);
  for (int i = 0; i < 6; ++i) bounded.Hold(IdOf(i));
  for (int i = 0; i < 6; ++i) PutChunk(&bounded, i);
  EXPECT_EQ(bounded.Stats().raw_bytes, 6 * kChunk);
  bounded.Trim();  // everything is held: nothing to do
  EXPECT_EQ(bounded.Stats().raw_bytes, 6 * kChunk);
  for (int i = 0; i < 6; ++i) bounded.Release(IdOf(i));
  bounded.Trim();
  EXPECT_LE(bounded.Stats().raw_bytes, 3 * kChunk);
  EXPECT_TRUE(Present(&bounded, 5));  // the most recent stay
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, ChunksPresentBeforeAreEvictedFirst) {
  for (int i = 0; i < 5; ++i) PutChunk(base_.get(), 100 + i);  // unknown to the LRU
  BoundedChunkStore bounded(base_, 10 * kChunk);
  for (int i = 0; i < 5; ++i) PutChunk(&bounded, i);
  PutChunk(&bounded, 5);  // 11 000: two chunks must go, both from the old ones
  auto old_left = [&] {
    int n = 0;
    for (int i = 100; i < 105; ++i) n += base_->Contains(IdOf(i)) ? 1 : 0;
    return n;
  };
  EXPECT_EQ(old_left(), 3);
  for (int i = 0; i <= 5; ++i) EXPECT_TRUE(base_->Contains(IdOf(i))) << i;
  PutChunk(&bounded, 6);
  PutChunk(&bounded, 7);  // 11 000 again
  EXPECT_EQ(old_left(), 1);
  PutChunk(&bounded, 8);
  PutChunk(&bounded, 9);  // the last old one (1 000) is not enough: the LRU's tail (0) goes too
  EXPECT_EQ(old_left(), 0);
  EXPECT_FALSE(Present(&bounded, 0));
  for (int i = 1; i <= 9; ++i) EXPECT_TRUE(Present(&bounded, i)) << i;
  const BoundedChunkStoreStats stats = bounded.bounded_stats();
  EXPECT_EQ(stats.evictions, 6u);
  EXPECT_EQ(stats.evicted_bytes, 6 * kChunk);
  EXPECT_EQ(stats.sweeps, 3u);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, SkewedSizesOfChunksPresentBeforeCostFewRounds) {
  // Their average size (about 250 bytes) misleads: most are tiny, one is large.
  for (int i = 0; i < 50; ++i) {
    const std::string small = RandomBytes(100, 500 + i);
    ASSERT_TRUE(base_->Put(ChunkId::Of(AsBytes(small)), AsBytes(small)).ok());
  }
  const std::string large = RandomBytes(8000, 499);
  ASSERT_TRUE(base_->Put(ChunkId::Of(AsBytes(large)), AsBytes(large)).ok());
  BoundedChunkStore bounded(base_, 10 * kChunk);
  PutChunk(&bounded, 0);  // 14 000
  EXPECT_LE(bounded.Stats().raw_bytes, 10 * kChunk);
  EXPECT_TRUE(Present(&bounded, 0));
  EXPECT_LE(bounded.bounded_stats().sweeps, 4u);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, GetOfAChunkPresentBeforeMakesItRecent) {
  for (int i = 0; i < 5; ++i) PutChunk(base_.get(), 100 + i);
  BoundedChunkStore bounded(base_, 10 * kChunk);
  ASSERT_TRUE(Present(&bounded, 100));  // now known, and the most recently used
  for (int i = 0; i < 10; ++i) PutChunk(&bounded, i);
  // The four still unknown went first, then the LRU's tail: 100 was used before 0..9.
  for (int i = 101; i < 105; ++i) EXPECT_FALSE(base_->Contains(IdOf(i))) << i;
  EXPECT_FALSE(Present(&bounded, 100));
  EXPECT_TRUE(Present(&bounded, 9));
  EXPECT_LE(bounded.Stats().raw_bytes, 10 * kChunk);
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, ForwardedSweepRemovesFromTheLru) {
  BoundedChunkStore bounded(base_, 100 * kChunk);
  for (int i = 0; i < 6; ++i) PutChunk(&bounded, i);
  Result<SweepStats> swept = bounded.Sweep([](const ChunkId& id) { return id != IdOf(2); });
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept->chunks_removed, 1u);
  EXPECT_EQ(bounded.KnownIdsForTest().size(), 5u);
  EXPECT_FALSE(Present(&bounded, 2));
  EXPECT_EQ(bounded.bounded_stats().evictions, 0u);  // garbage collection, not eviction
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, ChunkRemovedBelowLeavesTheLruOnItsNextGet) {
  BoundedChunkStore bounded(base_, 100 * kChunk);
  for (int i = 0; i < 3; ++i) PutChunk(&bounded, i);
  ASSERT_TRUE(base_->Sweep([](const ChunkId& id) { return id != IdOf(1); }).ok());
  EXPECT_FALSE(Present(&bounded, 1));
  EXPECT_EQ(bounded.KnownIdsForTest(), (std::vector<ChunkId>{IdOf(2), IdOf(0)}));
  ExpectConsistent(bounded);
}

TEST_P(BoundedChunkStoreTest, ConcurrentPutsAndGetsStayConsistent) {
  constexpr uint64_t kCapacity = 16 * kChunk;
  constexpr int kThreads = 4;
  constexpr int kPool = 64;  // shared by all threads: Puts race on ids, and on victims
  BoundedChunkStore bounded(base_, kCapacity);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int mine = 1000 + t;  // held throughout: must survive every eviction
      bounded.Hold(IdOf(mine));
      PutChunk(&bounded, mine);
      std::mt19937 rng(t);
      for (int n = 0; n < 300; ++n) {
        const int i = static_cast<int>(rng() % kPool);
        if (rng() % 2) {
          PutChunk(&bounded, i);
          continue;
        }
        Result<std::string> got = bounded.Get(IdOf(i));
        if (got.ok()) {
          ASSERT_EQ(*got, Chunk(i)) << "wrong bytes for chunk " << i;
        } else {
          ASSERT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
        }
      }
      Result<std::string> held = bounded.Get(IdOf(mine));
      ASSERT_TRUE(held.ok()) << held.status().ToString();
      EXPECT_EQ(*held, Chunk(mine));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_GT(bounded.bounded_stats().evictions, 0u);
  EXPECT_LE(bounded.Stats().raw_bytes, kCapacity);
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(base_->Contains(IdOf(1000 + t)));
  ExpectConsistent(bounded);
}

INSTANTIATE_TEST_SUITE_P(Bases, BoundedChunkStoreTest, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& param) {
                           return param.param ? "Pack" : "Mem";
                         });

}  // namespace
}  // namespace weft
