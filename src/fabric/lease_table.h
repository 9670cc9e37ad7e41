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
// Thread-safe.
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
  // A spoke that has not polled for this long is forgotten (its leases expired long ago).
  std::chrono::milliseconds forget_after{120'000};
};

struct SpokeLeaseStats {
  uint64_t leases = 0;   // directories currently leased
  uint64_t pending = 0;  // invalidations not yet acknowledged
  uint64_t acked = 0;    // highest acknowledged invalidation
  SteadyTime last_poll{};
};

class LeaseTable {
 public:
  explicit LeaseTable(LeaseTableOptions options = {});

  std::chrono::milliseconds lease_length() const { return options_.lease; }

  // Records a lease for `spoke` on `dir` from now, of the table's length or `at_most` if
  // shorter. Returns its length, or zero when `dir` is being revoked right now (the spoke may
  // use the answer once but must not cache it).
  std::chrono::milliseconds Grant(
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
    Affected affected_;
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
  struct Spoke {
    std::vector<Invalidation> queue;  // not yet acknowledged, seq ascending
    uint64_t acked = 0;
    SteadyTime last_poll{};
  };
  bool Matches(const std::string& dir, const Affected& affected) const;
  bool RevokingLocked(const std::string& dir) const;
  void EndRevocation(const Affected& affected);
  void ForgetIdleLocked(SteadyTime now);

  const LeaseTableOptions options_;
  const SteadyTime grace_end_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  // dir -> spoke -> expiry
  std::map<std::string, std::map<std::string, SteadyTime>> leases_;
  std::map<std::string, Spoke> spokes_;
  std::multiset<std::string> revoking_dirs_;
  std::multiset<std::string> revoking_subtrees_;
  uint64_t next_seq_ = 1;
  uint64_t expired_waits_ = 0;
  bool shutdown_ = false;
};

// "/a/b/c" -> "/a/b"; "/a" -> "/"; "/" -> "/".
std::string ParentDir(const std::string& path);
// Whether `path` is `root` or below it.
bool IsAtOrUnder(const std::string& path, const std::string& root);

}  // namespace weft::fabric
