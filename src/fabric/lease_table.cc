#include "fabric/lease_table.h"

#include <algorithm>
#include <utility>

namespace weft::fabric {

std::string ParentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsAtOrUnder(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/');
}

LeaseTable::LeaseTable(LeaseTableOptions options)
    : options_(options), grace_end_(std::chrono::steady_clock::now() + options.start_grace) {}

bool LeaseTable::Matches(const std::string& dir, const Affected& affected) const {
  if (affected.dirs.contains(dir)) return true;
  return std::any_of(affected.subtrees.begin(), affected.subtrees.end(),
                     [&](const std::string& root) { return IsAtOrUnder(dir, root); });
}

bool LeaseTable::RevokingLocked(const std::string& dir) const {
  if (revoking_dirs_.contains(dir)) return true;
  return std::any_of(revoking_subtrees_.begin(), revoking_subtrees_.end(),
                     [&](const std::string& root) { return IsAtOrUnder(dir, root); });
}

std::chrono::milliseconds LeaseTable::Grant(const std::string& spoke, const std::string& dir,
                                            std::chrono::milliseconds at_most) {
  std::lock_guard lock(mu_);
  if (shutdown_ || RevokingLocked(dir) || at_most.count() <= 0) return std::chrono::milliseconds(0);
  const auto length = std::min(options_.lease, at_most);
  SteadyTime now = std::chrono::steady_clock::now();
  spokes_.try_emplace(spoke).first->second.last_poll = now;
  SteadyTime& expiry = leases_[dir][spoke];
  expiry = std::max(expiry, now + length);
  return length;
}

LeaseTable::Revocation LeaseTable::Revoke(const Affected& affected) {
  std::unique_lock lock(mu_);
  while (!shutdown_ && std::chrono::steady_clock::now() < grace_end_) {
    changed_.wait_until(lock, grace_end_);
  }
  for (const auto& d : affected.dirs) revoking_dirs_.insert(d);
  for (const auto& s : affected.subtrees) revoking_subtrees_.insert(s);
  Revocation guard;
  guard.table_ = this;
  guard.affected_ = affected;

  // Holders and the latest expiry of what each holds among the affected directories. Leases
  // stay in the table until the wait ends, so an overlapping revocation waits for them too.
  SteadyTime now = std::chrono::steady_clock::now();
  std::map<std::string, SteadyTime> holders;
  std::vector<std::string> matched;
  for (const auto& [dir, by_spoke] : leases_) {
    if (!Matches(dir, affected)) continue;
    matched.push_back(dir);
    for (const auto& [spoke, expiry] : by_spoke) {
      if (expiry <= now) continue;
      SteadyTime& latest = holders[spoke];
      latest = std::max(latest, expiry);
    }
  }
  if (holders.empty()) {
    for (const auto& dir : matched) leases_.erase(dir);
    return guard;
  }
  const uint64_t seq = next_seq_++;
  Invalidation inv{seq,
                   {affected.dirs.begin(), affected.dirs.end()},
                   {affected.subtrees.begin(), affected.subtrees.end()}};
  for (const auto& [spoke, expiry] : holders) spokes_[spoke].queue.push_back(inv);
  changed_.notify_all();

  bool any_expired = false;
  while (!holders.empty() && !shutdown_) {
    now = std::chrono::steady_clock::now();
    SteadyTime earliest = SteadyTime::max();
    for (auto it = holders.begin(); it != holders.end();) {
      auto sp = spokes_.find(it->first);
      bool acked = sp == spokes_.end() || sp->second.acked >= seq;
      if (acked || it->second <= now) {
        any_expired |= !acked;
        it = holders.erase(it);
      } else {
        earliest = std::min(earliest, it->second);
        ++it;
      }
    }
    if (!holders.empty()) changed_.wait_until(lock, earliest);
  }
  if (any_expired) ++expired_waits_;
  // Every holder has dropped its view or lost its lease, and no grant happened meanwhile: the
  // leases are gone. (An overlapping revocation keeps its own copy of the holders.)
  for (const auto& dir : matched) leases_.erase(dir);
  return guard;
}

void LeaseTable::EndRevocation(const Affected& affected) {
  std::lock_guard lock(mu_);
  for (const auto& d : affected.dirs) revoking_dirs_.erase(revoking_dirs_.find(d));
  for (const auto& s : affected.subtrees) revoking_subtrees_.erase(revoking_subtrees_.find(s));
}

LeaseTable::Revocation::Revocation(Revocation&& other) noexcept
    : table_(std::exchange(other.table_, nullptr)), affected_(std::move(other.affected_)) {}

LeaseTable::Revocation& LeaseTable::Revocation::operator=(Revocation&& other) noexcept {
  if (this != &other) {
    if (table_ != nullptr) table_->EndRevocation(affected_);
    table_ = std::exchange(other.table_, nullptr);
    affected_ = std::move(other.affected_);
  }
  return *this;
}

LeaseTable::Revocation::~Revocation() {
  if (table_ != nullptr) table_->EndRevocation(affected_);
}

std::vector<Invalidation> LeaseTable::Poll(const std::string& spoke, uint64_t ack,
                                           std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  SteadyTime now = std::chrono::steady_clock::now();
  ForgetIdleLocked(now);
  Spoke& sp = spokes_[spoke];
  sp.last_poll = now;
  if (ack > sp.acked && ack < next_seq_) {
    sp.acked = ack;
    auto& q = sp.queue;
    q.erase(
        std::remove_if(q.begin(), q.end(), [&](const Invalidation& inv) { return inv.seq <= ack; }),
        q.end());
    changed_.notify_all();
  }
  SteadyTime deadline = now + wait;
  while (!shutdown_) {
    auto it = spokes_.find(spoke);
    if (it == spokes_.end()) return {};
    if (!it->second.queue.empty()) return it->second.queue;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  return {};
}

void LeaseTable::ForgetIdleLocked(SteadyTime now) {
  for (auto it = spokes_.begin(); it != spokes_.end();) {
    if (now - it->second.last_poll > options_.forget_after) {
      for (auto& [dir, by_spoke] : leases_) by_spoke.erase(it->first);
      it = spokes_.erase(it);
    } else {
      ++it;
    }
  }
}

void LeaseTable::Forget(const std::string& spoke) {
  std::lock_guard lock(mu_);
  spokes_.erase(spoke);
  for (auto& [dir, by_spoke] : leases_) by_spoke.erase(spoke);
  changed_.notify_all();
}

std::map<std::string, SpokeLeaseStats> LeaseTable::Stats() {
  std::lock_guard lock(mu_);
  std::map<std::string, SpokeLeaseStats> out;
  SteadyTime now = std::chrono::steady_clock::now();
  for (const auto& [id, sp] : spokes_) {
    SpokeLeaseStats& s = out[id];
    s.pending = sp.queue.size();
    s.acked = sp.acked;
    s.last_poll = sp.last_poll;
  }
  for (const auto& [dir, by_spoke] : leases_) {
    for (const auto& [spoke, expiry] : by_spoke) {
      if (expiry > now) ++out[spoke].leases;
    }
  }
  return out;
}

uint64_t LeaseTable::expired_waits() const {
  std::lock_guard lock(mu_);
  return expired_waits_;
}

void LeaseTable::Shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  changed_.notify_all();
}

}  // namespace weft::fabric
