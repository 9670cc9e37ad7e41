// HttpClient: a small synchronous HTTP/1.1 client (Boost.Beast; TLS through OpenSSL with
// certificate and host-name verification) for talking to a Weft hub from the CLI and tools.
// One client holds one keep-alive connection to one origin and reconnects when it is closed.
// Not thread-safe: use one client per thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "net/http_server.h"

namespace weft::net {

struct HttpClientOptions {
  // PEM file of CA certificates to trust for https://; empty = the system's trust store.
  std::string ca_file;
  // Skip certificate and host-name verification (tests and debugging only).
  bool insecure = false;
  // Deadline for each Send: connecting, the TLS handshake, writing and reading together.
  std::chrono::milliseconds timeout{30'000};
  // A longer response body fails the request rather than filling memory.
  size_t max_body_bytes = 64 << 20;
};

struct HttpResponse {
  int status = 0;
  std::vector<HttpHeader> headers;  // in arrival order
  std::string body;

  // The first value of header `name` (ASCII case-insensitive), if present.
  std::optional<std::string_view> Header(std::string_view name) const;
};

class HttpClient {
 public:
  // `url` is "http://host[:port]" or "https://host[:port]" (a trailing '/' is allowed; IPv6
  // hosts in brackets). Connects lazily, on the first Send. InvalidArgument for a malformed
  // URL or an unreadable ca_file.
  static Result<std::unique_ptr<HttpClient>> Open(std::string_view url,
                                                  const HttpClientOptions& options = {});
  virtual ~HttpClient() = default;

  // Sends one request (`target` is the path and query, "/x?y=1") with Host, User-Agent and
  // Content-Length added, and reads the whole response. A keep-alive connection the server
  // closed while idle is replaced once, transparently. Errors: Unavailable for "cannot
  // connect to ...", TLS failures (naming why the certificate was refused), timeouts and
  // broken connections; the connection is then dropped and the next Send reconnects.
  virtual Result<HttpResponse> Send(std::string_view method, std::string_view target,
                                    const std::vector<HttpHeader>& headers,
                                    std::string_view body) = 0;

  // The origin, normalised: "https://example.com:9000".
  virtual const std::string& url() const = 0;
};

}  // namespace weft::net
