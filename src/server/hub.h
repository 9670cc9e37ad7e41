// The hub's composition root: opens the engine, the identity store and the server key in one
// data directory, puts the S3 front end and Weft's own endpoints (/_weft/healthz,
// /_weft/metrics, /_weft/api/v1/) behind one HTTP server, and runs until SIGTERM or SIGINT,
// then finishes requests in flight. `weft serve` calls RunHub.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"

namespace weft::server {

struct HubOptions {
  std::string data_dir = "./weft-data";
  std::string listen = "127.0.0.1:9000";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string region = "us-east-1";
  // Accept S3 Signature Version 2 (header and presigned) besides SigV4.
  bool sigv2 = true;
  // Where S3 writes a line per request ("-": standard error; empty: nowhere).
  std::string access_log;
  // The hash-chained audit log of every request ("": audit.log in the data or cache
  // directory; "off": none).
  std::string audit_log;
  std::chrono::milliseconds shutdown_grace{30'000};
  // How long a spoke may answer from its metadata cache without hearing from the hub.
  std::chrono::milliseconds lease{5'000};
  uint64_t memory_cache_bytes = 256ull << 20;   // recently read chunks kept in memory (0: none)
  uint64_t metadata_cache_bytes = 80ull << 20;  // the metadata store's caches
};

// A spoke: S3, REST and the fabric protocol (for chained spokes) over a PortalVolume that
// extends hub directories. The hub user's key comes from WEFT_HUB_ACCESS_KEY and
// WEFT_HUB_SECRET_KEY; local clients sign with the spoke's own root key (WEFT_ROOT_ACCESS_KEY /
// WEFT_ROOT_SECRET_KEY, or generated and printed on the first start, as for the hub).
struct SpokeOptions {
  std::string hub_url;
  std::string hub_ca_file;  // PEM CA certificates for an https:// hub
  std::string cache_dir = "./weft-cache";
  uint64_t cache_bytes = 64ull << 30;  // chunk bytes kept; least recently used go first
  std::string site;
  std::vector<std::string> tags;
  std::vector<std::string> portals;  // "HUBPATH[:LOCALPATH]"
  std::string listen = "127.0.0.1:9100";
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string region = "us-east-1";
  // Accept S3 Signature Version 2 (header and presigned) besides SigV4.
  bool sigv2 = true;
  // Where S3 writes a line per request ("-": standard error; empty: nowhere).
  std::string access_log;
  // The hash-chained audit log of every request ("": audit.log in the data or cache
  // directory; "off": none).
  std::string audit_log;
  size_t connections = 8;
  std::chrono::milliseconds hub_timeout{10'000};
  bool stale_ok = false;                   // serve expired metadata when the hub is unreachable
  std::chrono::milliseconds lease{5'000};  // granted to spokes chained to this one
  // NeuralCache: the eviction policy ("off": plain LRU over chunks, no prefetching), the
  // prefetch experts ("all", "none" or a comma list), and the link the prefetcher plans for.
  std::string cache_policy = "neural";
  std::vector<std::string> prefetch = {"all"};
  double wan_mbit = 1000;
  double wan_rtt_ms = 20;
  std::chrono::milliseconds shutdown_grace{30'000};
  uint64_t memory_cache_bytes = 256ull << 20;  // recently read chunks kept in memory (0: none)
};

Status RunSpoke(const SpokeOptions& options, FILE* out);

// `weft dev wan`: a WanEmulator between --listen and --target until SIGTERM/SIGINT; SIGUSR1
// cuts the link, SIGUSR2 restores it.
struct WanOptions {
  std::string listen = "127.0.0.1:9001";
  std::string target;
  double delay_ms = 20;
  double rate_mbit = 0;
  // Record every byte that crosses; written to DIR/upstream.bin and DIR/downstream.bin at exit.
  std::string capture_dir;
};
Status RunWanEmulator(const WanOptions& options, FILE* out);

// Serves until a termination signal. Prints one line with the URL once listening (and, on the
// very first start without WEFT_ROOT_ACCESS_KEY/WEFT_ROOT_SECRET_KEY, the generated root key).
Status RunHub(const HubOptions& options, FILE* out);

// "host:port" -> parts; InvalidArgument when malformed.
Status ParseListenAddress(const std::string& listen, std::string* host, uint16_t* port);

}  // namespace weft::server
