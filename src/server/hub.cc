#include "server/hub.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "access/audit_log.h"
#include "access/authorized_volume.h"
#include "auth/identity_store.h"
#include "base/clock.h"
#include "base/memory.h"
#include "chunk/caching_chunk_store.h"
#include "chunk/pack_chunk_store.h"
#include "fabric/coherent_volume.h"
#include "fabric/hub_service.h"
#include "fabric/portal_volume.h"
#include "frontends/rest/rest_frontend.h"
#include "frontends/s3/s3_frontend.h"
#include "io/file_system.h"
#include "net/access_log.h"
#include "net/http_server.h"
#include "net/wan_emulator.h"
#include "server/identity.h"
#include "server/router.h"
#include "server/spoke.h"
#include "vfs/local_volume.h"
#include "vfs/path.h"

namespace weft::server {
namespace {

// The audit log `flag` names ("": DIR/audit.log; "off": none).
Result<std::unique_ptr<access::AuditLog>> OpenAuditLog(const std::string& flag,
                                                       const std::string& dir) {
  if (flag == "off") return std::unique_ptr<access::AuditLog>();
  const std::string path = flag.empty() ? dir + "/audit.log" : flag;
  return access::AuditLog::Open(path);
}

// Root's key: from the environment when set (and then kept in sync), otherwise generated on
// the first start and printed once; the identity store keeps it (secret encrypted). A key from
// the environment is root's key: root keys made before it are removed, so changing the
// variable replaces the old key rather than adding one; keys rotated out with an overlap
// (`weft key rotate root`) and keys made after it (the successor of a rotation) stay.
Status EnsureRootKey(auth::IdentityStore& identities, FILE* out) {
  const char* access = std::getenv("WEFT_ROOT_ACCESS_KEY");
  const char* secret = std::getenv("WEFT_ROOT_SECRET_KEY");
  if ((access == nullptr) != (secret == nullptr)) {
    return InvalidArgument("set both WEFT_ROOT_ACCESS_KEY and WEFT_ROOT_SECRET_KEY, or neither");
  }
  if (access != nullptr) {
    // Unchanged since the last start: nothing to import (a hub on a full disk, opened
    // read-only, still starts and serves).
    Result<auth::AccessKey> env_key = identities.LookupKey(access);
    if (!env_key.ok() || env_key->user != auth::kRootUser || env_key->secret_key != secret) {
      env_key = identities.ImportKey(auth::kRootUser, access, secret);
      if (!env_key.ok()) return env_key.status().WithContext("WEFT_ROOT_ACCESS_KEY");
    }
    WEFT_ASSIGN_OR_RETURN(auto keys, identities.ListKeys(auth::kRootUser));
    int replaced = 0;
    for (const auth::AccessKey& key : keys) {
      if (key.access_key_id == env_key->access_key_id || key.expires_ns != 0 ||
          key.created_ns > env_key->created_ns) {
        continue;
      }
      WEFT_RETURN_IF_ERROR(identities.DeleteKey(key.access_key_id));
      ++replaced;
    }
    if (replaced > 0) {
      std::fprintf(out, "weft: the root key from WEFT_ROOT_ACCESS_KEY replaced %d earlier one%s\n",
                   replaced, replaced == 1 ? "" : "s");
    }
    if (env_key->expires_ns != 0) {
      std::fprintf(out,
                   "weft: warning: the root key in WEFT_ROOT_ACCESS_KEY was rotated out and "
                   "stops working at %s; put its successor in the environment\n",
                   FormatIso8601(env_key->expires_ns).c_str());
    }
    return OkStatus();
  }
  WEFT_ASSIGN_OR_RETURN(auto keys, identities.ListKeys(auth::kRootUser));
  if (!keys.empty()) return OkStatus();
  WEFT_ASSIGN_OR_RETURN(auth::AccessKey key, identities.CreateKey(auth::kRootUser));
  std::fprintf(out,
               "weft: generated the root access key (shown only now; keep it safe):\n"
               "  WEFT_ROOT_ACCESS_KEY=%s\n  WEFT_ROOT_SECRET_KEY=%s\n",
               key.access_key_id.c_str(), key.secret_key.c_str());
  return OkStatus();
}

std::string CapacityMetrics(Volume& volume) {
  auto usage = volume.Usage(RequestContext{});
  if (!usage.ok()) return "";
  std::string out;
  auto gauge = [&](std::string_view name, std::string_view help, uint64_t value) {
    out += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
    out += "# TYPE " + std::string(name) + " gauge\n";
    out += std::string(name) + " " + std::to_string(value) + "\n";
  };
  gauge("weft_files", "Live files.", usage->files);
  gauge("weft_logical_bytes", "Sum of live file sizes.", usage->logical_bytes);
  gauge("weft_unique_bytes", "Distinct chunk bytes before compression.", usage->unique_bytes);
  gauge("weft_stored_bytes", "Distinct chunk bytes after compression.", usage->stored_bytes);
  gauge("weft_pack_bytes", "Bytes of pack files on disk.", usage->pack_bytes);
  return out;
}

std::string SpokeMetrics(const fabric::PortalVolume& portal) {
  const fabric::PortalStats s = portal.Stats();
  std::string out;
  auto counter = [&](std::string_view name, std::string_view help, uint64_t value) {
    out += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
    out += "# TYPE " + std::string(name) + " counter\n";
    out += std::string(name) + " " + std::to_string(value) + "\n";
  };
  counter("weft_spoke_metadata_hits_total", "Metadata answered under a lease.", s.metadata_hits);
  counter("weft_spoke_metadata_misses_total", "Metadata asked of the hub.", s.metadata_misses);
  counter("weft_spoke_chunk_hits_total", "Chunks found in the spoke's store.", s.chunk_hits);
  counter("weft_spoke_chunks_fetched_total", "Chunks fetched from the hub.", s.chunks_fetched);
  counter("weft_spoke_wire_bytes_fetched_total", "Chunk bytes received from the hub.",
          s.bytes_fetched);
  counter("weft_spoke_wire_bytes_uploaded_total", "Chunk bytes sent to the hub.", s.bytes_uploaded);
  counter("weft_spoke_invalidations_total", "Invalidations received from the hub.",
          s.invalidations);
  counter("weft_spoke_lease_renewals_total",
          "Directory leases renewed while in use, before they lapsed.", s.lease_renewals);
  counter("weft_spoke_dirs_listed_whole_total",
          "Directories listed whole, with small files' chunk lists, in one round trip.",
          s.dirs_whole);
  counter("weft_spoke_dirs_revalidated_by_changes_total",
          "Directories revalidated by the changes since their last listing.", s.dirs_changed);
  counter("weft_spoke_evictions_total", "Chunks evicted to stay within --cache-size.", s.evictions);
  counter("weft_spoke_uncached_chunks_total",
          "Fetched chunks served but not kept because the cache's disk was full.", s.uncached);
  counter("weft_spoke_stale_answers_total",
          "Answers from expired metadata while the hub was unreachable (--stale-ok).",
          s.stale_answers);
  return out;
}

// The REST body of `POST cache/hints` (docs/rest-api.md) as a HintRequest. Paths may be
// relative to the dataset.
Result<fabric::HintRequest> ParseHint(const RequestContext& ctx, const std::string& dataset,
                                      const nlohmann::ordered_json& body) {
  fabric::HintRequest hint;
  hint.dataset = dataset;
  hint.job = ctx.principal;
  try {
    for (const auto& [name, value] : body.items()) {
      if (name == "dataset") continue;
      if (name == "job") {
        hint.job = value.get<std::string>();
        if (hint.job.empty() || hint.job.size() > 256) {
          return InvalidArgument("field 'job' must be 1 to 256 characters");
        }
      } else if (name == "paths") {
        if (!value.is_array()) return InvalidArgument("field 'paths' must be a list of paths");
        for (const auto& p : value) {
          std::string path = p.get<std::string>();
          if (!path.starts_with('/')) path = (dataset == "/" ? "/" : dataset + "/") + path;
          Result<std::vector<std::string>> segments = SplitPath(path);
          if (!segments.ok()) return segments.status().WithContext("hinted path");
          hint.paths.push_back(JoinPath(*segments));
        }
      } else if (name == "sampler") {
        hint.sampler = value.get<std::string>();
      } else if (name == "seed") {
        hint.seed = value.get<uint64_t>();
      } else if (name == "epoch") {
        hint.epoch = value.get<uint64_t>();
      } else if (name == "rank") {
        hint.rank = value.get<uint32_t>();
      } else if (name == "world_size") {
        hint.world_size = value.get<uint32_t>();
      } else if (name == "local_world_size") {
        hint.local_world_size = value.get<uint32_t>();
      } else if (name == "append") {
        hint.append = value.get<bool>();
      } else {
        return InvalidArgument("unknown field '" + name.substr(0, 40) + "' in a cache hint");
      }
    }
  } catch (const nlohmann::json::exception&) {
    return InvalidArgument(
        "a cache hint's fields: job (string), paths (list of strings), sampler (string), seed, "
        "epoch, rank, world_size, local_world_size (non-negative integers), append (boolean)");
  }
  return hint;
}

}  // namespace

rest::RestFrontend::CacheControl CacheControlOf(fabric::NeuralCache* neural) {
  rest::RestFrontend::CacheControl control;
  control.stats = [neural] { return nlohmann::ordered_json::parse(neural->StatsJson().dump()); };
  control.hint = [neural](const RequestContext& ctx, const std::string& dataset,
                          const nlohmann::ordered_json& body) -> Result<nlohmann::ordered_json> {
    WEFT_ASSIGN_OR_RETURN(fabric::HintRequest hint, ParseHint(ctx, dataset, body));
    WEFT_ASSIGN_OR_RETURN(fabric::HintResult result, neural->Hint(hint));
    return nlohmann::ordered_json{{"job", hint.job},
                                  {"accepted_items", result.accepted},
                                  {"unknown_paths", result.unknown_count},
                                  {"unknown", result.unknown}};
  };
  return control;
}

Status ParseListenAddress(const std::string& listen, std::string* host, uint16_t* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return InvalidArgument("--listen must be HOST:PORT, not '" + listen + "'");
  }
  std::string h = listen.substr(0, colon);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned long p = 0;
  for (char c : listen.substr(colon + 1)) {
    if (c < '0' || c > '9' || p > 65535) return InvalidArgument("bad port in --listen " + listen);
    p = p * 10 + static_cast<unsigned long>(c - '0');
  }
  if (p > 65535) return InvalidArgument("bad port in --listen " + listen);
  *host = h;
  *port = static_cast<uint16_t>(p);
  return OkStatus();
}

sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

Result<OpenedPortal> OpenPortal(const SpokeOptions& options, const std::string& access_key,
                                const std::string& secret_key) {
  if (options.hub_url.empty()) return InvalidArgument("--hub URL is required");
  if (options.site.empty()) return InvalidArgument("--site NAME is required");
  fabric::PortalVolumeOptions portal_options;
  for (const std::string& text : options.portals) {
    WEFT_ASSIGN_OR_RETURN(fabric::Portal portal, fabric::ParsePortal(text));
    portal_options.portals.push_back(portal);
  }
  portal_options.site = options.site;
  portal_options.stale_ok = options.stale_ok;
  portal_options.cache_bytes = options.cache_bytes;
  portal_options.tags = options.tags;
  if (options.cache_policy != "off") {
    fabric::NeuralCacheOptions neural;
    neural.policy = options.cache_policy;
    if (options.prefetch != std::vector<std::string>{"all"}) neural.experts = options.prefetch;
    neural.link_bytes_per_s = options.wan_mbit * 1e6 / 8;
    neural.rtt_s = options.wan_rtt_ms / 1000;
    portal_options.neural_cache = neural;
  }
  fabric::HubClientOptions hub;
  hub.hub_url = options.hub_url;
  hub.http.ca_file = options.hub_ca_file;
  hub.access_key_id = access_key;
  hub.secret_access_key = secret_key;
  hub.connections = options.connections;
  hub.hub_timeout = options.hub_timeout;

  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(options.cache_dir));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<ChunkStore> packs,
                        OpenPackChunkStore(fs, options.cache_dir + "/packs", PackStoreOptions{}));
  OpenedPortal opened;
  opened.chunks = std::make_shared<CachingChunkStore>(std::move(packs), options.memory_cache_bytes);
  opened.portals = portal_options.portals;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<fabric::HubClient> client, fabric::HubClient::Open(hub));
  WEFT_ASSIGN_OR_RETURN(opened.volume, fabric::PortalVolume::Open(std::move(client), opened.chunks,
                                                                  std::move(portal_options)));
  return opened;
}

