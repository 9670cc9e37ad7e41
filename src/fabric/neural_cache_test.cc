// NeuralCache against an in-memory DataStore: how its prefetches are batched. The fabric tests
// run it inside a real spoke; here the store records each fetch, so a test can see the batches.
#include "fabric/neural_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

namespace weft::fabric {
namespace {

using std::chrono::milliseconds;

// Files of one directory; each fetch takes a while (a WAN round trip) and is recorded.
class RecordingStore : public DataStore {
 public:
  RecordingStore(const std::string& dir, size_t files, uint64_t file_bytes) : dir_(dir) {
    for (size_t i = 0; i < files; ++i) {
      FileInfo f;
      f.path = dir + "/f" + std::to_string(1000 + i);
      f.type = FileType::kFile;
      f.size = file_bytes;
      f.version_id = "v" + std::to_string(i);
      files_[f.path] = f;
    }
  }

  std::vector<Result<std::vector<ChunkId>>> FetchAndHold(
      const std::vector<ItemRef>& items) override {
    uint64_t bytes = 0;
    for (const ItemRef& item : items) bytes += files_.at(item.path).size;
    {
      std::lock_guard lock(mu_);
      batches_.push_back(bytes);
    }
    std::this_thread::sleep_for(milliseconds(20));
    return std::vector<Result<std::vector<ChunkId>>>(items.size(), std::vector<ChunkId>{});
  }
  void Revalidate(const std::vector<std::string>& paths) override {
    std::lock_guard lock(mu_);
    revalidated_.push_back(paths);
  }
  void Hold(const std::vector<ChunkId>&) override {}
  void Release(const std::vector<ChunkId>&) override {}
  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    std::vector<FileInfo> out;
    if (dir != dir_) return out;
    for (const auto& [path, info] : files_) out.push_back(info);
    return out;
  }

  std::vector<std::string> Paths() const {
    std::vector<std::string> out;
    for (const auto& [path, info] : files_) out.push_back(path);
    return out;
  }
  // Bytes of each fetch, in the order they started.
  std::vector<uint64_t> Batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }
  // The paths of each Revalidate call.
  std::vector<std::vector<std::string>> Revalidated() const {
    std::lock_guard lock(mu_);
    return revalidated_;
  }

 private:
  const std::string dir_;
  std::map<std::string, FileInfo> files_;
  mutable std::mutex mu_;
  std::vector<uint64_t> batches_;
  std::vector<std::vector<std::string>> revalidated_;
};

// A declared order's metadata is brought back in batches of up to 1000 paths (one round trip
// each), in order, so files the spoke holds cost no lookup each once their leases lapsed.
TEST(NeuralCachePrefetchTest, ADeclaredOrderIsRevalidatedInBatches) {
  RecordingStore store("/d", 2500, 1000);
  NeuralCacheOptions options;
  options.capacity_bytes = 1ull << 30;
  options.experts = {"hints"};
  options.prefetch_threads = 2;
  auto cache = NeuralCache::Create(options, &store);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  HintRequest hint;
  hint.job = "job";
  hint.dataset = "/d";
  hint.paths = store.Paths();
  ASSERT_TRUE((*cache)->Hint(hint).ok());
  std::vector<std::vector<std::string>> calls;
  for (int i = 0; i < 300; ++i) {
    calls = store.Revalidated();
    if (calls.size() >= 3) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(calls.size(), 3u);
  std::vector<std::string> all;
  for (const auto& c : calls) {
    EXPECT_LE(c.size(), 1000u);
    all.insert(all.end(), c.begin(), c.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, store.Paths());
}

TEST(NeuralCachePrefetchTest, TheHeadOfADeclaredOrderGoesInSmallBatchesTheRestInLargeOnes) {
  constexpr uint64_t kFileBytes = 100'000;
  RecordingStore store("/d", 400, kFileBytes);
  NeuralCacheOptions options;
  options.capacity_bytes = 1ull << 30;
  options.experts = {"hints"};
  options.link_bytes_per_s = 62.5e6;
  options.rtt_s = 0.040;
  options.prefetch_threads = 4;
  auto cache = NeuralCache::Create(options, &store);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();

  HintRequest hint;
  hint.job = "job";
  hint.dataset = "/d";
  hint.paths = store.Paths();
  auto declared = (*cache)->Hint(hint);
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  ASSERT_EQ(declared->accepted, 400u);

  uint64_t fetched = 0;
  for (int i = 0; i < 500 && fetched < 200 * kFileBytes; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    fetched = 0;
    for (uint64_t b : store.Batches()) fetched += b;
  }
  const std::vector<uint64_t> batches = store.Batches();
  ASSERT_GE(fetched, 200 * kFileBytes);
  // The first reads of the order wait for their batch: it is a few files, not megabytes
  // sharing the link with every other fetcher's batch.
  EXPECT_LE(batches.front(), (256u << 10) + kFileBytes);
  // Once fetches are under way, batches grow so that the link stays full (fewer round trips).
  EXPECT_GE(*std::max_element(batches.begin(), batches.end()), 1u << 20);
}

// Each listing is a round trip to the hub.
class SlowListingStore : public DataStore {
 public:
  std::vector<Result<std::vector<ChunkId>>> FetchAndHold(
      const std::vector<ItemRef>& items) override {
    return std::vector<Result<std::vector<ChunkId>>>(items.size(), std::vector<ChunkId>{});
  }
  void Revalidate(const std::vector<std::string>&) override {}
  void Hold(const std::vector<ChunkId>&) override {}
  void Release(const std::vector<ChunkId>&) override {}
  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    std::this_thread::sleep_for(milliseconds(100));
    FileInfo f;
    f.path = dir + "/only";
    f.type = FileType::kFile;
    f.size = 1000;
    f.version_id = "v-" + dir;
    return std::vector<FileInfo>{f};
  }
};

TEST(NeuralCachePrefetchTest, AHintListsTheDirectoriesItNamesAtOnce) {
  SlowListingStore store;
  NeuralCacheOptions options;
  options.experts = {"none"};
  auto cache = NeuralCache::Create(options, &store);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  HintRequest hint;
  hint.job = "job";
  hint.dataset = "/d";
  for (int i = 0; i < 8; ++i) hint.paths.push_back("/d/c" + std::to_string(i) + "/only");
  const auto start = std::chrono::steady_clock::now();
  auto declared = (*cache)->Hint(hint);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(declared->accepted, 8u);
  // One listing after another would take 0.8 s.
  EXPECT_LT(took, milliseconds(400));
}

}  // namespace
}  // namespace weft::fabric
