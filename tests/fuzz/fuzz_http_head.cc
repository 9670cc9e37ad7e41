// Fuzzes the HTTP/1.1 request parsing of net::HttpServer (Beast's parser plus Weft's framing:
// Content-Length and chunked bodies, Expect, Transfer-Encoding, keep-alive, pipelining). The
// parser is private to http_server.cc, so the input goes over a real loopback connection to one
// server started for the whole run: connect, send the bytes, half-close, read until the server
// closes. The handler echoes what it parsed and checks it.
//
// Checks: the server answers with an HTTP/1.1 status line or not at all, and it closes the
// connection once the client has finished sending (a hang here would hold a worker forever).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "net/http_server.h"

namespace weft::net {
namespace {

constexpr size_t kMaxEcho = 1 << 20;
constexpr int kReadTimeoutSeconds = 10;

class EchoHandler : public HttpHandler {
 public:
  void Handle(const HttpRequest& request, BodyReader& body, ResponseWriter& response) override {
    FUZZ_CHECK(request.target.substr(0, request.target.find('?')) == request.path,
               "path '%s' is not the target's path", request.path.c_str());
    FUZZ_CHECK(!(request.chunked && request.content_length), "both chunked and a length");
    std::string echo = request.method + " " + request.target + "\n";
    for (const HttpHeader& h : request.headers) echo += h.name + ": " + h.value + "\n";
    echo += "\n";
    char buf[4096];
    uint64_t total = 0;
    while (total < kMaxEcho) {
      Result<size_t> n = body.Read(std::span<char>(buf, sizeof buf));
      if (!n.ok()) {
        (void)response.Send(400, {{"Content-Type", "text/plain"}}, n.status().ToString());
        return;
      }
      if (*n == 0) break;
      FUZZ_CHECK(*n <= sizeof buf, "Read overflowed its buffer");
      total += *n;
      echo.append(buf, *n);
    }
    FUZZ_CHECK(total == body.bytes_read(), "bytes_read %llu != %llu read",
               static_cast<unsigned long long>(body.bytes_read()),
               static_cast<unsigned long long>(total));
    if (request.content_length && total < kMaxEcho) {
      FUZZ_CHECK(total == *request.content_length, "read %llu of a %llu-byte body",
                 static_cast<unsigned long long>(total),
                 static_cast<unsigned long long>(*request.content_length));
    }
    (void)response.Send(200, {{"Content-Type", "text/plain"}}, echo);
  }
};

HttpServer& Server() {
  static EchoHandler handler;
  static std::unique_ptr<HttpServer> server = [] {
    HttpServerOptions options;
    options.worker_threads = 2;
    Result<std::unique_ptr<HttpServer>> started = HttpServer::Start(options, &handler);
    FUZZ_CHECK(started.ok(), "HttpServer::Start: %s", started.status().ToString().c_str());
    return std::move(started).value();
  }();
  return *server;
}

void FuzzOne(const uint8_t* data, size_t size) {
  HttpServer& server = Server();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  FUZZ_CHECK(fd >= 0, "socket: errno %d", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0,
             "connect: errno %d", errno);
  timeval timeout{kReadTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);

  // The server may answer and close before it has read everything (a bad head): stop sending
  // then, without SIGPIPE.
  for (size_t sent = 0; sent < size;) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);

  std::string reply;
  char buf[16 << 10];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
      continue;
    }
    // ECONNRESET: the server closed with our bytes unread, which is allowed.
    FUZZ_CHECK(n == 0 || errno == ECONNRESET,
               "the server did not close the connection within %d s after the client finished "
               "(errno %d)",
               kReadTimeoutSeconds, errno);
    break;
  }
  ::close(fd);
  FUZZ_CHECK(reply.empty() || std::string_view(reply).starts_with("HTTP/1.1 "),
             "the reply does not start with a status line: %.64s", reply.c_str());
}

}  // namespace
}  // namespace weft::net

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::net::FuzzOne(data, size);
  return 0;
}
