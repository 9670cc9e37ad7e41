// What a spoke server (RunSpoke) and a mount with an embedded spoke (RunMount) share.
#pragma once

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "chunk/chunk_store.h"
#include "fabric/portal_volume.h"
#include "frontends/rest/rest_frontend.h"
#include "server/hub.h"

namespace weft::server {

struct OpenedPortal {
  std::shared_ptr<ChunkStore> chunks;  // the spoke's pack store under options.cache_dir
  std::unique_ptr<fabric::PortalVolume> volume;
  std::vector<fabric::Portal> portals;
};

// Opens the chunk store in options.cache_dir and attaches a PortalVolume to the hub, acting
// there as the user whose key is given.
Result<OpenedPortal> OpenPortal(const SpokeOptions& options, const std::string& access_key,
                                const std::string& secret_key);

// NeuralCache's stats and hint intake as the REST front end (and the mount) expose them.
rest::RestFrontend::CacheControl CacheControlOf(fabric::NeuralCache* neural);

// Blocks SIGTERM and SIGINT for every thread started after it, so that a sigwait (or the one
// thread that unblocks them) takes them. Call before any thread starts.
sigset_t BlockTerminationSignals();

}  // namespace weft::server
