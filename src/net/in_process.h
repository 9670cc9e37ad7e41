// InProcessLink: an HttpClient that hands each request straight to an HttpHandler in the same
// process - no sockets, no threads of its own. Whatever speaks HTTP through HttpClient (a
// spoke's HubClient) can run against a server's handler (HubService) in one process, as a
// simulation or a unit test does; the handler sees the same requests it would over a socket.
// The link can be cut (every Send fails as a refused connection would) and counts the bytes
// it carried. Thread-safe: clients of one link may Send from any thread, as the handler
// allows.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "net/http_client.h"
#include "net/http_server.h"

namespace weft::net {

// A request body read from memory the caller keeps alive while it is read.
class StringBodyReader : public BodyReader {
 public:
  explicit StringBodyReader(std::string_view data) : data_(data) {}
  Result<size_t> Read(std::span<char> out) override;
  uint64_t bytes_read() const override { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

class InProcessLink {
 public:
  // `handler` must outlive the link and every client it opened.
  explicit InProcessLink(HttpHandler* handler, std::string url = "http://in-process")
      : handler_(handler), url_(std::move(url)) {}

  // A client over this link (as HttpClient::Open gives one over a socket).
  std::unique_ptr<HttpClient> Connect();

  // A cut link refuses every request with Unavailable until it is joined again.
  void Cut() { cut_ = true; }
  void Join() { cut_ = false; }

  uint64_t requests() const { return requests_; }
  uint64_t bytes_sent() const { return bytes_sent_; }          // request bodies
  uint64_t bytes_received() const { return bytes_received_; }  // response bodies

 private:
  friend class InProcessClient;
  HttpHandler* const handler_;
  const std::string url_;
  std::atomic<bool> cut_ = false;
  std::atomic<uint64_t> requests_ = 0;
  std::atomic<uint64_t> bytes_sent_ = 0;
  std::atomic<uint64_t> bytes_received_ = 0;
};

}  // namespace weft::net
