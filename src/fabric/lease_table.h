// LeaseTable: the hub side of metadata coherence between a hub and its spokes (DESIGN.md §4).
//
// A spoke may answer from its metadata cache for a directory only while it holds a lease on
// that directory. Before the hub commits a mutation it revokes the leases on every directory
// the mutation changes: new grants on those directories stop, each holder is sent an
// invalidation and the mutation waits until the holder acknowledged it or its lease expired.
// Only then does it commit; the revocation ends when the commit returns. So once a mutation
// has committed, no spoke can answer from a view older than it: reads are linearizable.
//
// Invalidations travel to a spoke in the answer to its long poll (Poll); a later poll carrying
// `ack` acknowledges everything up to it. A spoke that stops polling simply lets its leases
// expire. Spokes compute their own expiry from the moment they *sent* the request (see
// PortalVolume), which is never later than the hub's, so a lost message only costs time.
//
// Directory keys are normalised absolute paths of the volume the table guards ("/", "/a/b").
// LeaseTable is thread-safe; LeaseState, the logic it wraps, is single-threaded with time passed
// in, for simulations.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"

namespace weft::fabric {

using SteadyTime = std::chrono::steady_clock::time_point;

// One invalidation: the spoke drops what it cached about these directories (and, for
// `subtrees`, about every directory below them).
struct Invalidation {
  uint64_t seq = 0;
  std::vector<std::string> dirs;
  std::vector<std::string> subtrees;
};

// What a mutation changes: the directories whose listing or entries change, and subtrees a
// rename or rmdir moves or removes as a whole.
struct Affected {
  std::set<std::string> dirs;
  std::set<std::string> subtrees;
};

struct LeaseTableOptions {
  std::chrono::milliseconds lease{5000};
  // Revocations wait until this long after construction: a restarted hub does not know which
  // leases its spokes still hold from before, so it lets them all run out first.
  std::chrono::milliseconds start_grace{0};
  // A spoke that has not polled for this long is forgotten; never before its leases expired.
  std::chrono::milliseconds forget_after{120'000};
  // LeaseTable's time (LeaseState is given times by its caller).
  Clock* clock = SystemClock::Default();
};

struct SpokeLeaseStats {
  uint64_t leases = 0;   // directories currently leased
  uint64_t pending = 0;  // invalidations not yet acknowledged
  uint64_t acked = 0;    // highest acknowledged invalidation
  SteadyTime last_poll{};
};

// LeaseState: LeaseTable's bookkeeping as a single-threaded state machine with time passed in,
// so that a simulation can drive the protocol without threads or a real clock
// (lease_sim_test.cc). LeaseTable is this state behind a mutex, with the waiting done for it.
//
// A revocation runs BeginRevoke -> (Complete false until every holder acknowledged or its lease
// ended) -> commit the mutation -> EndRevoke. Grants on the affected directories stop from
// BeginRevoke to EndRevoke. Not thread-safe.
class LeaseState {
 public:
  LeaseState(LeaseTableOptions options, SteadyTime start);

  std::chrono::milliseconds lease_length() const { return options_.lease; }
  // No revocation may begin before this (LeaseTableOptions::start_grace).
  SteadyTime grace_end() const { return grace_end_; }

  // As LeaseTable::Grant, at time `now`.
  std::chrono::milliseconds Grant(
      const std::string& spoke, const std::string& dir, SteadyTime now,
      std::chrono::milliseconds at_most = std::chrono::milliseconds::max());

  // As LeaseTable::Renew, at time `now`.
  std::chrono::milliseconds Renew(
      const std::string& spoke, const std::string& dir, SteadyTime now,
      std::chrono::milliseconds at_most = std::chrono::milliseconds::max());

  struct Begun {
    uint64_t id = 0;  // names the revocation to Complete, Deadline and EndRevoke
    // The whole revocation (for traces); each holder is sent only the directories it leases.
    // seq 0 when nobody held a lease: nothing to send.
    Invalidation invalidation;
    std::vector<std::string> holders;  // the spokes it was queued for, to be woken
  };
  // Stops grants on the affected directories and queues the invalidation for every spoke that
  // holds an unexpired lease on one of them. Call no earlier than grace_end().
  Begun BeginRevoke(const Affected& affected, SteadyTime now);
  // Whether revocation `id` may commit at `now`: every holder acknowledged the invalidation,
  // was forgotten, or saw its lease end. Once true it stays true; the affected leases are gone.
  bool Complete(uint64_t id, SteadyTime now);
  // When Complete should be asked again if no acknowledgement arrives: the earliest lease end
  // among the holders still waited for as of the last Complete (max() when none or unknown).
  SteadyTime Deadline(uint64_t id) const;
  // The mutation committed (or was abandoned): grants on its directories resume.
  void EndRevoke(uint64_t id);

  // Drops spokes that have neither polled nor been granted a lease for forget_after (and for
  // at least a lease length, so that none of their leases is still running), with their leases.
  void ForgetIdle(SteadyTime now);
  // A poll from `spoke` at `now` acknowledging invalidations up to `ack`. Returns whether that
  // acknowledged anything new (revocations waiting on it should check Complete again).
  bool Ack(const std::string& spoke, uint64_t ack, SteadyTime now);
  // The invalidations sent to `spoke` and not yet acknowledged, seq ascending; null when the
  // spoke is unknown (forgotten).
  const std::vector<Invalidation>* Pending(const std::string& spoke) const;
  // Drops a spoke and its leases.
  void Forget(const std::string& spoke);

