// The hub's composition root: opens the engine, the identity store and the server key in one
// data directory, puts the S3 front end and Weft's own endpoints (/_weft/healthz,
// /_weft/metrics, /_weft/api/v1/) behind one HTTP server, and runs until SIGTERM or SIGINT,
// then finishes requests in flight. `weft serve` calls RunHub.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "base/status.h"

namespace weft::server {

struct HubOptions {
  std::string data_dir = "./weft-data";
  std::string listen = "127.0.0.1:9000";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string region = "us-east-1";
  std::chrono::milliseconds shutdown_grace{30'000};
};

// Serves until a termination signal. Prints one line with the URL once listening (and, on the
// very first start without WEFT_ROOT_ACCESS_KEY/WEFT_ROOT_SECRET_KEY, the generated root key).
Status RunHub(const HubOptions& options, FILE* out);

// "host:port" -> parts; InvalidArgument when malformed.
Status ParseListenAddress(const std::string& listen, std::string* host, uint16_t* port);

}  // namespace weft::server
