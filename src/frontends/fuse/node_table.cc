#include "frontends/fuse/node_table.h"

namespace weft::fuse {

namespace {

// The entries of `by_path` naming `root` or a path below it. Bytewise order puts "/a b"
// between "/a" and "/a/x", so the subtree is the exact key plus the range under "root/".
std::vector<std::map<std::string, uint64_t>::const_iterator> Within(
    const std::map<std::string, uint64_t>& by_path, const std::string& root) {
  std::vector<std::map<std::string, uint64_t>::const_iterator> out;
  const std::string prefix = root == "/" ? "/" : root + "/";
  if (root != "/") {
    auto exact = by_path.find(root);
    if (exact != by_path.end()) out.push_back(exact);
  }
  for (auto it = by_path.lower_bound(prefix);
       it != by_path.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    out.push_back(it);
  }
  return out;
}

}  // namespace

std::string ParentPath(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

NodeTable::NodeTable() {
  nodes_[kRootId] = Node{"/", 1};
  by_path_["/"] = kRootId;
}

uint64_t NodeTable::Lookup(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it != by_path_.end()) {
    nodes_[it->second].lookups++;
    return it->second;
  }
  uint64_t id = next_id_++;
  nodes_[id] = Node{path, 1};
  by_path_[path] = id;
  return id;
}

void NodeTable::Forget(uint64_t id, uint64_t count) {
  if (id == kRootId) return;
  std::lock_guard lock(mu_);
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return;
  it->second.lookups = count >= it->second.lookups ? 0 : it->second.lookups - count;
  if (it->second.lookups > 0) return;
  if (it->second.path) by_path_.erase(*it->second.path);
  nodes_.erase(it);
}

std::optional<std::string> NodeTable::PathOf(uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return std::nullopt;
  return it->second.path;
}

std::optional<uint64_t> NodeTable::IdOf(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return std::nullopt;
  return it->second;
}

void NodeTable::DetachLocked(const std::string& path) {
  for (auto it : Within(by_path_, path)) {
    if (it->second == kRootId) continue;
    nodes_[it->second].path.reset();
    by_path_.erase(it);
  }
}

void NodeTable::Detach(const std::string& path) {
  if (path == "/") return;
  std::lock_guard lock(mu_);
  DetachLocked(path);
}

void NodeTable::Rename(const std::string& from, const std::string& to) {
  if (from == to || from == "/") return;
  std::lock_guard lock(mu_);
  DetachLocked(to);
  std::vector<std::pair<std::string, uint64_t>> moved;
  for (auto it : Within(by_path_, from)) {
    moved.emplace_back(to + it->first.substr(from.size()), it->second);
    by_path_.erase(it);
  }
  for (auto& [path, id] : moved) {
    nodes_[id].path = path;
    by_path_[path] = id;
  }
}

std::vector<NodeTable::Child> NodeTable::Under(const std::vector<std::string>& dirs,
                                               const std::vector<std::string>& subtrees) const {
  std::lock_guard lock(mu_);
  std::vector<Child> out;
  auto add = [&](const std::string& path, uint64_t id) {
    if (path == "/") return;
    auto parent = by_path_.find(ParentPath(path));
    if (parent == by_path_.end()) return;
    out.push_back(Child{parent->second, path.substr(path.rfind('/') + 1), id});
  };
  for (const std::string& root : subtrees) {
    for (auto it : Within(by_path_, root)) add(it->first, it->second);
  }
  for (const std::string& dir : dirs) {
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    for (auto it = by_path_.lower_bound(prefix);
         it != by_path_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (it->first.find('/', prefix.size()) == std::string::npos) add(it->first, it->second);
    }
  }
  return out;
}

size_t NodeTable::size() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

}  // namespace weft::fuse
