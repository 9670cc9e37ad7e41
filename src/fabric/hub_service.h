// HubService: the hub's side of the hub-spoke protocol, served under /_weft/fabric/v1/
// (docs/fabric.md). Spokes authenticate with a bearer token of their hub user and are
// authorised per path like any other principal; every call runs as that user with protocol
// "fabric" and the spoke's site. The service answers metadata with directory leases
// (LeaseTable), chunk batches by version, "which of these chunks do you lack", chunk uploads
// and conditional commits, and the long poll that carries invalidations. The volume it serves
// must be the CoherentVolume over the same LeaseTable, so that every mutation - from a spoke
// or any front end - revokes leases first. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "access/authorized_volume.h"
#include "auth/identity_store.h"
#include "base/clock.h"
#include "fabric/lease_table.h"
#include "net/http_server.h"
#include "vfs/volume.h"

namespace weft::fabric {

struct SpokeRecord {
  std::string id;
  std::string user;  // the hub principal it authenticated as
  std::string site;
  std::vector<std::string> tags;
  std::vector<std::string> portals;  // hub paths it extends
  int64_t attached_ns = 0;
  uint64_t bytes_sent = 0;      // chunk bytes sent to it (on the wire)
  uint64_t bytes_received = 0;  // chunk bytes it uploaded
};

struct HubServiceOptions {
  // Largest commit or upload body held in memory; spokes send more in several uploads.
  size_t max_body_bytes = 80 << 20;
  // An upload session nobody committed is dropped after this long.
  std::chrono::seconds upload_idle{600};
  // Longest a poll waits for an invalidation before answering empty.
  std::chrono::milliseconds max_poll_wait{20'000};
  // Polls allowed to wait at once (each holds a server worker); others are answered at once
  // with a hint to poll again after busy_poll_retry. Keep it below the server's workers.
  size_t max_waiting_polls = 16;
  std::chrono::milliseconds busy_poll_retry{100};
  // The most entries one snapshot manifest may carry (beyond: TooLarge, list instead).
  size_t max_manifest_entries = 500'000;
  // Called before each attach succeeds (the hub records that spokes exist); an error refuses
  // the attach.
  std::function<Status()> on_attach;
  Clock* clock = SystemClock::Default();
};

class HubService : public net::HttpHandler {
 public:
  // `upstream` is null at a hub, the PortalVolume at a spoke that serves chained spokes.
  // Every namespace call and authorisation decision goes through `volume`, whose identity
  // store also authenticates the spokes' tokens.
  HubService(access::AuthorizedVolume* volume, LeaseTable* leases, HubServiceOptions options = {},
             UpstreamLeases* upstream = nullptr);
  ~HubService() override;

  void Handle(const net::HttpRequest& request, net::BodyReader& body,
              net::ResponseWriter& response) override;

  std::vector<SpokeRecord> Spokes();
  // The attached spokes with their current leases, as GET spokes lists them.
  nlohmann::json SpokesJson();

 private:
  struct Call;
  struct Upload;
  Status Dispatch(Call& call);
  Status IssueToken(Call& call);
  Status Attach(Call& call);
  Status Events(Call& call);
  Status Lookup(Call& call);
  Status Renew(Call& call);
  // One path of a lookup ("path", optional "snapshot", "version" and "inline_bytes" in `args`)
  // into `reply`, and with `frames` non-null the chunks of a file up to inline_bytes there.
  Status LookupOne(Call& call, const std::string& spoke, const nlohmann::json& args,
                   nlohmann::json* reply, std::optional<std::string>* frames);
  // The chunks of `file` (the reader of `path` a lookup found) for a spoke that takes a small
  // file's bytes with its answer (args: "inline_bytes", "have", "base_version"), as frames;
  // nullopt for a file larger than that.
  Result<std::optional<std::string>> InlineFrames(Call& call, const std::string& spoke,
                                                  const nlohmann::json& args,
                                                  const std::string& path, FileReader& file);
  Status List(Call& call);
  // A directory's entries with their infos and, for files up to "chunks_max_bytes", their
  // chunk lists, whole (up to kMaxDirEntries) or, with "since" (a sequence an earlier answer
  // gave), only the entries changed since: a spoke revalidates a directory in one round trip
  // that costs what changed, and reads files it already holds chunks of (renamed, copied)
  // without moving them. With "read" (a name in it) and InlineFrames' arguments, that small
  // file's bytes come along, as with a lookup.
  Status Dir(Call& call);
  Status Manifest(Call& call);
  // A version of `path`, also when `path` is in a snapshot (/.weft/snapshots/NAME/...).
  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& version);
  Status Fetch(Call& call);
  Status Missing(Call& call);
  Status UploadChunks(Call& call);
  Status Commit(Call& call);
  Status Forward(Call& call);
  Status ListSpokes(Call& call);
  Result<SpokeRecord> FindSpoke(const Call& call, const std::string& id);
  // Grants `spoke` a lease on `key` around `read` (granted first, so a mutation committing
  // after the read revokes it), shortened to what upstream still holds. Returns its length.
  std::chrono::milliseconds GrantAround(const std::string& spoke, const std::string& key,
                                        const std::function<void()>& read);
  void DropIdleUploads();
  void PruneForgotten();

  access::AuthorizedVolume* volume_;
  LeaseTable* leases_;
  HubServiceOptions options_;
  UpstreamLeases* upstream_;

  std::atomic<size_t> waiting_polls_ = 0;
  std::mutex mu_;
  std::map<std::string, SpokeRecord> spokes_;               // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<Upload>> uploads_;  // GUARDED_BY(mu_)
};

}  // namespace weft::fabric
