// Zero chunks: the constant ids are the SHA-256 of the zeros, runs are cut as documented, and
// ZeroChunkStore answers zero chunks without storing them, in order among stored ones.
#include "chunk/zero_chunks.h"

#include <gtest/gtest.h>

#include "chunk/mem_chunk_store.h"

namespace weft {
namespace {

TEST(ZeroChunksTest, IdsAreTheHashesOfTheZeros) {
  for (int k = 0; k <= kMaxZeroChunkLog2; ++k) {
    const uint32_t n = uint32_t{1} << k;
    EXPECT_EQ(ZeroChunkId(k), ChunkId::Of(AsBytes(std::string(n, '\0')))) << "2^" << k;
    EXPECT_EQ(ZeroChunkLength(ZeroChunkId(k)), n);
    EXPECT_EQ(*ZeroChunkBytes(n), std::string(n, '\0'));
  }
  EXPECT_FALSE(ZeroChunkLength(ChunkId::Of(AsBytes(std::string(3, '\0')))));
  EXPECT_FALSE(ZeroChunkLength(ChunkId::Of(AsBytes(std::string(4, 'x')))));
  EXPECT_EQ(ZeroChunkBytes(4096).get(), ZeroChunkBytes(4096).get());  // shared
}

TEST(ZeroChunksTest, RunsAreWholeChunksThenPowersOfTwo) {
  for (uint64_t length : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{kMaxZeroChunk},
                          uint64_t{1} << 40, (uint64_t{3} << 30) + 12345}) {
    uint64_t total = 0;
    uint32_t previous = kMaxZeroChunk;
    size_t count = 0;
    ForEachZeroChunk(length, [&](const ChunkId& id, uint32_t n) {
      EXPECT_EQ(ZeroChunkLength(id), n);
      EXPECT_LE(n, previous);
      previous = n;
      total += n;
      ++count;
    });
    EXPECT_EQ(total, length);
    EXPECT_LE(count, length / kMaxZeroChunk + kMaxZeroChunkLog2);
  }
}

TEST(ZeroChunkStoreTest, ZeroChunksAreAnsweredNotStored) {
  auto base = std::make_shared<MemChunkStore>();
  ZeroChunkStore store(base);
  const std::string data = "not zeros";
  const ChunkId stored = ChunkId::Of(AsBytes(data));
  ASSERT_TRUE(store.Put(stored, AsBytes(data)).ok());
  const ChunkId zero = ZeroChunkId(12);
  EXPECT_FALSE(*store.Put(zero, AsBytes(std::string(4096, '\0'))));
  EXPECT_EQ(base->Stats().chunks, 1u);
  EXPECT_FALSE(base->Contains(zero));
  EXPECT_TRUE(store.Contains(zero));
  EXPECT_EQ(*store.Get(zero), std::string(4096, '\0'));
  EXPECT_EQ(**store.GetShared(ZeroChunkId(kMaxZeroChunkLog2)), std::string(kMaxZeroChunk, '\0'));

  // Mixed lists keep their order, whether fetched or lent.
  const std::vector<ChunkId> ids = {zero, stored, ZeroChunkId(0), stored};
  const std::vector<std::string> want = {std::string(4096, '\0'), data, std::string(1, '\0'), data};
  auto many = store.GetManyOnce(ids);
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  ASSERT_EQ(many->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(*(*many)[i], want[i]) << i;
  for (const std::vector<ChunkId>& list : {ids, std::vector<ChunkId>{zero, ZeroChunkId(0)}}) {
    std::vector<std::string> lent;
    ASSERT_TRUE(store
                    .LendMany(list,
                              [&](std::span<const std::string_view> views) {
                                for (std::string_view v : views) lent.emplace_back(v);
                                return OkStatus();
                              })
                    .ok());
    ASSERT_EQ(lent.size(), list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ(lent[i].size(), list[i] == stored ? data.size() : *ZeroChunkLength(list[i]));
    }
  }
  // An unknown id is still the base's NotFound.
  EXPECT_EQ(store.Get(ChunkId::Of(AsBytes(std::string("absent")))).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft
