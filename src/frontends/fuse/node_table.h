// NodeTable: the FUSE node ids the kernel holds, and the Volume path each one names now.
// Volume is addressed by path, the kernel by node id; this table is the one place that maps
// them. A node lives while the kernel holds lookups on it (Lookup adds one, Forget drops
// them). Rename moves a whole subtree's paths; unlink, rmdir and a rename over a node detach
// it: it keeps its id until forgotten but names no path, so a write still open on it goes
// nowhere when closed, as POSIX says. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vfs/path.h"

namespace weft::fuse {

class NodeTable {
 public:
  static constexpr uint64_t kRootId = 1;  // FUSE_ROOT_ID, always "/"

  NodeTable();

  // The node naming `path` (a new id when none does), with one more lookup.
  uint64_t Lookup(const std::string& path);
  // Drops `count` lookups; the node goes at zero. The root never goes.
  void Forget(uint64_t id, uint64_t count);

  // The path `id` names now; nullopt when it was detached or forgotten.
  std::optional<std::string> PathOf(uint64_t id) const;
  std::optional<uint64_t> IdOf(const std::string& path) const;

  // `from` and everything below it now live at `to`; nodes that named `to` or a path below it
  // are detached first (a rename replaces its target).
  void Rename(const std::string& from, const std::string& to);
  // The node naming `path`, and any below it, name nothing any more.
  void Detach(const std::string& path);

  // Known nodes whose parent is one of `dirs` or that lie below one of `subtrees`, as
  // (parent id, name, id): what to invalidate in the kernel when those directories change.
  struct Child {
    uint64_t parent = 0;
    std::string name;
    uint64_t id = 0;
  };
  std::vector<Child> Under(const std::vector<std::string>& dirs,
                           const std::vector<std::string>& subtrees) const;

  size_t size() const;

 private:
  struct Node {
    std::optional<std::string> path;
    uint64_t lookups = 0;
  };
  void DetachLocked(const std::string& path);

  mutable std::mutex mu_;
  uint64_t next_id_ = kRootId + 1;
  std::unordered_map<uint64_t, Node> nodes_;
  std::map<std::string, uint64_t> by_path_;  // ordered: a subtree is one range
};

// "/a/b" -> "/a"; "/a" -> "/".
std::string ParentPath(const std::string& path);

}  // namespace weft::fuse
