// CachingChunkStore: a ChunkStore decorator that keeps recently read chunks, already checked
// by the store below, in memory (LRU by bytes). Random small reads of a file otherwise fetch,
// check and decompress a whole chunk per read; with the cache, repeated reads of a hot set
// cost a lookup, as the page cache does for local files. Every byte it serves was checked
// when it was read from the store below. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "chunk/chunk_store.h"

namespace weft {

class CachingChunkStore final : public ChunkStore {
 public:
  // `capacity_bytes` of chunk plaintext at most; 0 disables caching.
  CachingChunkStore(std::shared_ptr<ChunkStore> base, uint64_t capacity_bytes);

  Result<bool> Put(const ChunkId& id, ByteSpan data) override { return base_->Put(id, data); }
  Status Flush() override { return base_->Flush(); }
  bool Contains(const ChunkId& id) override { return base_->Contains(id); }
  Result<std::string> Get(const ChunkId& id) override;
  Result<std::shared_ptr<const std::string>> GetShared(const ChunkId& id) override;
  Result<std::shared_ptr<const std::string>> GetSharedOnce(const ChunkId& id) override;
  // Hits from the cache, the rest from the store below together; misses are not kept.
  Result<std::vector<std::shared_ptr<const std::string>>> GetManyOnce(
      std::span<const ChunkId> ids) override;
  // Lent by the store below when this cache holds none of them (counted as misses), so a
  // cold read is not copied; else as GetManyOnce serves them.
  Status LendMany(std::span<const ChunkId> ids, const ChunkUser& use) override;
  // Forwards the ids this cache does not hold.
  void WillNeed(std::span<const ChunkId> ids) override;
  Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) override;
  // Verifies what is on disk, bypassing the cache.
  Status Verify(std::vector<ChunkProblem>* problems) override { return base_->Verify(problems); }
  ChunkStoreStats Stats() override { return base_->Stats(); }

  uint64_t cached_bytes() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  using Lru = std::list<std::pair<ChunkId, std::shared_ptr<const std::string>>>;

  void Insert(const ChunkId& id, std::shared_ptr<const std::string> data);
  // The cached copy (counted as a hit and made recent), or null (counted as a miss).
  std::shared_ptr<const std::string> Lookup(const ChunkId& id);

  std::shared_ptr<ChunkStore> base_;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // GUARDED_BY(mu_): most recently used first
  std::unordered_map<ChunkId, Lru::iterator, ChunkIdHash> map_;  // GUARDED_BY(mu_)
  uint64_t bytes_ = 0;                                           // GUARDED_BY(mu_)
  uint64_t hits_ = 0;                                            // GUARDED_BY(mu_)
  uint64_t misses_ = 0;                                          // GUARDED_BY(mu_)
};

}  // namespace weft
