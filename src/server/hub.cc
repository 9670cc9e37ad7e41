#include "server/hub.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>

#include "auth/identity_store.h"
#include "frontends/rest/rest_frontend.h"
#include "frontends/s3/s3_frontend.h"
#include "io/file_system.h"
#include "net/http_server.h"
#include "server/identity.h"
#include "server/router.h"
#include "vfs/local_volume.h"

namespace weft::server {
namespace {

// Root's key: from the environment when set (and then kept in sync), otherwise generated on
// the first start and printed once; the identity store keeps it (secret encrypted).
Status EnsureRootKey(auth::IdentityStore& identities, FILE* out) {
  const char* access = std::getenv("WEFT_ROOT_ACCESS_KEY");
  const char* secret = std::getenv("WEFT_ROOT_SECRET_KEY");
  if ((access == nullptr) != (secret == nullptr)) {
    return InvalidArgument("set both WEFT_ROOT_ACCESS_KEY and WEFT_ROOT_SECRET_KEY, or neither");
  }
  if (access != nullptr) {
    return identities.ImportKey(auth::kRootUser, access, secret).status();
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

}  // namespace

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

Status RunHub(const HubOptions& options, FILE* out) {
  net::HttpServerOptions http;
  WEFT_RETURN_IF_ERROR(ParseListenAddress(options.listen, &http.host, &http.port));
  http.tls_cert_file = options.tls_cert_file;
  http.tls_key_file = options.tls_key_file;
  if (http.tls_cert_file.empty() != http.tls_key_file.empty()) {
    return InvalidArgument("--tls-cert and --tls-key go together");
  }

  // Signals are taken by sigwait below, so block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(options.data_dir));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Volume> volume, OpenLocalVolume(options.data_dir));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<auth::IdentityStore> identities,
                        OpenIdentityStore(options.data_dir));
  WEFT_RETURN_IF_ERROR(EnsureRootKey(*identities, out));

  s3::S3Options s3_options;
  s3_options.region = options.region;
  s3::S3Frontend s3(*volume, *identities, s3_options);
  rest::RestFrontend rest(*volume, *identities);
  Router router(&s3, &rest, [&volume] { return CapacityMetrics(*volume); });
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpServer> server,
                        net::HttpServer::Start(http, &router));
  std::fprintf(out,
               "weft: serving S3 at %s (data %s)\n"
               "weft: REST API at %s/_weft/api/v1/, metrics at %s/_weft/metrics\n",
               server->url().c_str(), options.data_dir.c_str(), server->url().c_str(),
               server->url().c_str());
  std::fflush(out);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(out, "weft: %s: finishing requests in flight\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(out);
  server->Shutdown(options.shutdown_grace);
  std::fprintf(out, "weft: stopped\n");
  return OkStatus();
}

}  // namespace weft::server
