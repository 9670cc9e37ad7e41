// PortalVolume: the Volume a spoke serves (DESIGN.md §4). Each portal maps a hub directory to
// a local path; front ends cannot tell it from the hub's LocalVolume.
//
// Reads: metadata comes from a cache that is used only under a valid directory lease from the
// hub; the hub revokes a lease (and waits for this spoke's acknowledgement, carried by the
// next long poll) before it commits any mutation of that directory, so a read never returns
// something older than a write that completed before it began. A lease counts from when the
// request was *sent*, so it always ends here before it ends at the hub. File content is
// fetched as chunks, in batches over several connections, into the local chunk store; chunks
// are named by their bytes, so a cached chunk never goes stale.
//
// Writes are write-through: the file is chunked here, the hub is asked once which chunks it
// lacks, only those are sent, and the commit happens at the hub (conditionally when the
// caller asked); the writer's Commit returns only after the hub's commit did.
//
// Paths that are neither in a portal nor above one do not exist; directories above a portal
// are read-only and synthetic. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/splitter.h"
#include "fabric/hub_client.h"
#include "fabric/lease_table.h"
#include "fabric/neural_cache.h"
#include "vfs/volume.h"

namespace weft::fabric {

struct Portal {
  std::string hub_path;    // a directory at the hub
  std::string local_path;  // where the spoke shows it
};

// "HUBPATH[:LOCALPATH]" (LOCALPATH defaults to HUBPATH).
Result<Portal> ParsePortal(const std::string& text);

struct PortalVolumeOptions {
  std::vector<Portal> portals;
  std::string site = "spoke";
  std::vector<std::string> tags;
  ChunkerOptions chunker;
  // Sequential reads fetch this far ahead of the reader (with cache_bytes, at most 2.5 % of it).
  uint64_t readahead_bytes = 16 << 20;
  // Chunk bytes per fetch or upload request; requests run on the client's connections.
  uint64_t batch_bytes = 4 << 20;
  // Chunk bytes the spoke keeps; beyond, least recently used chunks are evicted (0: no limit).
  // Chunks of writes not yet committed at the hub are never evicted.
  uint64_t cache_bytes = 0;
  // Opening a file up to this size for reading brings its bytes with its metadata: a cold
  // read of a small file costs one round trip, not two (0: never).
  uint64_t inline_read_bytes = 1 << 20;
  // Commits whose missing chunks total at most this send them in the commit itself.
  uint64_t inline_commit_bytes = 8 << 20;
  // When the hub cannot be reached, answer from cached metadata whose lease has expired
  // (marked FileInfo::stale) instead of failing: availability over consistency.
  bool stale_ok = false;
  // NeuralCache: which fetched items to keep and what to fetch ahead. Its capacity is set
  // from cache_bytes: 80 % for the policy's items, 15 % for prefetches waiting to be read, and
  // 5 % for chunks in transit (reads the policy declines, read-ahead: at most half of it).
  std::optional<NeuralCacheOptions> neural_cache;
  // How long one invalidation poll waits at the hub.
  std::chrono::milliseconds poll_wait{5'000};
  // Lease and cache times (NeuralCache's too); the background loops' pauses are real.
  Clock* clock = SystemClock::Default();
};

struct PortalStats {
  uint64_t metadata_hits = 0;    // answered from the leased cache
  uint64_t metadata_misses = 0;  // asked the hub
  uint64_t chunk_hits = 0;
  uint64_t chunks_fetched = 0;
  uint64_t bytes_fetched = 0;  // wire bytes of chunk batches from the hub
  uint64_t bytes_uploaded = 0;
  uint64_t invalidations = 0;
  uint64_t lease_renewals = 0;  // directory leases renewed before they lapsed
  uint64_t stale_answers = 0;   // --stale-ok answers from expired metadata
  uint64_t dirs_whole = 0;      // directories listed whole in one `dir` round trip
  uint64_t dirs_changed = 0;    // directories revalidated by their changes since (`dir`)
  uint64_t evictions = 0;       // chunks evicted to stay within cache_bytes
  uint64_t evicted_bytes = 0;
  uint64_t uncached = 0;  // fetched chunks served but not kept: the cache's disk was full
};

// It is also the UpstreamLeases of the HubService a chaining spoke runs over it: lease keys
// are local directories.
class PortalVolume : public Volume, public UpstreamLeases {
 public:
  // Attaches to the hub and starts the invalidation poll. `chunks` is the spoke's own store.
  static Result<std::unique_ptr<PortalVolume>> Open(std::unique_ptr<HubClient> hub,
                                                    std::shared_ptr<ChunkStore> chunks,
                                                    PortalVolumeOptions options);

  // Called with the *local* directories an invalidation from the hub covers, before this
  // spoke acknowledges it: a spoke serving chained spokes revokes their leases here. Set it
  // before serving.
  virtual void SetInvalidationHook(std::function<void(const Affected&)> hook) = 0;
  virtual PortalStats Stats() const = 0;
  virtual const HubClient& hub() const = 0;
  // Null when the spoke runs without NeuralCache.
  virtual NeuralCache* neural_cache() = 0;
};

}  // namespace weft::fabric
