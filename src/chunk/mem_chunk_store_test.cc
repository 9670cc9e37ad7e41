#include "chunk/mem_chunk_store.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

// The interface contract is tested for both stores in chunk_store_test.cc; this covers what
// only the fake has.
TEST(MemChunkStoreTest, CorruptForTestMakesGetAndVerifyFail) {
  MemChunkStore store;
  const std::string data = "some chunk bytes";
  const ChunkId id = ChunkId::Of(AsBytes(data));
  ASSERT_TRUE(store.Put(id, AsBytes(data)).ok());
  EXPECT_FALSE(store.CorruptForTest(ChunkId::Of(AsBytes("absent"))));
  ASSERT_TRUE(store.CorruptForTest(id));
  EXPECT_EQ(store.Get(id).status().code(), StatusCode::kCorruption);
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store.Verify(&problems).ok());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].status.code(), StatusCode::kCorruption);
}

TEST(MemChunkStoreTest, FactoryReturnsAWorkingStore) {
  std::unique_ptr<ChunkStore> store = NewMemChunkStore();
  const ChunkId id = ChunkId::Of(AsBytes("x"));
  EXPECT_EQ(store->Put(id, AsBytes("x")).value_or(false), true);
  EXPECT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Get(id).value_or(""), "x");
}

}  // namespace
}  // namespace weft
