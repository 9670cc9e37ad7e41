#include "chunk/bounded_chunk_store.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace weft {

BoundedChunkStore::BoundedChunkStore(std::shared_ptr<ChunkStore> base, uint64_t capacity_bytes,
                                     double low_water)
    : base_(std::move(base)),
      capacity_(capacity_bytes),
      // Outside [0, 1] (or NaN) is a caller's slip: clamp rather than evict nothing or all.
      low_water_bytes_(
          static_cast<uint64_t>(static_cast<long double>(capacity_bytes) *
                                (std::isnan(low_water) ? 0.9 : std::clamp(low_water, 0.0, 1.0)))) {}

// ---- Holds ----

void BoundedChunkStore::Hold(const ChunkId& id) {
  std::unique_lock lock(mu_);
  ++holds_[id];
  // From here on every round judges `id` live; one that already judged it dead must finish
  // before the caller can rely on what Contains() says.
  round_done_.wait(lock, [&] { return !victims_.contains(id); });
}

void BoundedChunkStore::Release(const ChunkId& id) {
  std::lock_guard lock(mu_);
  auto it = holds_.find(id);
  if (it == holds_.end()) return;
  if (--it->second == 0) holds_.erase(it);
}

void BoundedChunkStore::Trim() {
  if (base_->Stats().raw_bytes > capacity_) MaybeEvict();
}

BoundedChunkStoreStats BoundedChunkStore::bounded_stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::vector<ChunkId> BoundedChunkStore::KnownIdsForTest() const {
  std::lock_guard lock(mu_);
  return {lru_.begin(), lru_.end()};
}

// ---- Reads and writes ----

Result<bool> BoundedChunkStore::Put(const ChunkId& id, ByteSpan data) {
  {
    std::unique_lock lock(mu_);
    // A round removing `id` would undo this Put after base_ found the chunk present: let it
    // finish, then store the chunk again.
    round_done_.wait(lock, [&] { return !victims_.contains(id); });
    ++pending_[id];
  }
  Result<bool> put = base_->Put(id, data);
  // A failed Put may still have stored the chunk; the LRU must know every chunk it holds.
  const bool present = put.ok() || base_->Contains(id);
  if (present) {
    std::lock_guard lock(mu_);
    TouchLocked(id, data.size());
  }
  // Still pending: no round run from here judges it dead or picks it.
  if (put.ok() && *put && base_->Stats().raw_bytes > capacity_) {
    {
      std::lock_guard lock(mu_);
      just_put_.insert(id);
    }
    MaybeEvict();
  }
  std::lock_guard lock(mu_);
  auto it = pending_.find(id);
  if (--it->second == 0) pending_.erase(it);
  return put;
}

Result<std::string> BoundedChunkStore::Get(const ChunkId& id) {
  const ReadStart start = BeginRead();
  Result<std::string> got = base_->Get(id);
  EndRead(id, got.status(), got.ok() ? got->size() : 0, start);
  return got;
}

Result<std::shared_ptr<const std::string>> BoundedChunkStore::GetShared(const ChunkId& id) {
  const ReadStart start = BeginRead();
  Result<std::shared_ptr<const std::string>> got = base_->GetShared(id);
  EndRead(id, got.status(), got.ok() ? (*got)->size() : 0, start);
  return got;
}

BoundedChunkStore::ReadStart BoundedChunkStore::BeginRead() const {
  std::lock_guard lock(mu_);
  return {generation_, touches_};
}

void BoundedChunkStore::EndRead(const ChunkId& id, const Status& status, uint64_t size,
                                const ReadStart& start) {
  std::lock_guard lock(mu_);
  auto it = map_.find(id);
  if (status.ok()) {
    // A round that began or ended since the read may have removed the chunk after it was read;
    // the current round has not, unless it picked or judged the id already (victims_). Once in
    // map_, later judgements of the current round find it live.
    if (it != map_.end() || (start.generation == generation_ && !victims_.contains(id))) {
      TouchLocked(id, size);
    }
    return;
  }
  // Not found although listed: a Put that stored it again since the read began (it touched
  // it or is pending) wins; otherwise the chunk went behind this decorator's back.
  if (status.code() == StatusCode::kNotFound && it != map_.end() &&
      it->second.stamp <= start.touches && !pending_.contains(id)) {
    EraseLocked(id);
  }
}

void BoundedChunkStore::TouchLocked(const ChunkId& id, uint64_t size) {
  auto it = map_.find(id);
  if (it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.pos);
    it->second.stamp = ++touches_;
    return;
  }
  lru_.push_front(id);
  map_[id] = {lru_.begin(), size, ++touches_};
  known_bytes_ += size;
}

void BoundedChunkStore::EraseLocked(const ChunkId& id) {
  auto it = map_.find(id);
  if (it == map_.end()) return;
  known_bytes_ -= it->second.size;
  lru_.erase(it->second.pos);
  map_.erase(it);
}

// ---- Eviction ----

void BoundedChunkStore::MaybeEvict() {
  evict_again_ = true;
  // Whoever holds evict_mu_ sees evict_again_ before it lets go, or we take it next.
  while (evict_again_.load()) {
    std::unique_lock evict_lock(evict_mu_, std::try_to_lock);
    if (!evict_lock.owns_lock()) return;
    while (evict_again_.exchange(false)) {
      Burst burst;
      while (EvictRound(&burst)) {
      }
    }
  }
}

