// BoundedChunkStore: a ChunkStore decorator that keeps the chunk plaintext of the store below at
// most a byte capacity, evicting least recently used chunks with one Sweep of the store below
// per eviction round. A spoke keeps the chunks it fetched from its hub this way; an evicted chunk
// reads as NotFound and the caller fetches it again. Chunks can be held (a spoke's writes not yet
// committed at the hub) and are then never evicted. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chunk/chunk_store.h"

namespace weft {

struct BoundedChunkStoreStats {
  uint64_t evictions = 0;      // chunks removed by eviction rounds
  uint64_t evicted_bytes = 0;  // their plaintext bytes; estimated for chunks unknown to the LRU
  uint64_t sweeps = 0;         // Sweeps of the store below run by eviction rounds
};

// Recency lives in memory only: chunks already in `base` when the decorator is created are
// unknown to it and count as the least recently used, so they are evicted first. Their sizes
// are unknown too: a round evicts as many as their average size says it needs, and when sizes
// are skewed a few more rounds (each doubling the count) fix a shortfall, possibly evicting
// more than needed.
//
// Eviction runs in the thread of the Put that took Stats().raw_bytes over the capacity, one
// round at a time: a Put arriving meanwhile proceeds (it waits only if it re-puts a chunk that
// round is removing, so that its chunk is stored again afterwards). After the rounds, raw_bytes
// is at most the capacity unless the chunks that may not be evicted (held ones and those just
// put) exceed it alone, or Puts kept arriving; then everything else is evicted and the store
// stays above the capacity until those are released. A Sweep that fails (I/O) ends the rounds
// without failing the Put, whose chunk is stored; the next Put over capacity tries again.
//
// Invariant: every chunk the LRU holds is present in `base`, provided nothing but this decorator
// removes chunks from `base`.
class BoundedChunkStore final : public ChunkStore {
 public:
  // Keeps at most `capacity_bytes` of chunk plaintext (ChunkStoreStats::raw_bytes of `base`);
  // beyond it, evicts least recently used chunks down to `low_water` × capacity.
  BoundedChunkStore(std::shared_ptr<ChunkStore> base, uint64_t capacity_bytes,
                    double low_water = 0.9);

  // Counted holds: a chunk held at least once is never evicted, present or not yet Put (Hold
  // before Put protects a write from its first byte). If a round is removing `id` when Hold is
  // called, Hold waits for it to end; Contains() then tells whether the chunk survived.
  // Releasing a chunk that is not held does nothing.
  void Hold(const ChunkId& id);
  void Release(const ChunkId& id);
  // Evicts down to the low-water mark if the store is over capacity (after releases: held
  // chunks may have kept it above).
  void Trim();

  BoundedChunkStoreStats bounded_stats() const;
  // The ids the LRU holds, most recently used first.
  std::vector<ChunkId> KnownIdsForTest() const;

  // Marks the chunk most recently used, then evicts if the store went over capacity.
  Result<bool> Put(const ChunkId& id, ByteSpan data) override;
  Status Flush() override { return base_->Flush(); }
  // Does not count as a use.
  bool Contains(const ChunkId& id) override { return base_->Contains(id); }
  // Mark the chunk most recently used; NotFound once it was evicted (fetch it again).
  Result<std::string> Get(const ChunkId& id) override;
  Result<std::shared_ptr<const std::string>> GetShared(const ChunkId& id) override;
  void WillNeed(std::span<const ChunkId> ids) override { base_->WillNeed(ids); }
  // Forwards to `base` (holds do not apply: this is the owner's garbage collection, not
  // eviction), waiting for an eviction round in progress; swept chunks leave the LRU.
  Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) override;
  Status Verify(std::vector<ChunkProblem>* problems) override { return base_->Verify(problems); }
  ChunkStoreStats Stats() override { return base_->Stats(); }

 private:
  using Lru = std::list<ChunkId>;  // most recently used first
  struct Entry {
    Lru::iterator pos;
    uint64_t size = 0;
    uint64_t stamp = 0;  // touches_ when last used
  };
  using IdSet = std::unordered_set<ChunkId, ChunkIdHash>;

  // Taken under mu_ before a read of base_.
  struct ReadStart {
    uint64_t generation = 0;
    uint64_t touches = 0;
  };
  ReadStart BeginRead() const;
  // After a read of `size` bytes begun at `start`, with `status`: marks `id` most recently used.
  // An id unknown to the LRU is learned only if no round can have removed it since the read
  // began; a NotFound drops an id that nothing used since (the store below lost it).
  void EndRead(const ChunkId& id, const Status& status, uint64_t size, const ReadStart& start);
  void TouchLocked(const ChunkId& id, uint64_t size);
  void EraseLocked(const ChunkId& id);

  // What one burst of eviction rounds carries from round to round.
  struct Burst {
    bool unknown_exhausted = false;  // a round found fewer evictable unknown ids than planned
    // Multiplies the estimated count of unknown ids to evict: doubles after each round that
    // relied on them and fell short, so skewed sizes cost few rounds.
    uint64_t unknown_scale = 1;
  };
  // Runs eviction rounds until raw_bytes is within capacity or nothing more can go, unless
  // another thread holds evict_mu_ (it then runs the rounds for us).
  void MaybeEvict();
  // One round: picks victims and sweeps base_ once. True if another round should follow.
  bool EvictRound(Burst* burst);
  // The is_live of an eviction round.
  bool LiveInRound(const ChunkId& id);
  // Ends a round or a forwarded Sweep: drops removed chunks from the LRU, wakes waiters.
  void EndRound(bool eviction);

  const std::shared_ptr<ChunkStore> base_;
  const uint64_t capacity_;
  const uint64_t low_water_bytes_;

  // One eviction round or forwarded Sweep at a time; taken before mu_, never held by Get.
  std::mutex evict_mu_;
  std::atomic<bool> evict_again_{false};  // a Put went over capacity since a round began

  mutable std::mutex mu_;
  std::condition_variable round_done_;                        // signalled when victims_ is cleared
  Lru lru_;                                                   // GUARDED_BY(mu_)
  std::unordered_map<ChunkId, Entry, ChunkIdHash> map_;       // GUARDED_BY(mu_)
  uint64_t known_bytes_ = 0;                                  // GUARDED_BY(mu_): sum of sizes
  uint64_t touches_ = 0;                                      // GUARDED_BY(mu_)
  std::unordered_map<ChunkId, uint32_t, ChunkIdHash> holds_;  // GUARDED_BY(mu_)
  // Puts between their call to base_ and their LRU update: live in any round.
  std::unordered_map<ChunkId, uint32_t, ChunkIdHash> pending_;  // GUARDED_BY(mu_)
  // Puts that went over capacity since the last round began: never victims of the next round.
  IdSet just_put_;  // GUARDED_BY(mu_)
  // While a round or forwarded Sweep runs: the ids it removes (known victims, left the LRU
  // already, and ids it judged dead so far). A Put or Hold of one waits for the round to end.
  // Valued by size (the estimate for unknown ids).
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> victims_;  // GUARDED_BY(mu_)
  uint64_t unknown_to_evict_ = 0;  // GUARDED_BY(mu_): unknown ids the round may still judge dead
  uint64_t unknown_avg_size_ = 0;  // GUARDED_BY(mu_): their estimated size
  // Bumped when a round begins and ends; a read that spans a change does not learn its id.
  uint64_t generation_ = 0;       // GUARDED_BY(mu_)
  BoundedChunkStoreStats stats_;  // GUARDED_BY(mu_)
};

}  // namespace weft
