// What NeuralCache reasons about: items and the reads of them. An item is what the cache admits
// and evicts: a whole file, or one kBlockBytes block of a larger file (token files and shards
// are read in ranges, and caching a 1 GB shard whole for one 2 KB record would waste the
// cache). The simulator and the spoke use the same types, so a policy measured in one behaves
// the same in the other.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace weft::cache {

using Key = uint64_t;

inline constexpr uint64_t kBlockBytes = 8ull << 20;
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Mixes (file, block) into one key; file ids are themselves hashes (of a path and version at a
// spoke) or dense ids (in a trace).
constexpr Key ItemKey(uint64_t file, uint32_t block) {
  uint64_t x = file ^ (uint64_t{block} * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

struct Item {
  Key key = 0;
  uint64_t file = 0;   // the file the item belongs to
  uint32_t block = 0;  // block index within the file (0 for files up to kBlockBytes)
  uint64_t dir = 0;    // the file's parent directory
  uint64_t size = 0;   // bytes
};

// One demand read (or one prefetched arrival) as a policy sees it. Policies never see the
// reader's epoch, run or seed: storage cannot, so they must infer them.
struct Request {
  Item item;
  uint32_t job = 0;       // the reading job (a training process, or a hint's job id)
  int64_t time_ns = 0;    // when it happened (monotonic)
  bool prefetch = false;  // an arrival from the prefetcher, not a read
  // Only for offline policies (Belady MIN) and labelled "oracle" runs: the index in the trace
  // of the next read of this item, kNever if none. Online policies must ignore it.
  int64_t next_use = kNever;
};

// One rank's declared future: the items it reads next, in order (resolved by the caller from
// the paths it sent, or from seed, epoch, rank, world size and a manifest). Both the eviction
// policy and the prefetch experts take it. A job's reads are not told apart by rank (storage
// sees one principal), but its ranks declare separately: what the job will read is the union
// of its ranks' latest declarations, and a rank's hint replaces only that rank's own.
struct Hint {
  uint32_t job = 0;
  uint32_t rank = 0;
  uint32_t world = 1;  // the job's ranks: its declared future is complete once all declared
  // Of them, the ranks that declare to this cache (a node's, when a job spans nodes that each
  // have their own); 0: all of them.
  uint32_t local = 0;
  std::vector<Item> next;
  bool replace = true;  // false: append to what this rank declared before
};

}  // namespace weft::cache
