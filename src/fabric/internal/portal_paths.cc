#include "fabric/internal/portal_paths.h"

#include <algorithm>
#include <set>

#include "vfs/path.h"

namespace weft::fabric {

Result<std::string> NormalisePath(std::string_view path) {
  WEFT_ASSIGN_OR_RETURN(auto segments, SplitPath(path));
  return JoinPath(segments);
}

std::string ConcatPath(const std::string& base, std::string_view rest) {
  if (rest.empty() || rest == "/") return base;
  if (base == "/") return std::string(rest);
  return base + std::string(rest);
}

std::string LeaseKey(const std::string& dir, const std::optional<std::string>& snapshot) {
  if (!snapshot) return dir;
  return "/.weft/snapshots/" + *snapshot + (dir == "/" ? "" : dir);
}

PortalPaths::PortalPaths(std::vector<Portal> portals) : portals_(std::move(portals)) {
  std::sort(portals_.begin(), portals_.end(), [](const Portal& a, const Portal& b) {
    return a.local_path.size() > b.local_path.size();
  });
}

Result<Mapped> PortalPaths::Map(const std::string& path) const {
  WEFT_ASSIGN_OR_RETURN(std::string local, NormalisePath(path));
  Mapped m;
  m.local = local;
  if (IsAtOrUnder(local, "/.weft")) {  // snapshots: the hub's own namespace
    m.hub = local;
    return m;
  }
  for (const Portal& p : portals_) {
    if (IsAtOrUnder(local, p.local_path)) {
      m.hub =
          ConcatPath(p.hub_path, p.local_path == "/" ? local : local.substr(p.local_path.size()));
      return m;
    }
  }
  for (const Portal& p : portals_) {
    if (IsAtOrUnder(p.local_path, local)) {
      m.virtual_dir = true;
      return m;
    }
  }
  return NotFound(local + ": not in any portal of this spoke");
}

std::string PortalPaths::ToLocal(const std::string& hub_path) const {
  if (IsAtOrUnder(hub_path, "/.weft")) return hub_path;
  for (const Portal& p : portals_) {
    if (IsAtOrUnder(hub_path, p.hub_path)) {
      return ConcatPath(p.local_path,
                        p.hub_path == "/" ? hub_path : hub_path.substr(p.hub_path.size()));
    }
  }
  return "";
}

Affected PortalPaths::ToLocal(const Affected& hub) const {
  Affected local;
  for (const std::string& d : hub.dirs) {
    std::string l = ToLocal(d);
    if (!l.empty()) local.dirs.insert(l);
  }
  for (const std::string& s : hub.subtrees) {
    std::string l = ToLocal(s);
    if (!l.empty()) local.subtrees.insert(l);
  }
  return local;
}

std::optional<std::string> PortalPaths::HubKey(const std::string& local_dir) const {
  // The binding of snapshot names is leased like a directory; snapshot content needs none.
  if (local_dir == "/.weft/snapshots") return local_dir;
  if (IsAtOrUnder(local_dir, "/.weft")) return std::nullopt;
  auto m = Map(local_dir);
  if (!m.ok() || m->virtual_dir) return std::nullopt;
  return m->hub;
}

bool PortalPaths::InPortal(const std::string& dir) const {
  return !IsAtOrUnder(dir, "/.weft") &&
         std::any_of(portals_.begin(), portals_.end(),
                     [&](const Portal& p) { return IsAtOrUnder(dir, p.hub_path); });
}

FileInfo PortalPaths::VirtualInfo(const std::string& local) {
  FileInfo info;
  info.path = local;
  info.type = FileType::kDirectory;
  info.mode = 0555;
  return info;
}

Result<ReadDirPage> PortalPaths::VirtualListing(const std::string& local,
                                                const ReadDirOptions& opts) const {
  std::set<std::string> names;
  for (const Portal& p : portals_) {
    if (p.local_path == local || !IsAtOrUnder(p.local_path, local)) continue;
    std::string rest = p.local_path.substr(local == "/" ? 1 : local.size() + 1);
    names.insert(rest.substr(0, rest.find('/')));
  }
  ReadDirPage page;
  for (const std::string& name : names) {
    if (name <= opts.start_after) continue;
    if (page.entries.size() == opts.limit) {
      page.truncated = true;
      break;
    }
    DirEntry e;
    e.name = name;
    e.type = FileType::kDirectory;
    if (opts.with_info) e.info = VirtualInfo(ConcatPath(local, "/" + name));
    page.entries.push_back(std::move(e));
  }
  return page;
}

}  // namespace weft::fabric