bool BoundedChunkStore::EvictRound(Burst* burst) {
  const ChunkStoreStats before = base_->Stats();
  IdSet protect;  // Puts over capacity since the last round began: never this round's victims
  {
    std::lock_guard lock(mu_);
    protect.swap(just_put_);
    if (before.raw_bytes <= capacity_) return false;
    const uint64_t need = before.raw_bytes - low_water_bytes_;
    uint64_t planned = 0;

    // Chunks unknown to the LRU are the least recently used. Their sizes are unknown, so the
    // round judges dead as many as their average size says cover `need`.
    const uint64_t unknown_bytes =
        before.raw_bytes > known_bytes_ ? before.raw_bytes - known_bytes_ : 0;
    const uint64_t unknown_chunks = before.chunks > map_.size() ? before.chunks - map_.size() : 0;
    unknown_to_evict_ = 0;
    unknown_avg_size_ = 0;
    if (!burst->unknown_exhausted && unknown_bytes > 0 && unknown_chunks > 0) {
      unknown_avg_size_ = std::max<uint64_t>(1, unknown_bytes / unknown_chunks);
      if (unknown_bytes <= need) {
        unknown_to_evict_ = unknown_chunks;
        planned = unknown_bytes;
      } else {
        const uint64_t estimate = (need + unknown_avg_size_ - 1) / unknown_avg_size_;
        unknown_to_evict_ = estimate > unknown_chunks / burst->unknown_scale
                                ? unknown_chunks
                                : estimate * burst->unknown_scale;
        planned = need;
      }
    }

    for (auto it = lru_.end(); it != lru_.begin() && planned < need;) {
      --it;
      const ChunkId& id = *it;
      if (holds_.contains(id) || pending_.contains(id) || protect.contains(id)) continue;
      auto entry = map_.find(id);
      planned += entry->second.size;
      victims_.emplace(id, entry->second.size);
      known_bytes_ -= entry->second.size;
      map_.erase(entry);
      it = lru_.erase(it);
    }
    // All held or pending, or just put: a round with fewer just put may do better.
    if (victims_.empty() && unknown_to_evict_ == 0) return !protect.empty();
    ++generation_;
  }

  Result<SweepStats> swept = base_->Sweep([this](const ChunkId& id) { return LiveInRound(id); });
  bool exhausted_now = false;
  {
    std::lock_guard lock(mu_);
    // Fewer evictable unknown ids than planned (held, or the estimate was off): the next
    // round takes from the LRU instead.
    if (unknown_to_evict_ > 0 && !burst->unknown_exhausted) {
      burst->unknown_exhausted = exhausted_now = true;
    }
    if (unknown_avg_size_ > 0 && burst->unknown_scale < (uint64_t{1} << 32)) {
      burst->unknown_scale *= 2;
    }
  }
  EndRound(/*eviction=*/true);
  // A failed sweep (I/O) may have removed part of its victims; EndRound accounted for them.
  // The Put that triggered it succeeded regardless, and the next Put over capacity retries.
  if (!swept.ok()) return false;
  // With nothing removed, only a round with fewer ids to spare or fewer unknown ids to count
  // on can do better.
  if (swept->chunks_removed == 0 && protect.empty() && !exhausted_now) return false;
  return base_->Stats().raw_bytes > capacity_;
}

bool BoundedChunkStore::LiveInRound(const ChunkId& id) {
  std::lock_guard lock(mu_);
  if (holds_.contains(id) || pending_.contains(id)) return true;
  if (victims_.contains(id)) return false;
  if (map_.contains(id) || unknown_to_evict_ == 0) return true;
  --unknown_to_evict_;
  victims_.emplace(id, unknown_avg_size_);
  return false;
}

void BoundedChunkStore::EndRound(bool eviction) {
  std::vector<std::pair<ChunkId, uint64_t>> judged;
  {
    std::lock_guard lock(mu_);
    judged.assign(victims_.begin(), victims_.end());
  }
  // Puts and Holds of these ids wait for victims_ to clear, so what Contains says now stays
  // true. A victim the sweep kept anyway (the pack store keeps chunks a Put or Contains saw
  // while it ran) is simply unknown to the LRU from now on.
  std::vector<bool> gone(judged.size());
  for (size_t i = 0; i < judged.size(); ++i) gone[i] = !base_->Contains(judged[i].first);
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < judged.size(); ++i) {
      if (!gone[i]) continue;
      EraseLocked(judged[i].first);
      if (eviction) {
        ++stats_.evictions;
        stats_.evicted_bytes += judged[i].second;
      }
    }
    if (eviction) ++stats_.sweeps;
    victims_.clear();
    unknown_to_evict_ = 0;
    ++generation_;
  }
  round_done_.notify_all();
}

Result<SweepStats> BoundedChunkStore::Sweep(const std::function<bool(const ChunkId&)>& is_live) {
  std::unique_lock evict_lock(evict_mu_);
  {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  Result<SweepStats> swept = base_->Sweep([&](const ChunkId& id) {
    if (is_live(id)) return true;  // outside mu_: it may be slow or call back into the store
    std::lock_guard lock(mu_);
    if (pending_.contains(id)) return true;  // a Put in flight relies on it
    auto it = map_.find(id);
    victims_.emplace(id, it == map_.end() ? 0 : it->second.size);
    return false;
  });
  EndRound(/*eviction=*/false);
  evict_lock.unlock();
  // Puts that went over capacity meanwhile found evict_mu_ taken.
  if (evict_again_.load()) MaybeEvict();
  return swept;
}

}  // namespace weft