namespace {

Result<net::HttpServerOptions> HttpOptions(const std::string& listen, const std::string& cert,
                                           const std::string& key) {
  net::HttpServerOptions http;
  WEFT_RETURN_IF_ERROR(ParseListenAddress(listen, &http.host, &http.port));
  http.tls_cert_file = cert;
  http.tls_key_file = key;
  if (http.tls_cert_file.empty() != http.tls_key_file.empty()) {
    return InvalidArgument("--tls-cert and --tls-key go together");
  }
  return http;
}

// Waits for SIGTERM/SIGINT, then lets requests in flight finish.
void ServeUntilSignal(const sigset_t& signals, net::HttpServer& server,
                      std::chrono::milliseconds grace, FILE* out) {
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(out, "weft: %s: finishing requests in flight\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(out);
  server.Shutdown(grace);
  std::fprintf(out, "weft: stopped\n");
}

// Present once any spoke has attached to the hub in this data directory; holds the longest
// lease (ms) ever granted. After a restart the hub holds mutations that long: spokes may
// still hold leases from before, which it no longer knows.
constexpr const char* kSpokesSeenFile = "/fabric-spokes-seen";

// A server that moved less than kQuietBytes in kIdleCheck hands memory nothing holds back to
// the kernel (base/memory.h). Measured (bench/hub_memory.py: 32 clients putting and getting
// 8 MiB objects for 20 s), resident once quiet: 75 MB with this, 147 MB without.
constexpr std::chrono::seconds kIdleCheck{10};
constexpr uint64_t kQuietBytes = 1 << 20;

std::chrono::milliseconds LongestLeaseGranted(FileSystem* fs, const std::string& path) {
  Result<std::string> text = ReadFileToString(fs, path);
  if (!text.ok()) return std::chrono::milliseconds(0);
  int64_t ms = std::atoll(text->c_str());
  // Unreadable content: assume the longest lease allowed, the safe side.
  return std::chrono::milliseconds(ms > 0 ? ms : 600'000);
}

}  // namespace

Status RunHub(const HubOptions& options, FILE* out) {
  if (options.lease < std::chrono::milliseconds(100) || options.lease > std::chrono::minutes(10)) {
    return InvalidArgument("--lease-ms must be between 100 and 600000");
  }
  WEFT_ASSIGN_OR_RETURN(net::HttpServerOptions http,
                        HttpOptions(options.listen, options.tls_cert_file, options.tls_key_file));
  const sigset_t signals = BlockTerminationSignals();

  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(options.data_dir));
  LocalVolumeOptions engine_options;
  engine_options.chunk_cache_bytes = options.memory_cache_bytes;
  engine_options.metadata_cache_bytes = options.metadata_cache_bytes;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Volume> engine,
                        OpenLocalVolume(options.data_dir, engine_options));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<auth::IdentityStore> identities,
                        OpenIdentityStore(options.data_dir));
  WEFT_RETURN_IF_ERROR(EnsureRootKey(*identities, out));

  // Every front end writes through the coherent volume, which revokes spoke leases first.
  fabric::LeaseTableOptions lease_options;
  lease_options.lease = options.lease;
  const std::string spokes_seen = options.data_dir + kSpokesSeenFile;
  const auto longest = LongestLeaseGranted(fs, spokes_seen);
  if (fs->Exists(spokes_seen)) lease_options.start_grace = std::max(options.lease, longest);
  fabric::LeaseTable leases(lease_options);
  std::unique_ptr<Volume> coherent = fabric::NewCoherentVolume(engine.get(), &leases);
  // The one volume the front ends get: each call authorised against the caller's rules.
  access::AuthorizedVolume volume(coherent.get(), identities.get());
  fabric::HubServiceOptions fabric_options;
  // Recorded before a spoke gets its first lease; if it cannot be, the spoke is refused.
  struct Recorded {
    std::mutex mu;
    std::chrono::milliseconds lease;
  };
  auto recorded = std::make_shared<Recorded>();
  recorded->lease = longest;
  fabric_options.on_attach = [fs, spokes_seen, lease = options.lease, recorded]() -> Status {
    std::lock_guard lock(recorded->mu);
    if (recorded->lease >= lease) return OkStatus();
    WEFT_RETURN_IF_ERROR(WriteFileAtomically(fs, spokes_seen, std::to_string(lease.count()) + "\n")
                             .WithContext("recording that spokes attached"));
    recorded->lease = lease;
    return OkStatus();
  };

  std::unique_ptr<net::AccessLog> access_log;
  if (!options.access_log.empty()) {
    WEFT_ASSIGN_OR_RETURN(access_log, net::AccessLog::Open(options.access_log));
  }
  s3::S3Options s3_options;
  s3_options.region = options.region;
  s3_options.sigv2 = options.sigv2;
  s3_options.access_log = access_log.get();
  s3::S3Frontend s3(volume, s3_options);
  rest::RestFrontend rest(volume);
  fabric::HubService hub_service(&volume, &leases, fabric_options);
  rest.SetSpokesProvider(
      [&hub_service] { return nlohmann::ordered_json::parse(hub_service.SpokesJson().dump()); });
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<access::AuditLog> audit,
                        OpenAuditLog(options.audit_log, options.data_dir));
  rest.SetAuditLog(audit.get());
  Router router(
      &s3, &rest, &hub_service, [&engine] { return CapacityMetrics(*engine); }, audit.get());
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpServer> server,
                        net::HttpServer::Start(http, &router));
  std::fprintf(out,
               "weft: serving S3 at %s (data %s)\n"
               "weft: REST API at %s/_weft/api/v1/, metrics at %s/_weft/metrics\n",
               server->url().c_str(), options.data_dir.c_str(), server->url().c_str(),
               server->url().c_str());
  if (audit) std::fprintf(out, "weft: audit log %s\n", audit->path().c_str());
  std::fflush(out);
  IdleTrimmer trimmer([&router] { return router.BytesMoved(); }, kIdleCheck, kQuietBytes);
  ServeUntilSignal(signals, *server, options.shutdown_grace, out);
  leases.Shutdown();
  return OkStatus();
}

Status RunSpoke(const SpokeOptions& options, FILE* out) {
  WEFT_ASSIGN_OR_RETURN(net::HttpServerOptions http,
                        HttpOptions(options.listen, options.tls_cert_file, options.tls_key_file));
  const char* key = std::getenv("WEFT_HUB_ACCESS_KEY");
  const char* secret = std::getenv("WEFT_HUB_SECRET_KEY");
  if (key == nullptr || secret == nullptr) {
    return InvalidArgument(
        "set WEFT_HUB_ACCESS_KEY and WEFT_HUB_SECRET_KEY to the key of the hub user this spoke "
        "acts as");
  }
  const sigset_t signals = BlockTerminationSignals();

  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(options.cache_dir));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<auth::IdentityStore> identities,
                        OpenIdentityStore(options.cache_dir));
  WEFT_RETURN_IF_ERROR(EnsureRootKey(*identities, out));
  // Chained spokes attach here as to a hub: invalidations from upstream revoke their leases
  // before this spoke acknowledges them. Declared before the portal volume, whose poller
  // calls into it until the portal is destroyed. Like a restarted hub, a restarted spoke lets
  // leases it may have granted before run out before it acknowledges anything.
  fabric::LeaseTableOptions lease_options;
  lease_options.lease = options.lease;
  lease_options.start_grace = options.lease;
  fabric::LeaseTable leases(lease_options);

  WEFT_ASSIGN_OR_RETURN(OpenedPortal opened, OpenPortal(options, key, secret));
  std::unique_ptr<fabric::PortalVolume>& portal = opened.volume;
  portal->SetInvalidationHook(
      [&leases](const fabric::Affected& affected) { auto revocation = leases.Revoke(affected); });
  std::unique_ptr<Volume> coherent = fabric::NewCoherentVolume(portal.get(), &leases);
  // The spoke's own users: authorised here; the hub authorises what the spoke forwards.
  access::AuthorizedVolume volume(coherent.get(), identities.get());

  std::unique_ptr<net::AccessLog> access_log;
  if (!options.access_log.empty()) {
    WEFT_ASSIGN_OR_RETURN(access_log, net::AccessLog::Open(options.access_log));
  }
  s3::S3Options s3_options;
  s3_options.region = options.region;
  s3_options.sigv2 = options.sigv2;
  s3_options.access_log = access_log.get();
  s3::S3Frontend s3(volume, s3_options);
  rest::RestFrontend rest(volume);
  fabric::HubService hub_service(&volume, &leases, {}, portal.get());
  rest.SetSpokesProvider(
      [&hub_service] { return nlohmann::ordered_json::parse(hub_service.SpokesJson().dump()); });
  if (fabric::NeuralCache* neural = portal->neural_cache()) {
    rest.SetCacheControl(CacheControlOf(neural));
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<access::AuditLog> audit,
                        OpenAuditLog(options.audit_log, options.cache_dir));
  rest.SetAuditLog(audit.get());
  Router router(
      &s3, &rest, &hub_service,
      [&portal] {
        std::string text = SpokeMetrics(*portal);
        if (fabric::NeuralCache* neural = portal->neural_cache()) text += neural->MetricsText();
        return text;
      },
      audit.get());
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpServer> server,
                        net::HttpServer::Start(http, &router));
  std::fprintf(out, "weft: spoke '%s' serving S3 at %s (hub %s, cache %s)\n", options.site.c_str(),
               server->url().c_str(), options.hub_url.c_str(), options.cache_dir.c_str());
  for (const fabric::Portal& p : opened.portals) {
    std::fprintf(out, "weft: portal %s -> hub %s\n", p.local_path.c_str(), p.hub_path.c_str());
  }
  if (audit) std::fprintf(out, "weft: audit log %s\n", audit->path().c_str());
  std::fflush(out);
  IdleTrimmer trimmer([&router] { return router.BytesMoved(); }, kIdleCheck, kQuietBytes);
  ServeUntilSignal(signals, *server, options.shutdown_grace, out);
  leases.Shutdown();
  return OkStatus();
}

