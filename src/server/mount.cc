#include "server/mount.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "fabric/portal_volume.h"
#include "frontends/fuse/fuse_mount.h"
#include "io/file_system.h"
#include "server/spoke.h"
#include "vfs/local_volume.h"

namespace weft::server {
namespace {

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// The key an embedded spoke acts as at the hub: WEFT_HUB_* for --hub, WEFT_* (or WEFT_ROOT_*)
// for --server, as `weft spoke` and `weft --server` take theirs.
Status KeyFromEnvironment(bool hub_mode, std::string* key, std::string* secret) {
  std::vector<std::pair<const char*, const char*>> names;
  if (hub_mode) {
    names = {{"WEFT_HUB_ACCESS_KEY", "WEFT_HUB_SECRET_KEY"}};
  } else {
    names = {{"WEFT_ACCESS_KEY", "WEFT_SECRET_KEY"},
             {"WEFT_ROOT_ACCESS_KEY", "WEFT_ROOT_SECRET_KEY"}};
  }
  for (auto [key_var, secret_var] : names) {
    const char* k = std::getenv(key_var);
    const char* s = std::getenv(secret_var);
    if (k != nullptr && s != nullptr) {
      *key = k;
      *secret = s;
      return OkStatus();
    }
  }
  return InvalidArgument(hub_mode ? "--hub needs the hub user's key: set WEFT_HUB_ACCESS_KEY "
                                    "and WEFT_HUB_SECRET_KEY"
                                  : "--server needs an access key: set WEFT_ACCESS_KEY and "
                                    "WEFT_SECRET_KEY");
}

// Removes a throwaway cache directory when the mount ends.
struct RemoveOnExit {
  std::string dir;
  ~RemoveOnExit() {
    if (dir.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace

Status RunMount(const MountOptions& options, FILE* out) {
  const int modes =
      !options.data_dir.empty() + !options.hub_url.empty() + !options.server_url.empty();
  if (modes != 1) {
    return InvalidArgument(
        "say what to mount: exactly one of --data DIR, --hub URL or --server URL");
  }
  if (options.mountpoint.empty()) return InvalidArgument("MOUNTPOINT is required");
  if (options.attr_timeout_s.value_or(0) < 0) {
    return InvalidArgument("--attr-timeout cannot be negative");
  }

  fuse::MountOptions fuse_options;
  fuse_options.mountpoint = options.mountpoint;
  fuse_options.attr_timeout_s =
      options.attr_timeout_s.value_or(options.data_dir.empty() ? 1 : 3600);
  fuse_options.read_only = options.read_only;
  fuse_options.allow_other = options.allow_other;
  fuse_options.context.site = "mount";
  FileSystem* fs = PosixFileSystem();
  const sigset_t signals = BlockTerminationSignals();

  std::unique_ptr<Volume> local;
  OpenedPortal portal;
  RemoveOnExit throwaway;
  Volume* volume = nullptr;
  if (!options.data_dir.empty()) {
    LocalVolumeOptions local_options;
    local_options.chunk_cache_bytes = options.memory_cache_bytes;
    local_options.metadata_cache_bytes = options.metadata_cache_bytes;
    WEFT_ASSIGN_OR_RETURN(local, OpenLocalVolume(options.data_dir, local_options));
    volume = local.get();
    fuse_options.exclusive = true;  // the data directory is locked to this process
    fuse_options.read_ahead_bytes = 8 << 20;
    fuse_options.source = options.data_dir;
    fuse_options.staging_dir = options.data_dir + "/staging";
  } else {
    SpokeOptions spoke = options.spoke;
    spoke.memory_cache_bytes = options.memory_cache_bytes;
    std::string key, secret;
    WEFT_RETURN_IF_ERROR(KeyFromEnvironment(!options.hub_url.empty(), &key, &secret));
    if (!options.hub_url.empty()) {
      spoke.hub_url = options.hub_url;
    } else {
      spoke.hub_url = options.server_url;
      // A cache only for this mount's life: the server it reads from keeps the real one.
      const char* tmp = std::getenv("TMPDIR");
      std::string dir =
          std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/var/tmp") + "/weft-mount-XXXXXX";
      if (mkdtemp(dir.data()) == nullptr) {
        return IoError("cannot create a cache directory like " + dir);
      }
      throwaway.dir = dir;
      spoke.cache_dir = dir;
      spoke.cache_policy = "off";
    }
    if (spoke.site.empty()) spoke.site = "mount-" + Hostname();
    if (spoke.portals.empty()) spoke.portals = {"/"};
    WEFT_ASSIGN_OR_RETURN(portal, OpenPortal(spoke, key, secret));
    volume = portal.volume.get();
    fuse_options.source = spoke.hub_url;
    fuse_options.staging_dir = spoke.cache_dir + "/staging";
  }
  if (!options.staging_dir.empty()) fuse_options.staging_dir = options.staging_dir;
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(fuse_options.staging_dir));

  // The portal's invalidation poll starts before the mount exists; it tells the mount once
  // there is one.
  std::mutex hook_mu;
  fuse::FuseMount* mounted = nullptr;  // guarded by hook_mu
  if (portal.volume) {
    portal.volume->SetInvalidationHook([&](const fabric::Affected& affected) {
      std::lock_guard lock(hook_mu);
      if (mounted == nullptr) return;
      mounted->Invalidate({affected.dirs.begin(), affected.dirs.end()},
                          {affected.subtrees.begin(), affected.subtrees.end()});
    });
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<fuse::FuseMount> mount,
                        fuse::FuseMount::Mount(volume, fuse_options));
  {
    std::lock_guard lock(hook_mu);
    mounted = mount.get();
  }
  if (portal.volume) {
    if (fabric::NeuralCache* neural = portal.volume->neural_cache()) {
      rest::RestFrontend::CacheControl control = CacheControlOf(neural);
      fuse::CacheControl files;
      files.stats = [stats = control.stats] { return stats().dump(2); };
      files.hint = [hint = control.hint](const RequestContext& ctx,
                                         std::string_view body) -> Result<std::string> {
        nlohmann::ordered_json parsed =
            nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
        if (parsed.is_discarded() || !parsed.is_object()) {
          return InvalidArgument("a hint is a JSON object (docs/rest-api.md, POST cache/hints)");
        }
        auto dataset = parsed.find("dataset");
        if (dataset == parsed.end() || !dataset->is_string()) {
          return InvalidArgument("a hint names its \"dataset\" directory");
        }
        WEFT_ASSIGN_OR_RETURN(nlohmann::ordered_json answer,
                              hint(ctx, dataset->get<std::string>(), parsed));
        return answer.dump();
      };
      mount->SetCacheControl(std::move(files));
    }
  }
  std::fprintf(out, "weft: mounted %s at %s\n", fuse_options.source.c_str(),
               options.mountpoint.c_str());
  std::fflush(out);
  // This thread takes the termination signals (the FUSE loop's handlers end the session);
  // every thread started before keeps them blocked.
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
  Status served = mount->Run();
  {
    std::lock_guard lock(hook_mu);
    mounted = nullptr;
  }
  // The mount's handles hold readers and writers of the volume: it goes first.
  mount.reset();
  portal.volume.reset();
  std::fprintf(out, "weft: unmounted %s\n", options.mountpoint.c_str());
  std::fflush(out);
  return served;
}

}  // namespace weft::server
