// MemChunkStore: the in-memory ChunkStore fake for tests of the layers above. It keeps every
// chunk's plaintext in a map and behaves like PackChunkStore at the interface: dedup on Put,
// verification on Get (CorruptForTest makes that observable), Sweep, Verify and Stats.
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "chunk/chunk_store.h"

namespace weft {

class MemChunkStore final : public ChunkStore {
 public:
  MemChunkStore() = default;

  Result<bool> Put(const ChunkId& id, ByteSpan data) override;
  Status Flush() override;
  bool Contains(const ChunkId& id) override;
  Result<std::string> Get(const ChunkId& id) override;
  Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) override;
  Status Verify(std::vector<ChunkProblem>* problems) override;
  ChunkStoreStats Stats() override;

  // Flips a bit of the stored copy of `id`, so Get and Verify report Corruption. False if the
  // chunk is absent or empty.
  bool CorruptForTest(const ChunkId& id);

 private:
  std::mutex mu_;
  std::unordered_map<ChunkId, std::string, ChunkIdHash> chunks_;  // guarded by mu_
  uint64_t raw_bytes_ = 0;                                        // guarded by mu_
};

std::unique_ptr<ChunkStore> NewMemChunkStore();

}  // namespace weft