Status RunWanEmulator(const WanOptions& options, FILE* out) {
  net::WanOptions wan;
  WEFT_RETURN_IF_ERROR(ParseListenAddress(options.listen, &wan.listen_host, &wan.listen_port));
  WEFT_RETURN_IF_ERROR(ParseListenAddress(options.target, &wan.target_host, &wan.target_port)
                           .WithContext("--target"));
  if (options.delay_ms < 0 || options.rate_mbit < 0) {
    return InvalidArgument("--delay-ms and --rate-mbit cannot be negative");
  }
  wan.one_way_delay = std::chrono::microseconds(static_cast<int64_t>(options.delay_ms * 1000));
  wan.rate_bytes_per_second = static_cast<uint64_t>(options.rate_mbit * 1e6 / 8);
  // SIGUSR1 cuts the link and SIGUSR2 restores it, so tests can script an outage.
  sigset_t signals = BlockTerminationSignals();
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGUSR2);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::WanEmulator> emulator, net::WanEmulator::Start(wan));
  if (!options.capture_dir.empty()) emulator->SetCapture(true);
  auto print_bytes = [&] {
    std::fprintf(out, "weft: bytes upstream %llu, downstream %llu, connections %llu\n",
                 static_cast<unsigned long long>(emulator->bytes_upstream()),
                 static_cast<unsigned long long>(emulator->bytes_downstream()),
                 static_cast<unsigned long long>(emulator->connections()));
    std::fflush(out);
  };
  std::fprintf(out, "weft: WAN link %s:%u -> %s, %.1f ms each way, %s\n", wan.listen_host.c_str(),
               emulator->port(), options.target.c_str(), options.delay_ms,
               options.rate_mbit > 0 ? (std::to_string(options.rate_mbit) + " Mbit/s").c_str()
                                     : "no rate limit");
  std::fflush(out);
  for (;;) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number == SIGHUP) {
      print_bytes();
      continue;
    }
    if (signal_number == SIGUSR1 || signal_number == SIGUSR2) {
      emulator->SetLinkUp(signal_number == SIGUSR2);
      std::fprintf(out, "weft: link %s\n", signal_number == SIGUSR2 ? "up" : "down");
      std::fflush(out);
      continue;
    }
    break;
  }
  emulator->Stop();
  if (!options.capture_dir.empty()) {
    FileSystem* fs = PosixFileSystem();
    WEFT_RETURN_IF_ERROR(fs->CreateDirs(options.capture_dir));
    WEFT_RETURN_IF_ERROR(WriteFileAtomically(fs, options.capture_dir + "/upstream.bin",
                                             emulator->captured_upstream()));
    WEFT_RETURN_IF_ERROR(WriteFileAtomically(fs, options.capture_dir + "/downstream.bin",
                                             emulator->captured_downstream()));
    if (emulator->capture_overflowed()) {
      std::fprintf(out, "weft: capture overflowed; it holds only the first bytes\n");
    }
  }
  print_bytes();
  return OkStatus();
}

}  // namespace weft::server