  std::map<std::string, SpokeLeaseStats> Stats(SteadyTime now) const;
  uint64_t expired_waits() const { return expired_waits_; }

 private:
  struct Spoke {
    std::vector<Invalidation> queue;  // not yet acknowledged, seq ascending
    uint64_t acked = 0;
    SteadyTime last_poll{};
  };
  struct Revocation {
    Affected affected;
    uint64_t seq = 0;
    std::map<std::string, SteadyTime> holders;  // still waited for -> latest expiry held
    std::vector<std::string> matched;           // leased directories it covers
    bool any_expired = false;                   // a holder was let go by expiry, not ack
    bool complete = false;
  };
  bool Matches(const std::string& dir, const Affected& affected) const;
  bool Revoking(const std::string& dir) const;
  void Finish(Revocation& r);

  const LeaseTableOptions options_;
  const SteadyTime grace_end_;
  // dir -> spoke -> expiry
  std::map<std::string, std::map<std::string, SteadyTime>> leases_;
  std::map<std::string, Spoke> spokes_;
  std::map<uint64_t, Revocation> revocations_;
  std::multiset<std::string> revoking_dirs_;
  std::multiset<std::string> revoking_subtrees_;
  uint64_t next_seq_ = 1;
  uint64_t next_revocation_ = 1;
  uint64_t expired_waits_ = 0;
};

class LeaseTable {
 public:
  explicit LeaseTable(LeaseTableOptions options = {});

  std::chrono::milliseconds lease_length() const { return state_.lease_length(); }

  // Records a lease for `spoke` on `dir` from now, of the table's length or `at_most` if
  // shorter. Returns its length, or zero when `dir` is being revoked right now (the spoke may
  // use the answer once but must not cache it).
  std::chrono::milliseconds Grant(
      const std::string& spoke, const std::string& dir,
      std::chrono::milliseconds at_most = std::chrono::milliseconds::max());

  // Extends a lease `spoke` still holds on `dir` (unexpired, and `dir` not being revoked) as
  // Grant would; zero when it holds none. While a lease runs no mutation of its directory
  // commits unannounced, so a spoke whose lease was renewed without a lapse, and that heard
  // no invalidation meanwhile, may keep what it cached under it.
  std::chrono::milliseconds Renew(
      const std::string& spoke, const std::string& dir,
      std::chrono::milliseconds at_most = std::chrono::milliseconds::max());

  // Blocks until every holder of a lease on an affected directory acknowledged the
  // invalidation or its lease expired, and keeps grants on those directories stopped until the
  // returned guard is destroyed: commit while holding it.
  class Revocation {
   public:
    Revocation() = default;
    Revocation(Revocation&& other) noexcept;
    Revocation& operator=(Revocation&& other) noexcept;
    ~Revocation();

   private:
    friend class LeaseTable;
    LeaseTable* table_ = nullptr;
    uint64_t id_ = 0;
  };
  Revocation Revoke(const Affected& affected);

  // A spoke's long poll: acknowledges invalidations up to `ack`, then returns those after it,
  // waiting up to `wait` for one to arrive.
  std::vector<Invalidation> Poll(const std::string& spoke, uint64_t ack,
                                 std::chrono::milliseconds wait);

  // Drops a spoke and its leases (it detached).
  void Forget(const std::string& spoke);

  std::map<std::string, SpokeLeaseStats> Stats();
  // Revocations that ended by lease expiry rather than acknowledgement (a spoke unreachable).
  uint64_t expired_waits() const;

  // Wakes every waiting Poll and Revoke (server shutdown): polls return at once.
  void Shutdown();

 private:
  void EndRevocation(uint64_t id);
  // Waits on changed_ until `deadline` of clock_'s time (or a notify).
  std::cv_status WaitUntil(std::unique_lock<std::mutex>& lock, SteadyTime deadline);

  Clock* const clock_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  LeaseState state_;       // GUARDED_BY(mu_), but for its constant options
  bool shutdown_ = false;  // GUARDED_BY(mu_)
};

// When the volume a HubService serves is itself a spoke's PortalVolume (spokes chain), a lease
// it grants must neither outlive its own lease from upstream nor rest on an answer that an
// upstream invalidation has already overtaken.
class UpstreamLeases {
 public:
  virtual ~UpstreamLeases() = default;
  // The invalidation state of lease key `dir` now (before reading).
  virtual uint64_t Epoch(const std::string& dir) = 0;
  // How long this node's own lease on `dir` still runs if nothing invalidated it since
  // `epoch`; zero otherwise.
  virtual std::chrono::milliseconds Remaining(const std::string& dir, uint64_t epoch) = 0;
};

// "/a/b/c" -> "/a/b"; "/a" -> "/"; "/" -> "/".
std::string ParentDir(const std::string& path);
// Whether `path` is `root` or below it.
bool IsAtOrUnder(const std::string& path, const std::string& root);

}  // namespace weft::fabric
