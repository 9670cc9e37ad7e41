// Router: the one HttpHandler the hub's server runs. Weft's own endpoints live under /_weft/
// (a path no bucket can take); everything else is S3. It also keeps the request counters that
// /_weft/metrics exposes in Prometheus text format. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "access/audit_log.h"
#include "net/http_server.h"

namespace weft::server {

class Router : public net::HttpHandler {
 public:
  // `s3` serves every non-/_weft/ path; `rest` (may be null) serves /_weft/api/; `fabric`
  // (may be null) serves /_weft/fabric/, the hub-spoke protocol; `extra_metrics` appends
  // gauges (capacity, dedup, spokes) to /_weft/metrics.
  // With `audit` (may be null), every request it serves is recorded there before its answer
  // starts, whichever front end answers it: none can leave a request out.
  Router(net::HttpHandler* s3, net::HttpHandler* rest, net::HttpHandler* fabric,
         std::function<std::string()> extra_metrics = {}, access::AuditLog* audit = nullptr);

  void Handle(const net::HttpRequest& request, net::BodyReader& body,
              net::ResponseWriter& response) override;
  void HandleProtocolError(int status, std::string_view code, std::string_view message,
                           net::ResponseWriter& response) override;

  std::string MetricsText() const;
  // Request and response body bytes so far.
  uint64_t BytesMoved() const { return bytes_in_.load() + bytes_out_.load(); }

 private:
  static constexpr size_t kMethods = 6;  // GET PUT HEAD DELETE POST other
  static constexpr size_t kClasses = 5;  // 1xx..5xx
  net::HttpHandler* s3_;
  net::HttpHandler* rest_;
  net::HttpHandler* fabric_;
  std::function<std::string()> extra_metrics_;
  access::AuditLog* audit_;
  std::atomic<uint64_t> next_request_ = 1;
  std::atomic<uint64_t> audit_failures_ = 0;
  std::array<std::array<std::atomic<uint64_t>, kClasses>, kMethods> requests_{};
  std::atomic<uint64_t> bytes_in_ = 0;
  std::atomic<uint64_t> bytes_out_ = 0;
  std::atomic<int64_t> in_flight_ = 0;
  std::atomic<uint64_t> protocol_errors_ = 0;
  std::atomic<uint64_t> request_seconds_micros_ = 0;
};

}  // namespace weft::server
