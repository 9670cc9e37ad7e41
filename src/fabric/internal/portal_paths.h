// PortalPaths: where a spoke's local paths live at the hub. Each portal shows a hub directory
// at a local path; directories above the portals are synthetic and read-only; /.weft (the
// snapshots) is the hub's own namespace. Immutable after construction; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/lease_table.h"
#include "fabric/portal_volume.h"
#include "vfs/volume.h"

namespace weft::fabric {

// A path validated (vfs/path.h) and written canonically ("/a/b/" -> "/a/b").
Result<std::string> NormalisePath(std::string_view path);
// "/a" + "/b/c" -> "/a/b/c", with "/" as the identity on either side.
std::string ConcatPath(const std::string& base, std::string_view rest);
// The lease key of a directory as read live (nullopt) or at a snapshot.
std::string LeaseKey(const std::string& dir, const std::optional<std::string>& snapshot);

// A local path: at the hub (`hub` set), or a synthetic directory above the portals.
struct Mapped {
  std::string local;
  std::string hub;
  bool virtual_dir = false;
};

class PortalPaths {
 public:
  // The most specific portal wins where local paths nest (Open refuses overlapping ones).
  explicit PortalPaths(std::vector<Portal> portals);

  // NotFound for a path in no portal and above none.
  Result<Mapped> Map(const std::string& path) const;
  // A hub path back to the local path a client sees ("" if no portal shows it).
  std::string ToLocal(const std::string& hub_path) const;
  // The local directories an invalidation of hub directories covers.
  Affected ToLocal(const Affected& hub) const;
  // The hub lease key of a local directory, for a chained spoke's leases; none for synthetic
  // directories and snapshot content (immutable).
  std::optional<std::string> HubKey(const std::string& local_dir) const;
  // Whether hub directory `dir` is inside a portal (live, not /.weft).
  bool InPortal(const std::string& dir) const;

  // A synthetic directory above the portals, and its listing.
  static FileInfo VirtualInfo(const std::string& local);
  Result<ReadDirPage> VirtualListing(const std::string& local, const ReadDirOptions& opts) const;

  const std::vector<Portal>& portals() const { return portals_; }

 private:
  std::vector<Portal> portals_;  // longest local path first
};

}  // namespace weft::fabric
