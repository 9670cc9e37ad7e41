// In-memory fakes of a request body and a response for unit tests of HTTP front ends (S3,
// REST) that call HttpHandler::Handle directly, without sockets. One test thread at a time.
#pragma once

#include <map>
#include <string>

#include "base/ascii.h"
#include "net/http_server.h"
#include "net/in_process.h"  // StringBodyReader

namespace weft::net {

// Records the response: status, headers (names lower-cased) and body.
class RecordingResponseWriter : public ResponseWriter {
 public:
  Status Start(int status, const std::vector<HttpHeader>& headers,
               std::optional<uint64_t>) override {
    status_ = status;
    for (const auto& h : headers) {
      headers_[AsciiLower(h.name)] = h.value;
    }
    started_ = true;
    return OkStatus();
  }
  using ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override {
    for (std::string_view piece : pieces) body_ += piece;
    return OkStatus();
  }
  Status Finish() override { return OkStatus(); }
  bool started() const override { return started_; }

  int status_ = 0;
  std::map<std::string, std::string> headers_;
  std::string body_;
  bool started_ = false;
};

}  // namespace weft::net
