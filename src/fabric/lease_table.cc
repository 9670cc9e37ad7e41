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

// --- LeaseState ---

LeaseState::LeaseState(LeaseTableOptions options, SteadyTime start)
    : options_(options), grace_end_(start + options.start_grace) {}

bool LeaseState::Matches(const std::string& dir, const Affected& affected) const {
  if (affected.dirs.contains(dir)) return true;
  return std::any_of(affected.subtrees.begin(), affected.subtrees.end(),
                     [&](const std::string& root) { return IsAtOrUnder(dir, root); });
}

bool LeaseState::Revoking(const std::string& dir) const {
  if (revoking_dirs_.contains(dir)) return true;
  return std::any_of(revoking_subtrees_.begin(), revoking_subtrees_.end(),
                     [&](const std::string& root) { return IsAtOrUnder(dir, root); });
}

std::chrono::milliseconds LeaseState::Grant(const std::string& spoke, const std::string& dir,
                                            SteadyTime now, std::chrono::milliseconds at_most) {
  if (Revoking(dir) || at_most.count() <= 0) return std::chrono::milliseconds(0);
  const auto length = std::min(options_.lease, at_most);
  spokes_.try_emplace(spoke).first->second.last_poll = now;
  SteadyTime& expiry = leases_[dir][spoke];
  expiry = std::max(expiry, now + length);
  return length;
}

std::chrono::milliseconds LeaseState::Renew(const std::string& spoke, const std::string& dir,
                                            SteadyTime now, std::chrono::milliseconds at_most) {
  auto by_dir = leases_.find(dir);
  if (by_dir == leases_.end()) return std::chrono::milliseconds(0);
  auto held = by_dir->second.find(spoke);
  if (held == by_dir->second.end() || held->second <= now) return std::chrono::milliseconds(0);
  return Grant(spoke, dir, now, at_most);
}

LeaseState::Begun LeaseState::BeginRevoke(const Affected& affected, SteadyTime now) {
  for (const auto& d : affected.dirs) revoking_dirs_.insert(d);
  for (const auto& s : affected.subtrees) revoking_subtrees_.insert(s);
  Begun begun;
  begun.id = next_revocation_++;
  Revocation& r = revocations_[begun.id];
  r.affected = affected;

  // Holders and the latest expiry of what each holds among the affected directories. Leases
  // stay in the table until the revocation completes, so an overlapping one waits for them too.
  std::map<std::string, std::vector<std::string>> held;  // spoke -> affected directories it leases
  for (const auto& [dir, by_spoke] : leases_) {
    if (!Matches(dir, affected)) continue;
    r.matched.push_back(dir);
    for (const auto& [spoke, expiry] : by_spoke) {
      if (expiry <= now) continue;
      SteadyTime& latest = r.holders[spoke];
      latest = std::max(latest, expiry);
      held[spoke].push_back(dir);
    }
  }
  if (r.holders.empty()) {
    Finish(r);
    return begun;
  }
  r.seq = next_seq_++;
  begun.invalidation = Invalidation{r.seq,
                                    {affected.dirs.begin(), affected.dirs.end()},
                                    {affected.subtrees.begin(), affected.subtrees.end()}};
  // Each holder hears only about the directories it leases (any grant on one below a revoked
  // subtree is among them): a spoke never learns names it could not read, such as those of a
  // directory resident at other sites.
  for (const auto& [spoke, expiry] : r.holders) {
    spokes_[spoke].queue.push_back(Invalidation{r.seq, held[spoke], {}});
    begun.holders.push_back(spoke);
  }
  return begun;
}

bool LeaseState::Complete(uint64_t id, SteadyTime now) {
  auto found = revocations_.find(id);
  if (found == revocations_.end()) return true;
  Revocation& r = found->second;
  if (r.complete) return true;
  for (auto it = r.holders.begin(); it != r.holders.end();) {
    auto sp = spokes_.find(it->first);
    const bool acked = sp == spokes_.end() || sp->second.acked >= r.seq;
    if (acked || it->second <= now) {
      r.any_expired |= !acked;
      it = r.holders.erase(it);
    } else {
      ++it;
    }
  }
  if (!r.holders.empty()) return false;
  Finish(r);
  return true;
}

void LeaseState::Finish(Revocation& r) {
  if (r.any_expired) ++expired_waits_;
  // Every holder has dropped its view or lost its lease, and no grant happened meanwhile: the
  // leases are gone. (An overlapping revocation keeps its own copy of the holders.)
  for (const auto& dir : r.matched) leases_.erase(dir);
  r.complete = true;
}

SteadyTime LeaseState::Deadline(uint64_t id) const {
  auto found = revocations_.find(id);
  SteadyTime earliest = SteadyTime::max();
  if (found == revocations_.end()) return earliest;
  for (const auto& [spoke, expiry] : found->second.holders) earliest = std::min(earliest, expiry);
  return earliest;
}

void LeaseState::EndRevoke(uint64_t id) {
  auto found = revocations_.find(id);
  if (found == revocations_.end()) return;
  Revocation& r = found->second;
  // Abandoned before it completed (shutdown): it ends as a completed one would.
  if (!r.complete) Finish(r);
  for (const auto& d : r.affected.dirs) revoking_dirs_.erase(revoking_dirs_.find(d));
  for (const auto& s : r.affected.subtrees) revoking_subtrees_.erase(revoking_subtrees_.find(s));
  revocations_.erase(found);
}

