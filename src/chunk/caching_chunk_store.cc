#include "chunk/caching_chunk_store.h"

namespace weft {

CachingChunkStore::CachingChunkStore(std::shared_ptr<ChunkStore> base, uint64_t capacity_bytes)
    : base_(std::move(base)), capacity_(capacity_bytes) {}

std::shared_ptr<const std::string> CachingChunkStore::Lookup(const ChunkId& id) {
  std::lock_guard lock(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return it->second->second;
}

Result<std::shared_ptr<const std::string>> CachingChunkStore::GetSharedOnce(const ChunkId& id) {
  if (std::shared_ptr<const std::string> cached = Lookup(id)) return cached;
  WEFT_ASSIGN_OR_RETURN(std::string data, base_->Get(id));
  return std::make_shared<const std::string>(std::move(data));
}

Result<std::vector<std::shared_ptr<const std::string>>> CachingChunkStore::GetManyOnce(
    std::span<const ChunkId> ids) {
  std::vector<std::shared_ptr<const std::string>> out(ids.size());
  std::vector<ChunkId> missing;
  for (size_t i = 0; i < ids.size(); ++i) {
    out[i] = Lookup(ids[i]);
    if (out[i] == nullptr) missing.push_back(ids[i]);
  }
  if (missing.empty()) return out;
  WEFT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const std::string>> read,
                        base_->GetManyOnce(missing));
  for (size_t i = 0, next = 0; i < out.size(); ++i) {
    if (out[i] == nullptr) out[i] = std::move(read[next++]);
  }
  return out;
}

Result<std::shared_ptr<const std::string>> CachingChunkStore::GetShared(const ChunkId& id) {
  if (std::shared_ptr<const std::string> cached = Lookup(id)) return cached;
  // Read outside the lock: other readers proceed; two misses of one id both read it once.
  WEFT_ASSIGN_OR_RETURN(std::string data, base_->Get(id));
  auto shared = std::make_shared<const std::string>(std::move(data));
  Insert(id, shared);
  return shared;
}

Result<std::string> CachingChunkStore::Get(const ChunkId& id) {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> data, GetShared(id));
  return *data;
}

Status CachingChunkStore::LendMany(std::span<const ChunkId> ids, const ChunkUser& use) {
  bool any_held = false;
  {
    std::lock_guard lock(mu_);
    for (const ChunkId& id : ids) any_held = any_held || map_.contains(id);
    if (!any_held) misses_ += ids.size();
  }
  if (any_held) return ChunkStore::LendMany(ids, use);
  return base_->LendMany(ids, use);
}

void CachingChunkStore::WillNeed(std::span<const ChunkId> ids) {
  std::vector<ChunkId> missing;
  {
    std::lock_guard lock(mu_);
    for (const ChunkId& id : ids) {
      if (!map_.contains(id)) missing.push_back(id);
    }
  }
  if (!missing.empty()) base_->WillNeed(missing);
}

void CachingChunkStore::Insert(const ChunkId& id, std::shared_ptr<const std::string> data) {
  if (data->size() > capacity_ / 4) return;  // one huge chunk must not flush everything
  std::lock_guard lock(mu_);
  if (map_.count(id)) return;
  bytes_ += data->size();
  lru_.emplace_front(id, std::move(data));
  map_[id] = lru_.begin();
  while (bytes_ > capacity_ && !lru_.empty()) {
    bytes_ -= lru_.back().second->size();
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

Result<SweepStats> CachingChunkStore::Sweep(const std::function<bool(const ChunkId&)>& is_live) {
  {
    // Content-addressed bytes never go stale; dead chunks are dropped to free the memory.
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (is_live(it->first)) {
        ++it;
        continue;
      }
      bytes_ -= it->second->size();
      map_.erase(it->first);
      it = lru_.erase(it);
    }
  }
  return base_->Sweep(is_live);
}

uint64_t CachingChunkStore::cached_bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}
uint64_t CachingChunkStore::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}
uint64_t CachingChunkStore::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace weft
