// FuseMount: a Volume as a POSIX file system through the kernel's FUSE (libfuse3's low-level
// API, one thread per request in flight). Training code reads it with plain open/read:
// ImageFolder, WebDataset shards, torch.save checkpoints.
//
// What it promises (docs/mount.md):
//   - A write becomes a new version when the file is closed or fsynced, atomically: a reader
//     sees the old bytes or the new, never a mix. Until then the bytes wait in a temporary
//     file under `staging_dir`, so random and sparse writes work on a store of immutable
//     versions.
//   - /.weft/snapshots/NAME/ is the read-only tree of each snapshot; its pages and attributes
//     stay cached in the kernel, since they never change. mkdir there takes a snapshot of the
//     whole volume, rmdir deletes one (the kernel lets only the owner, root, do either).
//   - Every open reads the file's current version. A live file's pages stay in the kernel's
//     cache across opens while that version is unchanged. Names and attributes are trusted
//     for attr_timeout_s; Invalidate drops them sooner when something else changed a
//     directory (a spoke's lease revoked by the hub).
//   - With a cache control (a spoke's NeuralCache), /.weft/cache/stats reads its state as JSON
//     and /.weft/cache/hints takes a hint body (docs/rest-api.md, POST cache/hints) written
//     in one open-write-close; a bad hint fails the close with EINVAL.
// Permissions are the kernel's (default_permissions) on the volume's mode, uid and gid.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "vfs/volume.h"

namespace weft::fuse {

struct CacheControl {
  std::function<std::string()> stats;  // JSON
  // The answer (JSON) to a hint body, or the error that fails the writer's close.
  std::function<Result<std::string>(const RequestContext&, std::string_view body)> hint;
};

struct MountOptions {
  std::string mountpoint;
  // Where open writes keep their bytes until close; a directory on a local disk.
  std::string staging_dir;
  // Shown as the source in /proc/mounts ("weft:<source>").
  std::string source = "weft";
  // Seconds the kernel may trust a live name or attribute without asking again. When the
  // mount is exclusive the kernel's own view is exact (it saw every change), so this may be
  // long.
  double attr_timeout_s = 1.0;
  bool read_only = false;
  // Let users other than the one mounting in (root may always; others need user_allow_other
  // in /etc/fuse.conf).
  bool allow_other = false;
  // Nothing but this mount changes the volume (a local data directory, which one process
  // holds): the next open of an unchanged file may reuse the last one's reader.
  bool exclusive = false;
  // A sequential reader gets the disk asked for the chunks this far past its last read
  // (0: off). For volumes on a local disk (a spoke's readers fetch ahead themselves).
  uint64_t read_ahead_bytes = 0;
  // Who the volume sees: protocol and site; uid and gid come from each request.
  RequestContext context{.principal = "root", .protocol = "fuse"};
};

class FuseMount {
 public:
  // Mounts `volume` (which must outlive this) at options.mountpoint.
  static Result<std::unique_ptr<FuseMount>> Mount(Volume* volume, MountOptions options);
  virtual ~FuseMount() = default;

  // Serves until unmounted (fusermount3 -u, umount) or SIGTERM/SIGINT/SIGHUP, then unmounts.
  // Call once, from the thread that should take those signals.
  virtual Status Run() = 0;
  // Makes the kernel forget names and cached pages under these volume directories (their
  // children) and subtrees. Returns at once (a thread of the mount tells the kernel), so a
  // spoke may call it while acknowledging a revocation. Thread-safe.
  virtual void Invalidate(const std::vector<std::string>& dirs,
                          const std::vector<std::string>& subtrees) = 0;
  virtual void SetCacheControl(CacheControl control) = 0;
};

// The errno a Volume status becomes at the POSIX boundary.
int ErrnoOf(const Status& status);

}  // namespace weft::fuse
