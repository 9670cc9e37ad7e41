// `weft mount`: the composition root of a FUSE mount over one of three volumes: a local data
// directory, an embedded spoke of a hub (the GPU node keeps the cache in-process, no extra
// hop), or a running hub or spoke reached over the network (an embedded spoke with a
// throwaway cache).
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "base/status.h"
#include "server/hub.h"

namespace weft::server {

struct MountOptions {
  std::string mountpoint;
  // Exactly one of these three says what to mount.
  std::string data_dir;    // a local volume
  std::string hub_url;     // an embedded spoke; `spoke` says how (cache, portals, policy)
  std::string server_url;  // a running hub or spoke; its key from WEFT_ACCESS_KEY/SECRET_KEY
  SpokeOptions spoke;      // hub_url and server_url modes; listen/TLS fields unused
  // Open writes wait here until close; default: inside the data or cache directory.
  std::string staging_dir;
  // Seconds the kernel trusts names and attributes; default 1, or an hour for --data, where
  // every change goes through the mount and the kernel's view is exact.
  std::optional<double> attr_timeout_s;
  bool read_only = false;
  bool allow_other = false;
  uint64_t memory_cache_bytes = 256ull << 20;   // recently read chunks kept in memory (0: none)
  uint64_t metadata_cache_bytes = 80ull << 20;  // --data: the metadata store's caches
};

// Mounts, prints "weft: mounted ... at MOUNTPOINT" once the mount is usable, and serves until
// unmounted or SIGTERM/SIGINT/SIGHUP.
Status RunMount(const MountOptions& options, FILE* out);

}  // namespace weft::server
