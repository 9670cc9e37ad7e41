#include "vfs/internal/chunk_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace weft {
namespace {

// Every chunk reaches the store once, whole and in order, by the time Drain returns.
TEST(ChunkPipelineTest, StoresEveryChunkInOrder) {
  std::vector<std::string> stored;
  ChunkPipeline pipeline([&](const ChunkId& id, ByteSpan c) {
    EXPECT_EQ(id, ChunkId::Of(c));
    stored.emplace_back(AsChars(c));
    return OkStatus();
  });
  std::vector<std::string> added;
  for (int i = 0; i < 3000; ++i) {
    added.push_back(std::string(1 + (i * 7919) % 5000, static_cast<char>('a' + i % 26)) +
                    std::to_string(i));
    ASSERT_TRUE(pipeline.Add(AsBytes(added.back())).ok());
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  EXPECT_EQ(stored, added);
  const std::string after = "after";
  ASSERT_TRUE(pipeline.Add(AsBytes(after)).ok());  // usable after a Drain
  ASSERT_TRUE(pipeline.Drain().ok());
  EXPECT_EQ(stored.back(), "after");
}

// A slow store builds a backlog, and the writer then hashes the batches itself; either way
// each chunk reaches the store with its own SHA-256.
TEST(ChunkPipelineTest, HashesOnWhicheverSideIsBehind) {
  std::atomic<int> calls = 0;
  std::vector<std::string> stored;
  ChunkPipeline pipeline([&](const ChunkId& id, ByteSpan c) {
    if (++calls < 40) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (id != ChunkId::Of(c)) return Corruption("wrong id");
    stored.emplace_back(AsChars(c));
    return OkStatus();
  });
  std::vector<std::string> added;
  for (int i = 0; i < 400; ++i) {
    added.push_back(std::string(200'000 + i, static_cast<char>('a' + i % 26)));
    ASSERT_TRUE(pipeline.Add(AsBytes(added.back())).ok()) << i;
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  EXPECT_EQ(stored, added);
}

// The first failure stops the storing; Add and Drain report it from then on.
TEST(ChunkPipelineTest, TheFirstFailureStopsItAndSticks) {
  std::atomic<int> calls = 0;
  ChunkPipeline pipeline(
      [&](const ChunkId&, ByteSpan) { return ++calls == 5 ? IoError("disk full") : OkStatus(); });
  const std::string chunk(300'000, 'x');
  Status first;
  for (int i = 0; i < 100 && first.ok(); ++i) first = pipeline.Add(AsBytes(chunk));
  Status drained = pipeline.Drain();
  EXPECT_EQ(drained.code(), StatusCode::kIoError);
  EXPECT_EQ(drained.message(), "disk full");
  EXPECT_EQ(calls.load(), 5);
  EXPECT_EQ(pipeline.Add(AsBytes(chunk)).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace weft
