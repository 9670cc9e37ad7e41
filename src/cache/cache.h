// Cache: which items a byte-bounded cache holds, with the choice of what to evict delegated to
// a Policy. It stores no bytes: the simulator uses it alone, the spoke maps its decisions onto
// chunks (admit = hold an item's chunks, evict = release them). Not thread-safe; callers lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/item.h"

namespace weft::cache {

// An eviction policy. Every policy sees the same calls for the same cached set, so a regret
// arbiter can run several policies over one set (LeCaR) and follow whichever regrets least.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // Every demand read, before the cache acts on it; `hit` says whether the cache holds it.
  virtual void OnAccess(const Request& r, bool hit) = 0;
  // r.item entered the cache (a demand miss admitted, or a prefetch when r.prefetch).
  virtual void OnInsert(const Request& r) = 0;
  // `key` left the cache: chosen by this policy's Victim, by another policy's (under an
  // arbiter), or erased by the owner.
  virtual void OnRemove(Key key) = 0;
  // The cache needs room for `incoming`, which it does not hold. Returns a cached key to evict,
  // or nullopt to leave `incoming` out ("bypass") instead. Called until there is room, with
  // OnRemove(victim) in between.
  virtual std::optional<Key> Victim(const Request& incoming) = 0;
  // A job declared the items it reads next (a sampler's epoch order). A policy that knows
  // future reads may use it; the default ignores it.
  virtual void OnHint(const Hint& /*hint*/) {}
  // One line of the policy's state for stats (an arbiter's weights, ARC's target split).
  virtual std::string Describe() const { return {}; }
};

enum class Outcome { kHit, kAdmitted, kBypassed };

class Cache {
 public:
  Cache(uint64_t capacity_bytes, std::unique_ptr<Policy> policy);

  // A demand read: a hit, or a miss that the policy admits (appending what it evicted to
  // `evicted`) or bypasses. An item larger than the capacity is always bypassed.
  Outcome Read(const Request& r, std::vector<Key>* evicted);
  // A prefetched item arrived; true if admitted. Not a read: no hit, no OnAccess.
  bool Insert(const Request& r, std::vector<Key>* evicted);
  // A prefetched item arrived and is admitted only if it fits without evicting anything (a
  // cold cache's free room); true if admitted.
  bool InsertIfRoom(const Request& r);
  // The item is gone (its file changed at the hub, or the owner dropped it).
  void Erase(Key key);

  bool Contains(Key key) const { return items_.count(key) != 0; }
  uint64_t used_bytes() const { return used_; }
  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t free_bytes() const { return capacity_ - used_; }
  size_t size() const { return items_.size(); }
  Policy& policy() { return *policy_; }
  const Policy& policy() const { return *policy_; }

 private:
  bool Admit(const Request& r, std::vector<Key>* evicted);

  const uint64_t capacity_;
  std::unique_ptr<Policy> policy_;
  std::unordered_map<Key, uint64_t> items_;  // key -> size
  uint64_t used_ = 0;
};

// The policies by name: "lru", "arc", "sieve", "s3fifo", "pin" (CoorDL's MinIO: admit until
// full, never evict), "epoch" (epoch-aware next-use eviction), "neural" (a regret arbiter over
// "epoch" and "s3fifo"), and "belady" (offline MIN: needs Request::next_use). `seed` drives the
// arbiter's random choices, so runs repeat. Error (nullptr and *error set) for an unknown name.
std::unique_ptr<Policy> MakePolicy(const std::string& name, uint64_t capacity_bytes,
                                   uint64_t seed = 1, std::string* error = nullptr);
// The names MakePolicy accepts, online ones first.
const std::vector<std::string>& PolicyNames();

}  // namespace weft::cache
