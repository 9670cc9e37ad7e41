// SpokeMetadata: the metadata half of a spoke. Answers what the hub says about paths from
// MetaCache while its directory leases hold, asks the hub otherwise (one path, a batch of up to
// kMaxLookupBatch, a directory listing, a pinned snapshot's whole manifest), and runs the two
// loops that keep the cache coherent: the long poll that applies the hub's invalidations
// before acknowledging them, and the renewal of leases on directories in use. Paths here are
// hub paths, except ResolveAll's and Resolve's, which map local ones. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "fabric/hub_client.h"
#include "fabric/internal/portal_paths.h"
#include "fabric/internal/spoke_chunks.h"
#include "fabric/meta_cache.h"

namespace weft::fabric {

struct SpokeMetadataOptions {
  // Answer from expired metadata (marked stale) when the hub cannot be reached.
  bool stale_ok = false;
  // A lookup for a read brings the bytes of a file up to this size (0: never).
  uint64_t inline_read_bytes = 0;
  std::chrono::milliseconds poll_wait{5'000};
  Clock* clock = SystemClock::Default();
};

struct SpokeMetadataStats {
  uint64_t hits = 0;    // answered from the leased cache
  uint64_t misses = 0;  // asked the hub
  uint64_t invalidations = 0;
  uint64_t renewals = 0;
  uint64_t stale_answers = 0;
  uint64_t dirs_whole = 0;    // `dir` answers that listed a directory whole
  uint64_t dirs_changed = 0;  // `dir` answers that named only the changes since the last one
};

// A snapshot's whole subtree, fetched in one `manifest` round trip. Its content never
// changes; only the binding of its name to a sequence is leased (deleting or re-creating the
// snapshot revokes it), so reads at a pinned snapshot cost no round trip per file.
struct SnapshotView {
  uint64_t sequence = 0;
  std::string root;                             // the hub directory it covers
  std::map<std::string, CachedLookup> entries;  // by path below the root ("" = the root)
};

// A directory as a `dir` answer last gave it whole, at hub sequence `sequence`: the base the
// next revalidation asks only the changes since for. Kept across lease expiry and
// invalidation (it never answers a read itself).
struct DirManifest {
  uint64_t sequence = 0;
  // By name: the entry, and whether it is complete (not a file, or a file with its chunks).
  std::map<std::string, std::pair<CachedLookup, bool>> entries;
};

// A read target: what the hub says about it, and the hub path chunks are fetched by.
struct Resolved {
  CachedLookup lookup;
  std::string fetch_path;
  std::shared_ptr<const SnapshotView> view;  // set for reads at a pinned snapshot
  std::string rel;                           // below view->root
};

class SpokeMetadata {
 public:
  SpokeMetadata(HubClient* hub, SpokeChunks* chunks, const PortalPaths* paths,
                SpokeMetadataOptions options)
      : hub_(hub), chunks_(chunks), paths_(paths), options_(std::move(options)) {}
  ~SpokeMetadata() { Stop(); }

  // Starts the invalidation poll and lease renewal; Stop ends them (idempotent).
  void Start();
  void Stop();
  // Called with the local directories an invalidation covers, before it is acknowledged.
  void SetInvalidationHook(std::function<void(const Affected&)> hook);

  // One path (`for_read`: with a small file's bytes, stored into the spoke's chunks).
  Result<CachedLookup> Lookup(const std::string& hub_path,
                              const std::optional<std::string>& snapshot, bool for_read = false);
  Result<ReadDirPage> List(const std::string& hub_path, const ReadDirOptions& opts);
  // A live path's stat from a listing of its directory (listed now if need be): an epoch over
  // a dataset then costs one round trip per directory, not per file. nullopt when a listing
  // cannot tell (a directory larger than one page): look the path up.
  Result<std::optional<CachedLookup>> StatFromListing(const std::string& hub_path);

  // Local paths: leased answers where cached, batched lookups for the rest.
  std::vector<Result<Resolved>> ResolveAll(const std::vector<std::string>& paths);
  // A mapped path, read live or at `snapshot` (a pinned view where one can be had).
  Result<Resolved> Resolve(const Mapped& m, const std::optional<std::string>& snapshot,
                           bool for_read = false);
  // A directory of a pinned snapshot, paged like ReadDir.
  static ReadDirPage ListPinned(const SnapshotView& view, const std::string& rel,
                                const ReadDirOptions& opts);

  // What this spoke knew about these hub directories may be stale now.
  void Invalidate(const Affected& affected) { cache_.Invalidate(affected); }
  // Everything (the hub forgot this spoke's leases, and may be another hub now).
  void Clear();
  // For a chained spoke's leases, by hub lease key (MetaCache::Epoch, Remaining).
  uint64_t Epoch(const std::string& key) { return cache_.Epoch(key); }
  std::chrono::milliseconds Remaining(const std::string& key, uint64_t epoch) {
    return cache_.Remaining(key, epoch, Now());
  }

  SpokeMetadataStats Stats() const;

 private:
  SteadyTime Now() const { return options_.clock->SteadyNow(); }
  // With stale_ok and the hub out of reach: what was cached about `path` under `key`
  // whatever its lease, marked stale.
  std::optional<CachedLookup> StaleLookup(const std::string& key, const std::string& path);
  // The view of snapshot `name`, fetched or revalidated as needed; null when it is too large
  // to pin (reads then use leased lookups like the live tree).
  Result<std::shared_ptr<const SnapshotView>> Pinned(const std::string& name);
  void PollLoop();
  void RenewLoop();
  // Leases hub directory `dir` whole into the cache with one `dir` round trip: only what
  // changed since the manifest kept of it, if any. One at a time per directory (callers that
  // find one in flight wait for it). FailedPrecondition for a directory too large to list so.
  // With `read` (a small file of it about to be read), that file's missing chunks come along.
  Status RevalidateDir(const std::string& dir, const std::string* read = nullptr);
  Status FetchDir(const std::string& dir, const std::string* read);

  HubClient* const hub_;
  SpokeChunks* const chunks_;
  const PortalPaths* const paths_;
  const SpokeMetadataOptions options_;
  MetaCache cache_;

  std::mutex pinned_mu_;
  std::map<std::string, std::shared_ptr<const SnapshotView>> pinned_;  // GUARDED_BY(pinned_mu_)
  std::set<std::string> unpinnable_;  // GUARDED_BY(pinned_mu_): too large to pin

  // Manifests of directories listed whole, and directories too large for it (until when not
  // to ask again); bounded by kManifestEntries entries in all.
  std::mutex dirs_mu_;
  std::unordered_map<std::string, std::shared_ptr<const DirManifest>> manifests_;  // by hub dir
  size_t manifest_entries_ = 0;                             // GUARDED_BY(dirs_mu_)
  std::unordered_map<std::string, SteadyTime> large_dirs_;  // GUARDED_BY(dirs_mu_)
  std::unordered_map<std::string, std::shared_future<Status>> revalidating_;  // GUARDED_BY

  std::mutex hook_mu_;
  std::function<void(const Affected&)> hook_;  // GUARDED_BY(hook_mu_)

  std::atomic<bool> stop_ = false;
  std::thread poller_;
  std::thread renewer_;

  std::atomic<uint64_t> hits_ = 0;
  std::atomic<uint64_t> misses_ = 0;
  std::atomic<uint64_t> invalidations_ = 0;
  std::atomic<uint64_t> renewals_ = 0;
  std::atomic<uint64_t> stale_answers_ = 0;
  std::atomic<uint64_t> dirs_whole_ = 0;
  std::atomic<uint64_t> dirs_changed_ = 0;
};

}  // namespace weft::fabric
