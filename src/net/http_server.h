// HttpServer: Weft's HTTP/1.1 server (Boost.Beast on Asio, optional TLS through OpenSSL) and the
// handler interface every HTTP front end (S3, REST, metrics) implements.
// Idle connections wait for a request head on an Asio io_context thread; once a head has
// arrived the request runs on a worker pool, where the handler reads the body and writes the
// response with blocking calls, so handlers are plain synchronous code over the Volume API.
// HttpServer is thread-safe; a BodyReader and a ResponseWriter belong to one request and are
// used from the handler's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace weft::net {

struct HttpHeader {
  std::string name;  // as received / as to be sent
  std::string value;
};

// A request whose head has been parsed; its body is read through a BodyReader.
struct HttpRequest {
  std::string method;                      // "GET", as received
  std::string target;                      // the raw request-target ("/b/k%20x?list-type=2")
  std::string path;                        // target up to '?', still percent-encoded
  std::string query;                       // raw query after '?', "" if none
  std::vector<HttpHeader> headers;         // in arrival order
  std::optional<uint64_t> content_length;  // absent for chunked or no body
  bool chunked = false;                    // Transfer-Encoding: chunked
  std::string remote_address;              // "127.0.0.1:53422"
  bool tls = false;

  // The first value of header `name` (ASCII case-insensitive), if present.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// The body of one request. Reads block until data arrives.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Reads up to out.size() bytes into `out`; 0 at the end of the body. InvalidArgument
  // (Reason::kIncompleteBody) when the peer stops sending before the declared length, or the
  // chunked encoding is malformed; the request must then fail and change nothing.
  virtual Result<size_t> Read(std::span<char> out) = 0;
  // Bytes of body consumed so far.
  virtual uint64_t bytes_read() const = 0;
};

// The response to one request: Start once, then Write any number of times, then Finish.
// Who a request turned out to come from and what it asked, as its front end tells the server
// once it knows (the audit log records it with the answer).
struct RequestDescription {
  std::string principal;  // "" before (or without) authentication
  std::string operation;  // the protocol's name for it ("GetObject", "lookup", "POST")
  std::string site;       // "local", or the spoke a fabric call comes from
  std::string request_id;
  // Whether it may change something (unset: any method but GET and HEAD may): the audit log
  // then has its record in the file before the answer starts.
  std::optional<bool> changes = std::nullopt;
};

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // Tells the server what the request is (see RequestDescription); a later call replaces an
  // earlier one. Front ends call it before they start the answer; wrappers pass it on.
  virtual void Describe(const RequestDescription& /*description*/) {}
  // Sends the status line and headers. With `content_length` the body must be exactly that
  // long; without it the body is sent chunked. Date, Server and Connection are added here.
  virtual Status Start(int status, const std::vector<HttpHeader>& headers,
                       std::optional<uint64_t> content_length) = 0;
  // Sends `pieces` in order as one gather write: a window of chunks costs one system call.
  virtual Status Write(std::span<const std::string_view> pieces) = 0;
  Status Write(std::string_view data) { return Write(std::span(&data, 1)); }
  virtual Status Finish() = 0;
  virtual bool started() const = 0;

  // Start + Write + Finish for a body held in memory.
  Status Send(int status, const std::vector<HttpHeader>& headers, std::string_view body);
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Serves one request on a worker thread; called concurrently for different connections.
  // The handler answers through `response`. If it returns without starting a response the
  // server answers 500. If it leaves body bytes unread, an error response (4xx, 5xx) closes
  // the connection without waiting for them (as S3 does: a refused client gets its answer at
  // once and holds nothing); after a success the server drains a small remainder that arrives
  // within a second, or closes the connection.
  virtual void Handle(const HttpRequest& request, BodyReader& body, ResponseWriter& response) = 0;

  // Answers a request the server rejected before any handler ran (status 400 "BadRequest",
  // 400 "RequestHeaderSectionTooLarge", 413, 501 ...), so the client gets the front end's own
  // error format. The default sends `message` as text/plain.
  virtual void HandleProtocolError(int status, std::string_view code, std::string_view message,
                                   ResponseWriter& response);
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = any free port (see HttpServer::port())
  // Both set = serve HTTPS only. PEM files.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest request head (request line + headers) accepted; larger gets
  // 400 RequestHeaderSectionTooLarge and the connection is closed.
  size_t max_header_bytes = 16 << 10;
  // Threads kept ready for requests. When every one is busy (a request may be waiting on a
  // slow client's body, or on a client that stopped reading its response) another starts, up
  // to max_worker_threads, so slow clients cannot stop the others; threads beyond
  // worker_threads exit after a few idle seconds.
  size_t worker_threads = 32;
  size_t max_worker_threads = 1024;
  size_t io_threads = 1;
  size_t max_connections = 4096;
  std::chrono::seconds idle_timeout{120};  // keep-alive connections idle longer are closed
  // A request head must be complete this long after its first byte arrived (it waits on an io
  // thread, holding no worker).
  std::chrono::seconds header_timeout{20};
  // A request body may stall at most body_timeout between two reads, and must average
  // min_body_rate bytes/s after its first body_timeout (Apache's mod_reqtimeout
  // "body=20,MinRate=500"); a body that falls behind fails with IncompleteBody and its
  // connection closes, so a client dripping bytes holds a worker for seconds, not hours.
  std::chrono::seconds body_timeout{20};
  uint64_t min_body_rate = 500;
  // Each write of a response must make progress within this (a client that stopped reading);
  // a large response to a slow reader takes as long as it needs.
  std::chrono::seconds send_timeout{60};
};

class HttpServer {
 public:
  // Binds and starts serving; returns once the port accepts connections. The handler must
  // outlive the server.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                   HttpHandler* handler);
  virtual ~HttpServer() = default;  // implementations Shutdown(0s) first

  virtual uint16_t port() const = 0;
  // "http://127.0.0.1:8080" or "https://...".
  virtual std::string url() const = 0;
  // Stops accepting, closes idle connections, waits up to `grace` for requests in flight to
  // finish, then closes the rest. Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace weft::net
