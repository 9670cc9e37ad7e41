#include "vfs/internal/dir_cache.h"

namespace weft {

uint64_t DirCache::Begin() {
  std::lock_guard lock(mu_);
  return writing_ ? kNoToken : gen_;
}

uint64_t DirCache::Confirm(uint64_t token) {
  // Unchanged since Begin: no commit began before the snapshot was taken, so the snapshot
  // and the entries of this generation show the same namespace.
  std::lock_guard lock(mu_);
  return ValidLocked(token) ? token : kNoToken;
}

std::optional<NamespaceView::Resolved> DirCache::Find(uint64_t token, const std::string& dir) {
  std::lock_guard lock(mu_);
  if (!ValidLocked(token)) return std::nullopt;
  auto it = dirs_.find(dir);
  if (it == dirs_.end()) return std::nullopt;
  return it->second;
}

void DirCache::Insert(uint64_t token, const std::string& dir,
                      const NamespaceView::Resolved& resolved) {
  std::lock_guard lock(mu_);
  // A commit since the token: what the reader saw may be gone already.
  if (!ValidLocked(token)) return;
  if (dirs_.size() >= max_entries_) dirs_.clear();
  dirs_.insert_or_assign(dir, resolved);
}

void DirCache::StartWrite() {
  std::lock_guard lock(mu_);
  writing_ = true;
  dirs_.clear();
}

void DirCache::EndWrite() {
  std::lock_guard lock(mu_);
  writing_ = false;
  ++gen_;
  dirs_.clear();
}

}  // namespace weft
