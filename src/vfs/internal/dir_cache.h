// DirCache: resolved directories of the live namespace, so that a lookup of a deep path reads
// the metadata store for its last component only. A path's directories are otherwise read
// again for every file (/data/train/class_0001/img.jpg: nine of eleven gets, and a third of
// the time a cold mount spends opening a file).
//
// Entries are valid while no commit has happened since they were read. Reads and commits
// follow a small protocol that keeps a reader from mixing a newer store snapshot with older
// entries, or storing older entries after a commit:
//   reader: token = Begin(); snapshot = store.NewSnapshot(); token = Confirm(token);
//           then Find / Insert with that token (both no-ops for kNoToken).
//   writer: StartWrite(); store.Write(...); EndWrite();   (one writer at a time)
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "vfs/internal/namespace_view.h"

namespace weft {

class DirCache {
 public:
  static constexpr uint64_t kNoToken = 0;

  explicit DirCache(size_t max_entries = 16384) : max_entries_(max_entries) {}

  // Before taking the store snapshot: the generation the snapshot should belong to.
  uint64_t Begin();
  // After taking it: the token, or kNoToken when a commit may have started meanwhile.
  uint64_t Confirm(uint64_t token);

  std::optional<NamespaceView::Resolved> Find(uint64_t token, const std::string& dir);
  void Insert(uint64_t token, const std::string& dir, const NamespaceView::Resolved& resolved);

  void StartWrite();
  void EndWrite();

 private:
  bool ValidLocked(uint64_t token) const { return token != kNoToken && !writing_ && gen_ == token; }

  const size_t max_entries_;
  std::mutex mu_;
  uint64_t gen_ = 1;      // GUARDED_BY(mu_); never kNoToken
  bool writing_ = false;  // GUARDED_BY(mu_)
  std::unordered_map<std::string, NamespaceView::Resolved> dirs_;  // GUARDED_BY(mu_)
};

}  // namespace weft
