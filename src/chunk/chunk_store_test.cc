// The ChunkStore contract, run against every implementation: the fake must behave like the
// real store wherever callers can tell.
#include "chunk/chunk_store.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "base/test_util.h"
#include "chunk/caching_chunk_store.h"
#include "chunk/mem_chunk_store.h"
#include "chunk/pack_chunk_store.h"
#include "chunk/zero_chunks.h"
#include "io/mem_file_system.h"

namespace weft {
namespace {

using testutil::RandomBytes;

struct StoreFactory {
  std::string name;
  std::function<std::unique_ptr<ChunkStore>(FileSystem* fs)> open;
};

void PrintTo(const StoreFactory& factory, std::ostream* os) {
  *os << factory.name;
}

class ChunkStoreContractTest : public testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override { store_ = GetParam().open(fs_.get()); }

  ChunkId PutOrDie(const std::string& data) {
    const ChunkId id = ChunkId::Of(AsBytes(data));
    Result<bool> put = store_->Put(id, AsBytes(data));
    EXPECT_TRUE(put.ok()) << put.status().ToString();
    return id;
  }

  std::unique_ptr<FileSystem> fs_ = NewMemFileSystem();
  std::unique_ptr<ChunkStore> store_;
};

TEST_P(ChunkStoreContractTest, PutGetRoundTrip) {
  const std::string random = RandomBytes(100000, 1);
  const std::string text(50000, 't');
  for (const std::string& data : {random, text, std::string(), std::string("x")}) {
    const ChunkId id = PutOrDie(data);
    EXPECT_TRUE(store_->Contains(id));
    Result<std::string> got = store_->Get(id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, data);
  }
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(store_->Get(ChunkId::Of(AsBytes(random))).value_or(""), random);
}

TEST_P(ChunkStoreContractTest, MissingChunkIsNotFound) {
  const ChunkId id = ChunkId::Of(AsBytes("never stored"));
  EXPECT_FALSE(store_->Contains(id));
  EXPECT_EQ(store_->Get(id).status().code(), StatusCode::kNotFound);
}

TEST_P(ChunkStoreContractTest, DuplicatePutStoresOnce) {
  const std::string data = RandomBytes(5000, 2);
  const ChunkId id = ChunkId::Of(AsBytes(data));
  EXPECT_EQ(store_->Put(id, AsBytes(data)).value_or(false), true);
  EXPECT_EQ(store_->Put(id, AsBytes(data)).value_or(true), false);
  const ChunkStoreStats stats = store_->Stats();
  EXPECT_EQ(stats.chunks, 1u);
  EXPECT_EQ(stats.raw_bytes, data.size());
}

// LendMany lends Get's bytes in the asked order, however they lie (flushed or not, cached or
// not, asked twice); an unknown id is NotFound and nothing is lent.
TEST_P(ChunkStoreContractTest, LendManyLendsWhatGetReads) {
  std::vector<std::string> data;
  std::vector<ChunkId> ids;
  for (int i = 0; i < 8; ++i) {
    data.push_back(i == 5 ? std::string(20000, 'z') : RandomBytes(9000 + 1000 * i, 30 + i));
    ids.push_back(PutOrDie(data.back()));
    if (i == 3) {
      ASSERT_TRUE(store_->Flush().ok());
    }
  }
  ASSERT_TRUE(store_->Get(ids[2]).ok());  // a caching store now holds it
  std::vector<ChunkId> asked = ids;
  asked.push_back(ids[1]);
  for (int round = 0; round < 2; ++round) {
    Status lent = store_->LendMany(asked, [&](std::span<const std::string_view> views) {
      EXPECT_EQ(views.size(), asked.size());
      for (size_t i = 0; i < views.size(); ++i) {
        EXPECT_EQ(views[i], data[i < ids.size() ? i : 1]) << i;
      }
      return OkStatus();
    });
    ASSERT_TRUE(lent.ok()) << lent.ToString();
    ASSERT_TRUE(store_->Flush().ok());
  }
  bool used = false;
  const std::vector<ChunkId> unknown = {ids[0], ChunkId::Of(AsBytes("never stored"))};
  EXPECT_EQ(store_
                ->LendMany(unknown,
                           [&](auto) {
                             used = true;
                             return OkStatus();
                           })
                .code(),
            StatusCode::kNotFound);
  EXPECT_FALSE(used);
}

TEST_P(ChunkStoreContractTest, SweepRemovesOnlyDeadChunks) {
  std::vector<ChunkId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(PutOrDie(RandomBytes(3000, 100 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  auto is_live = [&](const ChunkId& id) {
    return std::find(ids.begin(), ids.begin() + 10, id) != ids.begin() + 10;
  };
  Result<SweepStats> swept = store_->Sweep(is_live);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept->chunks_removed, 10u);
  for (int i = 0; i < 20; ++i) {
    if (i < 10) {
      EXPECT_TRUE(store_->Get(ids[i]).ok()) << i;
    } else {
      EXPECT_FALSE(store_->Contains(ids[i])) << i;
      EXPECT_EQ(store_->Get(ids[i]).status().code(), StatusCode::kNotFound);
    }
  }
  EXPECT_EQ(store_->Stats().chunks, 10u);
  EXPECT_EQ(store_->Stats().raw_bytes, 10u * 3000);
  // A removed chunk can be stored again.
  EXPECT_EQ(store_->Put(ids[15], AsBytes(RandomBytes(3000, 115))).value_or(false), true);
}

TEST_P(ChunkStoreContractTest, VerifyOfAHealthyStoreFindsNothing) {
  for (int i = 0; i < 10; ++i) PutOrDie(RandomBytes(2000, 200 + i));
  ASSERT_TRUE(store_->Flush().ok());
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty()) << problems[0].status.ToString();
}

TEST_P(ChunkStoreContractTest, ConcurrentPutsAndGets) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Half the chunks are shared between threads, so Puts race on the same ids.
        const std::string data = RandomBytes(4000, (i % 2) ? 1000 + i : 2000 + t * 100 + i);
        const ChunkId id = ChunkId::Of(AsBytes(data));
        ASSERT_TRUE(store_->Put(id, AsBytes(data)).ok());
        Result<std::string> got = store_->Get(id);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_EQ(*got, data);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(store_->Stats().chunks, kThreads * kPerThread / 2 + kPerThread / 2);
  ASSERT_TRUE(store_->Flush().ok());
}

INSTANTIATE_TEST_SUITE_P(
    Stores, ChunkStoreContractTest,
    testing::Values(StoreFactory{"Mem", [](FileSystem*) { return NewMemChunkStore(); }},
                    StoreFactory{"Pack",
                                 [](FileSystem* fs) {
                                   PackStoreOptions opts;
                                   opts.target_pack_size_for_test = 64 * 1024;
                                   return std::move(OpenPackChunkStore(fs, "/store", opts).value());
                                 }},
                    StoreFactory{"CachedPack",
                                 [](FileSystem* fs) -> std::unique_ptr<ChunkStore> {
                                   PackStoreOptions opts;
                                   opts.target_pack_size_for_test = 64 * 1024;
                                   std::shared_ptr<ChunkStore> packs =
                                       std::move(OpenPackChunkStore(fs, "/store", opts).value());
                                   return std::make_unique<CachingChunkStore>(packs, 1 << 20);
                                 }},
                    StoreFactory{"ZeroOverPack",
                                 [](FileSystem* fs) -> std::unique_ptr<ChunkStore> {
                                   PackStoreOptions opts;
                                   opts.target_pack_size_for_test = 64 * 1024;
                                   std::shared_ptr<ChunkStore> packs =
                                       std::move(OpenPackChunkStore(fs, "/store", opts).value());
                                   return std::make_unique<ZeroChunkStore>(packs);
                                 }}),
    [](const testing::TestParamInfo<StoreFactory>& param) { return param.param.name; });

}  // namespace
}  // namespace weft
