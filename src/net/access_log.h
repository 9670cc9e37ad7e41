// AccessLog: one line per request (logfmt: time, request id, principal, operation, path,
// status, body bytes sent, latency), appended to a file or standard error, so a failure can be
// diagnosed from the server's side. RecordingWriter wraps a ResponseWriter to learn the status
// and the bytes. Thread-safe: lines from concurrent requests never interleave.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"
#include "net/http_server.h"

namespace weft::net {

struct AccessRecord {
  int64_t time_ns = 0;  // when the request arrived
  std::string request_id;
  std::string principal;
  std::string operation;  // "GET object?tagging"
  std::string path;
  int status = 0;
  uint64_t bytes = 0;  // body bytes sent
  int64_t latency_ns = 0;
};

class AccessLog {
 public:
  // "-" is standard error; any other path is opened for appending (created 0640).
  static Result<std::unique_ptr<AccessLog>> Open(const std::string& path);
  ~AccessLog();
  void Write(const AccessRecord& record);
  // The line Write appends for `record` (without the newline).
  static std::string Format(const AccessRecord& record);

 private:
  explicit AccessLog(int fd, bool owned) : fd_(fd), owned_(owned) {}
  std::mutex mu_;
  int fd_;
  bool owned_;
};

// Passes everything to `inner` and remembers the status and the body bytes written (the
// access log, the server's metrics). A handler that never starts a response gets the
// server's 500.
class RecordingWriter final : public ResponseWriter {
 public:
  explicit RecordingWriter(ResponseWriter& inner) : inner_(inner) {}
  Status Start(int status, const std::vector<HttpHeader>& headers,
               std::optional<uint64_t> content_length) override {
    status_ = status;
    return inner_.Start(status, headers, content_length);
  }
  using ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override {
    for (std::string_view p : pieces) bytes_ += p.size();
    return inner_.Write(pieces);
  }
  Status Finish() override { return inner_.Finish(); }
  bool started() const override { return inner_.started(); }
  void Describe(const RequestDescription& d) override { inner_.Describe(d); }
  int status() const { return status_; }
  uint64_t bytes() const { return bytes_; }

 private:
  ResponseWriter& inner_;
  int status_ = 500;
  uint64_t bytes_ = 0;
};

}  // namespace weft::net
