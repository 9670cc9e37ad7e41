// NeuralCache at a spoke (DESIGN.md §5): decides which fetched items the spoke keeps (an
// eviction policy from src/cache over byte capacity) and fetches ahead what its experts predict
// training will read next (the prefetch ensemble), within a bandwidth-delay budget. It stores
// no bytes itself: an admitted item's chunks are held in the spoke's chunk store, an evicted
// one's released (DataStore below). Prefetches run on a small pool of threads.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "cache/item.h"
#include "chunk/chunk_id.h"
#include "vfs/volume.h"

namespace weft::fabric {

struct NeuralCacheOptions {
  // An eviction policy name of cache::MakePolicy ("neural" by default).
  std::string policy = "neural";
  // Bytes of items the policy keeps (0: no limit, nothing is evicted).
  uint64_t capacity_bytes = 0;
  // Bytes of prefetched items waiting to be read, outside the policy's capacity (0: no
  // limit). Prefetches are planned only while there is room.
  uint64_t staging_bytes = 0;
  // A staged item not read this long was a wrong guess (or its reader is gone): it is
  // dropped, so that wrong guesses cannot fill staging and stop prefetching for good. Time
  // counts only while reads come (a gap between reads counts for at most a second), so a
  // pause between epochs does not drop what was staged for the next one.
  std::chrono::milliseconds staged_ttl{10'000};
  // Prefetch experts of cache::MakeExperts; empty: all; {"none"}: no prefetching.
  std::vector<std::string> experts;
  // The link to the hub, as the prefetch budget assumes it.
  double link_bytes_per_s = 125e6;
  double rtt_s = 0.020;
  size_t prefetch_threads = 8;
  // Read times (pace, staging's age); the prefetch workers' waits are real.
  Clock* clock = SystemClock::Default();
};

// What NeuralCache needs from the volume whose reads it watches.
class DataStore {
 public:
  virtual ~DataStore() = default;
  struct ItemRef {
    std::string path;     // local
    std::string version;  // the content version predicted
    uint32_t block = 0;
  };
  // Makes the chunks of each item local and held from eviction, in as few round trips as it
  // can; returns, per item, the ids held or why not (the file changed since, say).
  virtual std::vector<Result<std::vector<ChunkId>>> FetchAndHold(
      const std::vector<ItemRef>& items) = 0;
  // Makes the metadata of `paths` (local) current where its lease lapsed, in as few round
  // trips as it can: declared reads of files already held then cost no lookup each.
  virtual void Revalidate(const std::vector<std::string>& paths) = 0;
  virtual void Hold(const std::vector<ChunkId>& ids) = 0;
  virtual void Release(const std::vector<ChunkId>& ids) = 0;
  // The files and subdirectories directly in `dir` (infos filled).
  virtual Result<std::vector<FileInfo>> List(const std::string& dir) = 0;
};

// A job's declared future (REST `POST cache/hints`): either explicit paths in read order, or
// what a sampler needs to compute the order.
struct HintRequest {
  std::string job;      // reads are attributed to jobs by principal; defaults to it
  std::string dataset;  // a local directory every path lies under
  std::vector<std::string> paths;
  // Seed mode (when `paths` is empty): every file under `dataset`, sorted by path, permuted
  // by `sampler` ("sequential", or "permutation": docs/neuralcache.md gives the algorithm)
  // with seed + epoch, then every world_size-th from `rank`.
  std::string sampler = "permutation";
  uint64_t seed = 0;
  uint64_t epoch = 0;
  // The rank this order is for, in both modes: a job's ranks each declare their own share,
  // and a hint replaces (or appends to) only its rank's. Seed mode also computes that share.
  uint32_t rank = 0;
  uint32_t world_size = 1;
  // The ranks that declare to this spoke or mount (torchrun's LOCAL_WORLD_SIZE), when a job's
  // ranks are spread over nodes with caches of their own; 0: all world_size of them.
  uint32_t local_world_size = 0;
  bool append = false;  // add to the rank's declared order instead of replacing it
};

struct HintResult {
  uint64_t accepted = 0;             // items declared
  std::vector<std::string> unknown;  // paths not found (the first few)
  uint64_t unknown_count = 0;
};

// The order "permutation" gives `n` files for `seed`: a Fisher–Yates shuffle driven by
// SplitMix64, documented so that clients (the Python package) can compute it too.
std::vector<uint64_t> PermutationOrder(uint64_t n, uint64_t seed);

// The job id a principal's reads count against.
uint32_t JobId(const std::string& name);

class NeuralCache {
 public:
  // Unknown policy or expert names fail.
  static Result<std::unique_ptr<NeuralCache>> Create(NeuralCacheOptions options, DataStore* store);
  virtual ~NeuralCache() = default;

  // Makes the chunks of `block` of a file being read: called by a reader for the blocks it
  // reads, once per block and reader.
  using BlockChunks = std::function<std::vector<ChunkId>(uint32_t block)>;
  // A demand read of [offset, offset+length) of `info` (a file; info.path local) by `job`,
  // before its chunks are fetched. `first_block`..`last_block` are the blocks this reader has
  // not reported before. Waits while a prefetch of one of them is on the way.
  virtual void OnRead(uint32_t job, const FileInfo& info, uint32_t first_block, uint32_t last_block,
                      const BlockChunks& chunks_of) = 0;
  // Files listed in `dir` (local), for experts that look at directories.
  virtual void OnListing(const std::string& dir, const std::vector<FileInfo>& files) = 0;
  virtual Result<HintResult> Hint(const HintRequest& hint) = 0;
  // Whether a prefetch of `path` (local; its first block, as last seen) is on the way: a
  // reader opening it should not have the hub send its bytes a second time with the lookup.
  virtual bool Prefetching(const std::string& path) = 0;

  virtual nlohmann::json StatsJson() const = 0;
  // Prometheus text lines (weft_cache_*).
  virtual std::string MetricsText() const = 0;
};

}  // namespace weft::fabric
