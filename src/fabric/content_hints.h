// ContentHints: what a spoke last learned of each file's content (the version and its chunk
// list, and the version before it), kept across lease expiry and invalidation, unlike
// MetaCache. It never answers a read. It lets a lookup tell the hub which chunks the spoke
// still holds, so re-reading unchanged files after their leases lapsed (every epoch longer
// than a lease, every new version of a dataset) moves metadata, not bytes; and it names the
// earlier version a changed file's new chunks can be sent as deltas against. Bounded: two
// generations of at most `capacity` files and `chunk_capacity` chunk refs each (a file not
// looked up for two generations is forgotten). Keyed by a 64-bit hash of the hub path: a
// collision gives a useless hint, never a wrong read, since the hub checks what it is told
// and sends whatever the hint does not cover. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vfs/volume.h"

namespace weft::fabric {

// One version of a file as the spoke saw it.
struct KnownVersion {
  std::string version_id;
  std::vector<ChunkRef> chunks;
};

struct KnownContent {
  KnownVersion latest;
  std::optional<KnownVersion> previous;  // the version `latest` replaced, if it differs
};

class ContentHints {
 public:
  // Files with more chunks leave no hint (4096 chunks: 256 MiB at the 64 KiB average).
  static constexpr size_t kMaxChunksPerFile = 4096;

  ContentHints(size_t capacity, size_t chunk_capacity)
      : capacity_(capacity), chunk_capacity_(chunk_capacity) {}

  void Remember(std::string_view hub_path, const std::string& version_id,
                const std::vector<ChunkRef>& chunks);
  std::optional<KnownContent> Recall(std::string_view hub_path);

 private:
  struct Generation {
    std::unordered_map<uint64_t, KnownContent> files;
    size_t chunks = 0;  // chunk refs held by `files`
  };
  // Makes room in current_ for one more file of `chunks` refs (a new generation if need be).
  void MakeRoomLocked(size_t chunks);

  const size_t capacity_;
  const size_t chunk_capacity_;
  std::mutex mu_;
  Generation current_;   // GUARDED_BY(mu_)
  Generation previous_;  // GUARDED_BY(mu_)
};

}  // namespace weft::fabric
