// ContentHints: what a spoke last learned of each file's content (its chunk ids), kept across
// lease expiry and invalidation, unlike MetaCache. It never answers a read: it only lets a
// lookup tell the hub which of the file's chunks the spoke still holds, so that re-reading
// unchanged files after their leases lapsed (every epoch longer than a lease, every new
// version of a dataset) moves metadata, not bytes. Bounded: two generations of at most
// `capacity` files each (a file not looked up for two generations is forgotten). Keyed by a
// 64-bit hash of the hub path: a collision gives a useless hint, never a wrong read, since
// the hub sends whatever the hint does not name. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vfs/volume.h"

namespace weft::fabric {

class ContentHints {
 public:
  // A file's hint names at most this many chunks (a small file's: inline reads are ≤ 1 MiB).
  static constexpr size_t kMaxChunksPerFile = 64;

  explicit ContentHints(size_t capacity) : capacity_(capacity) {}

  void Remember(std::string_view hub_path, const std::vector<ChunkRef>& chunks);
  // The chunk ids last remembered for `hub_path` (none if forgotten or never seen).
  std::vector<ChunkId> Recall(std::string_view hub_path);

 private:
  using Map = std::unordered_map<uint64_t, std::vector<ChunkId>>;

  const size_t capacity_;
  std::mutex mu_;
  Map current_;   // GUARDED_BY(mu_)
  Map previous_;  // GUARDED_BY(mu_)
};

}  // namespace weft::fabric
