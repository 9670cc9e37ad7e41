// SpokeChunks: the content half of a spoke. Its chunk store (bounded by the cache size; holes
// answered without storage), what it remembers of each file's content across leases
// (ContentHints: lookups name what the spoke holds, changed chunks come as deltas against
// it), and fetching chunks from the hub in parallel batches. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunk/bounded_chunk_store.h"
#include "chunk/chunk_store.h"
#include "fabric/content_hints.h"
#include "fabric/hub_client.h"

namespace weft::fabric {

// Plaintext of chunks just fetched, handed straight to the reader that asked for them, so
// that an eviction round between the fetch and the read cannot take them away. The keys are
// the chunks wanted; a value stays null unless its chunk came in that fetch.
using FetchedChunks = std::unordered_map<ChunkId, std::shared_ptr<const std::string>, ChunkIdHash>;

// Chunks of one version to fetch: (*chunks)[indices].
struct FetchItem {
  std::string hub_path;
  std::string version;
  const std::vector<ChunkRef>* chunks = nullptr;
  std::vector<size_t> indices;
};

struct SpokeChunkStats {
  uint64_t chunk_hits = 0;  // wanted and already here
  uint64_t chunks_fetched = 0;
  uint64_t bytes_fetched = 0;  // wire bytes of chunk frames from the hub
  uint64_t evictions = 0;
  uint64_t evicted_bytes = 0;
  uint64_t uncached = 0;  // fetched chunks the store refused (its disk full): served, not kept
};

class SpokeChunks {
 public:
  // `store` is the spoke's own; `cache_bytes` bounds it (0: no bound). Fetch requests carry
  // up to `batch_bytes` of chunks each, one per hub connection at a time.
  SpokeChunks(HubClient* hub, std::shared_ptr<ChunkStore> store, uint64_t cache_bytes,
              uint64_t batch_bytes);

  ChunkStore& store() { return *chunks_; }

  // Held chunks are never evicted (a writer's until its commit, NeuralCache's kept items).
  void Hold(const ChunkId& id);
  void Release(const std::vector<ChunkId>& ids);

  // Fetches the chunks `items` name that are not local (with `force`, also those the store
  // claims: an eviction round may be removing them). Fetched chunks whose ids are keys of
  // `*kept` get their plaintext there, as well as in the store.
  Status FetchMany(const std::vector<FetchItem>& items, bool force = false,
                   FetchedChunks* kept = nullptr);
  Status Fetch(const std::string& hub_path, const std::string& version,
               const std::vector<ChunkRef>& chunks, const std::vector<size_t>& indices,
               bool force = false, FetchedChunks* kept = nullptr) {
    return FetchMany({FetchItem{hub_path, version, &chunks, indices}}, force, kept);
  }

  // Stores the chunk frames of a hub answer (verified by id as they are put), handing those
  // `*kept` names back there too; how many. Delta frames are decoded against this spoke's
  // chunks; one whose base is gone is not stored, and goes to `*unresolved`.
  // `wire_bytes`: what they took on the wire (counted in bytes_fetched), if not their size.
  Result<size_t> StoreFrames(std::string_view in, FetchedChunks* kept = nullptr,
                             std::mutex* kept_mu = nullptr,
                             std::vector<ChunkId>* unresolved = nullptr,
                             std::optional<uint64_t> wire_bytes = std::nullopt);

  // For a lookup that asks for a file's bytes: names in `*args` ("have", "base_version") what
  // this spoke still holds of the version it last saw, so the hub leaves that out and sends
  // the rest as deltas against it. Nothing for a file last seen larger than `inline_bytes`
  // (its bytes will not come inline: naming its chunks would be wasted). True if it named any.
  bool DescribeHeld(const std::string& hub_path, uint64_t inline_bytes, nlohmann::json* args);
  // A file's content as the hub just described it (live paths only).
  void Remember(const std::string& hub_path, const std::string& version,
                const std::vector<ChunkRef>& chunks) {
    hints_.Remember(hub_path, version, chunks);
  }
  // The latest version of `hub_path` this spoke saw, and its chunks, if it still knows.
  std::optional<KnownVersion> Latest(const std::string& hub_path) {
    std::optional<KnownContent> known = hints_.Recall(hub_path);
    if (!known) return std::nullopt;
    return std::move(known->latest);
  }

  SpokeChunkStats Stats() const;

 private:
  // The version of `item`'s file that this spoke saw before the one it fetches, if it knows
  // one: its chunks are the bases of deltas.
  std::optional<KnownVersion> BaseFor(const FetchItem& item);
  // Adds to a fetch item, for each wanted chunk, the chunks of `base` in its region
  // (DeltaBaseIndices) that this spoke holds: "base_version" and "bases": [[index, base
  // index, ...], ...].
  void AddDeltaBases(const std::vector<ChunkRef>& chunks, const std::vector<size_t>& indices,
                     const KnownVersion& base, nlohmann::json* item);

  HubClient* const hub_;
  const uint64_t batch_bytes_;
  std::shared_ptr<BoundedChunkStore> bounded_;  // null without a cache limit
  std::shared_ptr<ChunkStore> chunks_;          // over bounded_ or the store given
  // Survives leases and invalidations (content_hints.h).
  ContentHints hints_;
  std::atomic<uint64_t> chunk_hits_ = 0;
  std::atomic<uint64_t> chunks_fetched_ = 0;
  std::atomic<uint64_t> bytes_fetched_ = 0;
  std::atomic<uint64_t> uncached_ = 0;
};

}  // namespace weft::fabric