void LeaseState::ForgetIdle(SteadyTime now) {
  // Every grant renews last_poll, so a spoke idle for longer than a lease holds none. Forgetting
  // one that might (forget_after shorter than the lease) would count it as having acknowledged
  // what it never saw.
  const auto idle = std::max<SteadyTime::duration>(options_.forget_after, options_.lease);
  for (auto it = spokes_.begin(); it != spokes_.end();) {
    if (now - it->second.last_poll > idle) {
      for (auto& [dir, by_spoke] : leases_) by_spoke.erase(it->first);
      it = spokes_.erase(it);
    } else {
      ++it;
    }
  }
}

bool LeaseState::Ack(const std::string& spoke, uint64_t ack, SteadyTime now) {
  Spoke& sp = spokes_[spoke];
  sp.last_poll = now;
  if (ack <= sp.acked || ack >= next_seq_) return false;
  sp.acked = ack;
  std::erase_if(sp.queue, [&](const Invalidation& inv) { return inv.seq <= ack; });
  return true;
}

const std::vector<Invalidation>* LeaseState::Pending(const std::string& spoke) const {
  auto it = spokes_.find(spoke);
  return it == spokes_.end() ? nullptr : &it->second.queue;
}

void LeaseState::Forget(const std::string& spoke) {
  spokes_.erase(spoke);
  for (auto& [dir, by_spoke] : leases_) by_spoke.erase(spoke);
}

std::map<std::string, SpokeLeaseStats> LeaseState::Stats(SteadyTime now) const {
  std::map<std::string, SpokeLeaseStats> out;
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

// --- LeaseTable ---

LeaseTable::LeaseTable(LeaseTableOptions options)
    : clock_(options.clock), state_(options, options.clock->SteadyNow()) {}

std::cv_status LeaseTable::WaitUntil(std::unique_lock<std::mutex>& lock, SteadyTime deadline) {
  // Relative, so that a clock other than the system's (a simulation's) sets the deadline.
  return changed_.wait_for(lock, deadline - clock_->SteadyNow());
}

std::chrono::milliseconds LeaseTable::Grant(const std::string& spoke, const std::string& dir,
                                            std::chrono::milliseconds at_most) {
  std::lock_guard lock(mu_);
  if (shutdown_) return std::chrono::milliseconds(0);
  return state_.Grant(spoke, dir, clock_->SteadyNow(), at_most);
}

std::chrono::milliseconds LeaseTable::Renew(const std::string& spoke, const std::string& dir,
                                            std::chrono::milliseconds at_most) {
  std::lock_guard lock(mu_);
  if (shutdown_) return std::chrono::milliseconds(0);
  return state_.Renew(spoke, dir, clock_->SteadyNow(), at_most);
}

LeaseTable::Revocation LeaseTable::Revoke(const Affected& affected) {
  std::unique_lock lock(mu_);
  while (!shutdown_ && clock_->SteadyNow() < state_.grace_end()) {
    WaitUntil(lock, state_.grace_end());
  }
  LeaseState::Begun begun = state_.BeginRevoke(affected, clock_->SteadyNow());
  Revocation guard;
  guard.table_ = this;
  guard.id_ = begun.id;
  if (!begun.holders.empty()) changed_.notify_all();
  while (!shutdown_ && !state_.Complete(begun.id, clock_->SteadyNow())) {
    WaitUntil(lock, state_.Deadline(begun.id));
  }
  return guard;
}

void LeaseTable::EndRevocation(uint64_t id) {
  std::lock_guard lock(mu_);
  state_.EndRevoke(id);
}

LeaseTable::Revocation::Revocation(Revocation&& other) noexcept
    : table_(std::exchange(other.table_, nullptr)), id_(other.id_) {}

LeaseTable::Revocation& LeaseTable::Revocation::operator=(Revocation&& other) noexcept {
  if (this != &other) {
    if (table_ != nullptr) table_->EndRevocation(id_);
    table_ = std::exchange(other.table_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

LeaseTable::Revocation::~Revocation() {
  if (table_ != nullptr) table_->EndRevocation(id_);
}

std::vector<Invalidation> LeaseTable::Poll(const std::string& spoke, uint64_t ack,
                                           std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  const SteadyTime now = clock_->SteadyNow();
  state_.ForgetIdle(now);
  if (state_.Ack(spoke, ack, now)) changed_.notify_all();
  const SteadyTime deadline = now + wait;
  while (!shutdown_) {
    const std::vector<Invalidation>* queue = state_.Pending(spoke);
    if (queue == nullptr) return {};
    if (!queue->empty()) return *queue;
    if (WaitUntil(lock, deadline) == std::cv_status::timeout) break;
  }
  return {};
}

void LeaseTable::Forget(const std::string& spoke) {
  std::lock_guard lock(mu_);
  state_.Forget(spoke);
  changed_.notify_all();
}

std::map<std::string, SpokeLeaseStats> LeaseTable::Stats() {
  std::lock_guard lock(mu_);
  return state_.Stats(clock_->SteadyNow());
}

uint64_t LeaseTable::expired_waits() const {
  std::lock_guard lock(mu_);
  return state_.expired_waits();
}

void LeaseTable::Shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  changed_.notify_all();
}

}  // namespace weft::fabric
