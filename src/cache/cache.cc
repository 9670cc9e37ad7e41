#include "cache/cache.h"

#include <cassert>
#include <utility>

namespace weft::cache {

Cache::Cache(uint64_t capacity_bytes, std::unique_ptr<Policy> policy)
    : capacity_(capacity_bytes), policy_(std::move(policy)) {
  assert(policy_ != nullptr);
}

Outcome Cache::Read(const Request& r, std::vector<Key>* evicted) {
  const bool hit = items_.count(r.item.key) != 0;
  policy_->OnAccess(r, hit);
  if (hit) return Outcome::kHit;
  return Admit(r, evicted) ? Outcome::kAdmitted : Outcome::kBypassed;
}

bool Cache::Insert(const Request& r, std::vector<Key>* evicted) {
  if (Contains(r.item.key)) return false;
  // Policies tell arrivals from reads by this flag (an epoch policy only swaps for a prefetch),
  // so it must hold whatever the caller filled in.
  Request arrival = r;
  arrival.prefetch = true;
  return Admit(arrival, evicted);
}

bool Cache::InsertIfRoom(const Request& r) {
  if (r.item.size > free_bytes()) return false;
  std::vector<Key> none;  // there is room: Admit evicts nothing
  return Insert(r, &none);
}

void Cache::Erase(Key key) {
  auto it = items_.find(key);
  if (it == items_.end()) return;
  used_ -= it->second;
  items_.erase(it);
  policy_->OnRemove(key);
}

bool Cache::Admit(const Request& r, std::vector<Key>* evicted) {
  const uint64_t size = r.item.size;
  if (size > capacity_) return false;
  while (used_ + size > capacity_) {
    const std::optional<Key> victim = policy_->Victim(r);
    if (!victim.has_value()) return false;
    auto it = items_.find(*victim);
    if (it == items_.end()) {
      // A policy bug, not bad input: fail loudly in tests, and in production keep the cache
      // consistent by leaving the item out rather than evicting something unknown.
      assert(false && "policy returned an uncached victim");
      return false;
    }
    used_ -= it->second;
    items_.erase(it);
    policy_->OnRemove(*victim);
    if (evicted != nullptr) evicted->push_back(*victim);
  }
  items_.emplace(r.item.key, size);
  used_ += size;
  policy_->OnInsert(r);
  return true;
}

}  // namespace weft::cache
