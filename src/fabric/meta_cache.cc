#include "fabric/meta_cache.h"

#include <algorithm>

#include "vfs/path.h"

namespace weft::fabric {

uint64_t MetaCache::GenerationLocked(const std::string& key) const {
  auto it = key_gen_.find(key);
  // Key invalidations in the high half, subtree invalidations in the low: either changes it.
  return ((it == key_gen_.end() ? 0 : it->second) << 32) ^ (subtree_gen_ & 0xffffffffu);
}

const MetaCache::Dir* MetaCache::DirLocked(const std::string& key,
                                           std::optional<SteadyTime> now) const {
  auto it = dirs_.find(key);
  if (it == dirs_.end() || (now && it->second.expiry <= *now)) return nullptr;
  if (now) {
    const Dir& d = it->second;
    d.last_used = std::max(d.last_used, *now);
    if (!d.in_use) {
      d.in_use = true;
      in_use_.insert(key);
    }
  }
  return &it->second;
}

template <typename T>
std::optional<T> MetaCache::Find(std::map<std::string, T> Dir::*table, const std::string& key,
                                 const std::string& name, std::optional<SteadyTime> now) {
  std::lock_guard lock(mu_);
  const Dir* d = DirLocked(key, now);
  if (d == nullptr) return std::nullopt;
  const std::map<std::string, T>& entries = d->*table;
  auto hit = entries.find(name);
  if (hit == entries.end()) return std::nullopt;
  return hit->second;
}

std::optional<CachedLookup> MetaCache::FindLookup(const std::string& key, const std::string& path,
                                                  SteadyTime now) {
  return Find(&Dir::lookups, key, path, now);
}

std::optional<CachedLookup> MetaCache::FindForStat(const std::string& key, const std::string& path,
                                                   SteadyTime now) {
  std::lock_guard lock(mu_);
  const Dir* d = DirLocked(key, now);
  if (d == nullptr) return std::nullopt;
  if (auto hit = d->lookups.find(path); hit != d->lookups.end()) return hit->second;
  CachedLookup answer;
  if (auto hit = d->listed.find(path); hit != d->listed.end()) {
    answer.info = hit->second;
  } else if (d->whole) {
    answer.status = NotFound(path + ": no such file or directory");
  } else {
    return std::nullopt;
  }
  return answer;
}

std::optional<ReadDirPage> MetaCache::FindPage(const std::string& key, const std::string& page,
                                               SteadyTime now) {
  return Find(&Dir::pages, key, page, now);
}

std::optional<CachedLookup> MetaCache::FindExpiredLookup(const std::string& key,
                                                         const std::string& path) {
  return Find(&Dir::lookups, key, path, std::nullopt);
}

std::optional<ReadDirPage> MetaCache::FindExpiredPage(const std::string& key,
                                                      const std::string& page) {
  return Find(&Dir::pages, key, page, std::nullopt);
}

MetaCache::Ticket MetaCache::Begin(const std::string& key, SteadyTime now) {
  std::lock_guard lock(mu_);
  return Ticket{key, GenerationLocked(key), now};
}

MetaCache::Dir* MetaCache::InstallLocked(const Ticket& ticket, int64_t lease_ms, SteadyTime now) {
  if (lease_ms <= 0 || GenerationLocked(ticket.key) != ticket.generation) return nullptr;
  const auto lease = std::chrono::milliseconds(lease_ms);
  const SteadyTime expiry = ticket.sent + lease - lease / 10;
  Dir& d = dirs_[ticket.key];
  // Entries are safe only while the lease they came with has run without a gap; once it has
  // ended here, a mutation may have committed at the hub without asking this spoke.
  if (d.expiry <= now) d = Dir{};
  // At the hub a grant only ever extends a lease, so the entries keep their protection.
  d.expiry = std::max(d.expiry, expiry);
  d.lease = lease;
  return &d;
}

std::vector<std::string> MetaCache::Renewable(SteadyTime now) {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  // Only directories found under lately are looked at, not every directory cached.
  for (auto key = in_use_.begin(); key != in_use_.end();) {
    auto it = dirs_.find(*key);
    if (it == dirs_.end() || it->second.expiry <= now ||
        it->second.last_used + std::max<std::chrono::nanoseconds>(it->second.lease, kInUseFor) <
            now) {
      if (it != dirs_.end()) it->second.in_use = false;
      key = in_use_.erase(key);
      continue;
    }
    if (it->second.expiry - now < it->second.lease / 2) out.push_back(*key);
    ++key;
  }
  return out;
}

bool MetaCache::Renew(const Ticket& ticket, int64_t lease_ms, SteadyTime now) {
  std::lock_guard lock(mu_);
  auto it = dirs_.find(ticket.key);
  // A lease that lapsed before the renewal was asked for may have let a change through
  // unannounced: what it protected is not kept (InstallLocked would drop it).
  if (it == dirs_.end() || it->second.expiry <= ticket.sent) return false;
  return InstallLocked(ticket, lease_ms, now) != nullptr;
}

bool MetaCache::InstallLookup(const Ticket& ticket, int64_t lease_ms, SteadyTime now,
                              const std::string& path, CachedLookup lookup) {
  std::lock_guard lock(mu_);
  Dir* d = InstallLocked(ticket, lease_ms, now);
  if (d == nullptr) return false;
  d->lookups[path] = std::move(lookup);
  return true;
}

bool MetaCache::InstallPage(const Ticket& ticket, int64_t lease_ms, SteadyTime now,
                            const std::string& page, ReadDirPage listing) {
  std::lock_guard lock(mu_);
  Dir* d = InstallLocked(ticket, lease_ms, now);
  if (d == nullptr) return false;
  d->pages[page] = std::move(listing);
  return true;
}

bool MetaCache::InstallListed(const Ticket& ticket, int64_t lease_ms, SteadyTime now,
                              const std::string& dir, const ReadDirPage& listing, bool whole) {
  std::lock_guard lock(mu_);
  Dir* d = InstallLocked(ticket, lease_ms, now);
  if (d == nullptr) return false;
  bool all_info = true;
  for (const DirEntry& e : listing.entries) {
    if (!e.info) {
      all_info = false;
      continue;
    }
    std::string path = ChildPath(dir, e.name);
    FileInfo& info = d->listed[path];
    info = *e.info;
    info.path = std::move(path);
  }
  d->whole = d->whole || (whole && all_info);
  return true;
}

bool MetaCache::InstallDir(const Ticket& ticket, int64_t lease_ms, SteadyTime now,
                           const std::vector<std::pair<const CachedLookup*, bool>>& entries,
                           bool withheld) {
  std::lock_guard lock(mu_);
  Dir* d = InstallLocked(ticket, lease_ms, now);
  if (d == nullptr) return false;
  for (const auto& [lookup, complete] : entries) {
    if (complete) d->lookups[lookup->info.path] = *lookup;
    d->listed[lookup->info.path] = lookup->info;
  }
  d->whole = d->whole || !withheld;
  return true;
}

void MetaCache::Invalidate(const Affected& affected) {
  std::lock_guard lock(mu_);
  for (const std::string& dir : affected.dirs) {
    dirs_.erase(dir);
    ++key_gen_[dir];
  }
  if (affected.subtrees.empty()) return;
  ++subtree_gen_;
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    bool under = std::any_of(affected.subtrees.begin(), affected.subtrees.end(),
                             [&](const std::string& root) { return IsAtOrUnder(it->first, root); });
    it = under ? dirs_.erase(it) : std::next(it);
  }
}

void MetaCache::Clear() {
  std::lock_guard lock(mu_);
  dirs_.clear();
  ++subtree_gen_;
}

uint64_t MetaCache::Epoch(const std::string& key) {
  std::lock_guard lock(mu_);
  return GenerationLocked(key);
}

std::chrono::milliseconds MetaCache::Remaining(const std::string& key, uint64_t epoch,
                                               SteadyTime now) {
  std::lock_guard lock(mu_);
  if (GenerationLocked(key) != epoch) return std::chrono::milliseconds(0);
  auto it = dirs_.find(key);
  if (it == dirs_.end() || it->second.expiry <= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(it->second.expiry - now);
}

}  // namespace weft::fabric
