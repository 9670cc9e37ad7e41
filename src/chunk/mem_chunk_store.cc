#include "chunk/mem_chunk_store.h"

namespace weft {
namespace {

Status CheckChunk(const ChunkId& id, const std::string& data) {
  if (ChunkId::Of(AsBytes(data)) != id) {
    return Corruption("mem chunk " + id.ShortHex() + ": hash mismatch");
  }
  return OkStatus();
}

}  // namespace

Result<bool> MemChunkStore::Put(const ChunkId& id, ByteSpan data) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = chunks_.try_emplace(id);
  if (!inserted) return false;
  it->second.assign(AsChars(data));
  raw_bytes_ += data.size();
  return true;
}

Status MemChunkStore::Flush() {
  return OkStatus();
}

bool MemChunkStore::Contains(const ChunkId& id) {
  std::lock_guard lock(mu_);
  return chunks_.contains(id);
}

Result<std::string> MemChunkStore::Get(const ChunkId& id) {
  std::string data;
  {
    std::lock_guard lock(mu_);
    auto it = chunks_.find(id);
    if (it == chunks_.end()) return NotFound("chunk " + id.ShortHex() + " not found");
    data = it->second;
  }
  // Hash outside the lock, as the pack store does, so readers do not serialize.
  WEFT_RETURN_IF_ERROR(CheckChunk(id, data));
  return data;
}

Result<SweepStats> MemChunkStore::Sweep(const std::function<bool(const ChunkId&)>& is_live) {
  // is_live runs without the lock, as in the pack store, so it may call back into the store.
  std::vector<ChunkId> ids;
  {
    std::lock_guard lock(mu_);
    ids.reserve(chunks_.size());
    for (const auto& entry : chunks_) ids.push_back(entry.first);
  }
  std::vector<ChunkId> dead;
  for (const ChunkId& id : ids) {
    if (!is_live(id)) dead.push_back(id);
  }
  SweepStats stats;
  std::lock_guard lock(mu_);
  for (const ChunkId& id : dead) {
    auto it = chunks_.find(id);
    if (it == chunks_.end()) continue;
    ++stats.chunks_removed;
    stats.bytes_reclaimed += it->second.size();
    raw_bytes_ -= it->second.size();
    chunks_.erase(it);
  }
  return stats;
}

Status MemChunkStore::Verify(std::vector<ChunkProblem>* problems) {
  std::lock_guard lock(mu_);
  for (const auto& [id, data] : chunks_) {
    Status status = CheckChunk(id, data);
    if (!status.ok()) problems->push_back({"mem chunk " + id.ShortHex(), status});
  }
  return OkStatus();
}

ChunkStoreStats MemChunkStore::Stats() {
  std::lock_guard lock(mu_);
  ChunkStoreStats stats;
  stats.chunks = chunks_.size();
  stats.raw_bytes = raw_bytes_;
  stats.stored_bytes = raw_bytes_;
  return stats;
}

bool MemChunkStore::CorruptForTest(const ChunkId& id) {
  std::lock_guard lock(mu_);
  auto it = chunks_.find(id);
  if (it == chunks_.end() || it->second.empty()) return false;
  it->second[0] ^= 1;
  return true;
}

std::unique_ptr<ChunkStore> NewMemChunkStore() {
  return std::make_unique<MemChunkStore>();
}

}  // namespace weft
