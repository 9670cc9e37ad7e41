// MetaCache: a spoke's metadata cache, usable only under directory leases from its hub.
//
// Entries live under a lease key (a directory, or its snapshot form). An answer is cached
// only if the hub granted a lease with it, and only if no invalidation of its key arrived
// between sending the request (Begin) and installing the answer: such an answer may predate a
// mutation the spoke has already acknowledged. A lease counts from when the request was
// sent, minus a tenth for clock-rate differences, so it ends here before it ends at the hub.
// When a key's lease has run out, everything cached under it is dropped before anything new
// is installed. Time is passed in, so simulations can drive it. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fabric/lease_table.h"
#include "vfs/volume.h"

namespace weft::fabric {

// What the hub said about one path: its info and (files) chunks, or an error about the path
// itself (NotFound is cached like any answer).
struct CachedLookup {
  Status status;
  FileInfo info;
  std::vector<ChunkRef> chunks;
};

class MetaCache {
 public:
  // Taken before asking the hub about `key`.
  struct Ticket {
    std::string key;
    uint64_t generation = 0;
    SteadyTime sent{};
  };

  std::optional<CachedLookup> FindLookup(const std::string& key, const std::string& path,
                                         SteadyTime now);
  // What a stat needs: a lookup, else the info a listing of the directory `key` gave (no
  // chunks), else NotFound when a listing of it was whole and did not name `path`.
  std::optional<CachedLookup> FindForStat(const std::string& key, const std::string& path,
                                          SteadyTime now);
  std::optional<ReadDirPage> FindPage(const std::string& key, const std::string& page,
                                      SteadyTime now);

  // What was cached under `key` whatever its lease (kept until an invalidation or a newer
  // lease replaces it): only for a spoke told to serve stale metadata when the hub is gone.
  std::optional<CachedLookup> FindExpiredLookup(const std::string& key, const std::string& path);
  std::optional<ReadDirPage> FindExpiredPage(const std::string& key, const std::string& page);

  Ticket Begin(const std::string& key, SteadyTime now);
  // Cache an answer that came with a lease of `lease_ms` (0 = none), at time `now`. False
  // when not cached.
  bool InstallLookup(const Ticket& ticket, int64_t lease_ms, SteadyTime now,
                     const std::string& path, CachedLookup lookup);
  bool InstallPage(const Ticket& ticket, int64_t lease_ms, SteadyTime now, const std::string& page,
                   ReadDirPage listing);
  // The infos of a page of directory `dir` (the ticket's key) for FindForStat; `whole` when
  // the page holds every entry of the directory.
  bool InstallListed(const Ticket& ticket, int64_t lease_ms, SteadyTime now, const std::string& dir,
                     const ReadDirPage& listing, bool whole);

  // A whole directory (the ticket's key) as a `dir` answer gave it: each entry with whether
  // it is complete (not a file, or a file with its chunk list). Complete entries answer
  // FindLookup; all answer FindForStat, where a path not among them is NotFound unless
  // `withheld` (the hub left some out).
  bool InstallDir(const Ticket& ticket, int64_t lease_ms, SteadyTime now,
                  const std::vector<std::pair<const CachedLookup*, bool>>& entries, bool withheld);

  // Directories worth renewing at `now`: their lease still runs but has under half its length
  // left, and something was found under them within the last kInUseFor (or lease, if longer).
  std::vector<std::string> Renewable(SteadyTime now);
  // How long a directory counts as in use after its last read: long enough to span what
  // training does between epochs (an evaluation, a checkpoint: minutes), so the next epoch
  // finds its metadata still leased instead of revalidating it. Renewing costs one batched
  // round trip per half lease for all of them.
  static constexpr std::chrono::seconds kInUseFor{600};
  // The hub renewed `ticket.key`'s lease for `lease_ms`: keeps its entries for that long, if
  // the lease had not lapsed and no invalidation of the key arrived since the ticket. False
  // otherwise (nothing changes).
  bool Renew(const Ticket& ticket, int64_t lease_ms, SteadyTime now);

  // Drops what an invalidation covers; answers in flight for it will not be installed.
  void Invalidate(const Affected& affected);
  // Drops everything (the hub forgot this spoke's leases).
  void Clear();

  // For a chaining spoke (UpstreamLeases): the invalidation state of `key`, and how long its
  // lease still runs if that state is unchanged.
  uint64_t Epoch(const std::string& key);
  std::chrono::milliseconds Remaining(const std::string& key, uint64_t epoch, SteadyTime now);

 private:
  struct Dir {
    SteadyTime expiry{};
    std::chrono::milliseconds lease{0};           // the length of the last grant
    mutable SteadyTime last_used{};               // when something was last found under it
    mutable bool in_use = false;                  // listed in in_use_
    std::map<std::string, CachedLookup> lookups;  // by path
    std::map<std::string, ReadDirPage> pages;
    std::map<std::string, FileInfo> listed;  // by path: infos from listings
    bool whole = false;                      // `listed` holds every entry
  };
  uint64_t GenerationLocked(const std::string& key) const;
  // The entries under `key`; with `now`, only while the lease runs. Null if none.
  const Dir* DirLocked(const std::string& key, std::optional<SteadyTime> now) const;
  // The entry `name` of `table` under `key`; with `now`, only while the lease runs.
  template <typename T>
  std::optional<T> Find(std::map<std::string, T> Dir::*table, const std::string& key,
                        const std::string& name, std::optional<SteadyTime> now);
  Dir* InstallLocked(const Ticket& ticket, int64_t lease_ms, SteadyTime now);

  std::mutex mu_;
  std::unordered_map<std::string, Dir> dirs_;
  // Keys of directories something was found under within their last lease length (a
  // superset: Renewable prunes it), so renewal never walks every cached directory.
  mutable std::unordered_set<std::string> in_use_;
  // Bumped by each invalidation of a key, and (subtree_gen_) by each subtree invalidation.
  std::unordered_map<std::string, uint64_t> key_gen_;
  uint64_t subtree_gen_ = 0;
};

}  // namespace weft::fabric
