#include "server/router.h"

#include <algorithm>
#include <chrono>
#include <string_view>

#include "net/access_log.h"

namespace weft::server {
namespace {

constexpr std::array<std::string_view, 6> kMethodNames = {"GET",    "PUT",  "HEAD",
                                                          "DELETE", "POST", "other"};

size_t MethodIndex(std::string_view method) {
  for (size_t i = 0; i + 1 < kMethodNames.size(); ++i) {
    if (kMethodNames[i] == method) return i;
  }
  return kMethodNames.size() - 1;
}

}  // namespace

Router::Router(net::HttpHandler* s3, net::HttpHandler* rest, net::HttpHandler* fabric,
               std::function<std::string()> extra_metrics)
    : s3_(s3), rest_(rest), fabric_(fabric), extra_metrics_(std::move(extra_metrics)) {}

void Router::HandleProtocolError(int status, std::string_view code, std::string_view message,
                                 net::ResponseWriter& response) {
  protocol_errors_++;
  s3_->HandleProtocolError(status, code, message, response);
}

void Router::Handle(const net::HttpRequest& request, net::BodyReader& body,
                    net::ResponseWriter& response) {
  auto start = std::chrono::steady_clock::now();
  in_flight_++;
  net::RecordingWriter counted(response);
  std::string_view path = request.path;
  if (path == "/_weft/healthz") {
    (void)counted.Send(200, {{"Content-Type", "text/plain"}}, "ok\n");
  } else if (path == "/_weft/metrics") {
    (void)counted.Send(200, {{"Content-Type", "text/plain; version=0.0.4"}}, MetricsText());
  } else if (path.starts_with("/_weft/api/") && rest_ != nullptr) {
    rest_->Handle(request, body, counted);
  } else if (path.starts_with("/_weft/fabric/") && fabric_ != nullptr) {
    fabric_->Handle(request, body, counted);
  } else if (path.starts_with("/_weft/")) {
    (void)counted.Send(404, {{"Content-Type", "application/json"}},
                       R"({"error":"NotFound","message":"no such Weft endpoint"})");
  } else {
    s3_->Handle(request, body, counted);
  }
  size_t status_class = static_cast<size_t>(std::clamp(counted.status() / 100, 1, 5) - 1);
  requests_[MethodIndex(request.method)][status_class]++;
  bytes_in_ += body.bytes_read();
  bytes_out_ += counted.bytes();
  in_flight_--;
  request_seconds_micros_ +=
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count());
}

std::string Router::MetricsText() const {
  std::string out;
  out += "# HELP weft_http_requests_total HTTP requests served, by method and status class.\n";
  out += "# TYPE weft_http_requests_total counter\n";
  for (size_t m = 0; m < kMethods; ++m) {
    for (size_t c = 0; c < kClasses; ++c) {
      out += "weft_http_requests_total{method=\"" + std::string(kMethodNames[m]) + "\",code=\"" +
             std::to_string(c + 1) + "xx\"} " + std::to_string(requests_[m][c].load()) + "\n";
    }
  }
  auto counter = [&](std::string_view name, std::string_view help, std::string value,
                     std::string_view type = "counter") {
    out += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
    out += "# TYPE " + std::string(name) + " " + std::string(type) + "\n";
    out += std::string(name) + " " + value + "\n";
  };
  counter("weft_http_request_bytes_total", "Request body bytes read.",
          std::to_string(bytes_in_.load()));
  counter("weft_http_response_bytes_total", "Response body bytes sent.",
          std::to_string(bytes_out_.load()));
  counter("weft_http_protocol_errors_total",
          "Requests rejected before a handler ran (malformed, headers too large).",
          std::to_string(protocol_errors_.load()));
  counter("weft_http_request_seconds_total", "Time spent serving requests.",
          std::to_string(static_cast<double>(request_seconds_micros_.load()) / 1e6));
  counter("weft_http_requests_in_flight", "Requests being served now.",
          std::to_string(in_flight_.load()), "gauge");
  if (extra_metrics_) out += extra_metrics_();
  return out;
}

}  // namespace weft::server
