#include "server/router.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string_view>

#include "base/clock.h"
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

// Writes the request's audit record when its answer starts (so no answer goes out unrecorded),
// with what the front end described; a request that fails to be recorded is answered 503.
class AuditingWriter final : public net::ResponseWriter {
 public:
  // `changes`: the request may change something, so its answer waits for its record to be in
  // the file; a read's record follows within a millisecond.
  AuditingWriter(net::ResponseWriter& inner, access::AuditLog& log, access::AuditRecord record,
                 const net::BodyReader& body, bool changes, std::atomic<uint64_t>& failures)
      : inner_(inner),
        log_(log),
        record_(std::move(record)),
        body_(body),
        changes_(changes),
        failures_(failures) {}

  void Describe(const net::RequestDescription& d) override {
    record_.principal = d.principal;
    record_.operation = d.operation;
    if (!d.site.empty()) record_.site = d.site;
    if (!d.request_id.empty()) record_.request_id = d.request_id;
    if (d.changes) changes_ = *d.changes;
    inner_.Describe(d);
  }
  Status Start(int status, const std::vector<net::HttpHeader>& headers,
               std::optional<uint64_t> content_length) override {
    record_.status = status;
    record_.bytes_in = body_.bytes_read();
    record_.bytes_out = content_length.value_or(0);
    Status logged = log_.Append(record_, changes_);
    recorded_ = true;
    if (!logged.ok()) {
      failures_++;
      // An unrecorded success does not go out: the client sees a server error, not a success.
      // A refusal or failure changed nothing and goes out as it is (a full disk's 507 says
      // more than a 503 would).
      if (status < 400) {
        return inner_.Start(503, {{"Content-Type", "text/plain"}, {"Retry-After", "1"}}, 0);
      }
    }
    return inner_.Start(status, headers, content_length);
  }
  using ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override { return inner_.Write(pieces); }
  Status Finish() override { return inner_.Finish(); }
  bool started() const override { return inner_.started(); }
  // A handler that never answered: the server's 500, recorded here.
  void RecordUnanswered() {
    if (recorded_) return;
    record_.status = 500;
    record_.bytes_in = body_.bytes_read();
    if (!log_.Append(record_, changes_).ok()) failures_++;
  }

 private:
  net::ResponseWriter& inner_;
  access::AuditLog& log_;
  access::AuditRecord record_;
  const net::BodyReader& body_;
  bool changes_;
  std::atomic<uint64_t>& failures_;
  bool recorded_ = false;
};

// The request target as the audit log keeps it: without the query parameters that carry
// credentials (a presigned URL's signature is a key to the object until it expires).
std::string AuditedTarget(const net::HttpRequest& request) {
  const size_t q = request.target.find('?');
  std::string out = request.target.substr(0, std::min(q, size_t{4096}));
  if (q == std::string::npos) return out;
  std::string_view query = std::string_view(request.target).substr(q + 1);
  char sep = '?';
  while (!query.empty() && out.size() < 4096) {
    const size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param.starts_with("X-Amz-") || param.starts_with("Signature=") ||
        param.starts_with("AWSAccessKeyId=") || param.starts_with("Expires=")) {
      continue;
    }
    out.push_back(sep);
    out.append(param);
    sep = '&';
  }
  return out.substr(0, 4096);
}

std::string_view ProtocolOf(std::string_view path) {
  if (path.starts_with("/_weft/api/")) return "rest";
  if (path.starts_with("/_weft/fabric/")) return "fabric";
  if (path.starts_with("/_weft/")) return "weft";
  return "s3";
}

}  // namespace

Router::Router(net::HttpHandler* s3, net::HttpHandler* rest, net::HttpHandler* fabric,
               std::function<std::string()> extra_metrics, access::AuditLog* audit)
    : s3_(s3),
      rest_(rest),
      fabric_(fabric),
      extra_metrics_(std::move(extra_metrics)),
      audit_(audit) {}

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
  std::optional<AuditingWriter> audited;
  std::string_view path = request.path;
  // Health checks and metrics scrapes are not requests for data: not audited.
  if (audit_ != nullptr && path != "/_weft/healthz" && path != "/_weft/metrics") {
    access::AuditRecord record;
    record.time_ns = SystemClock::Default()->NowNanos();
    record.protocol = std::string(ProtocolOf(path));
    record.site = "local";
    record.operation = request.method;
    record.path = AuditedTarget(request);
    record.client = request.remote_address;
    char id[24];
    snprintf(id, sizeof id, "W%015llX", static_cast<unsigned long long>(next_request_++));
    record.request_id = id;
    const bool changes = request.method != "GET" && request.method != "HEAD";
    audited.emplace(counted, *audit_, std::move(record), body, changes, audit_failures_);
  }
  net::ResponseWriter& out = audited ? static_cast<net::ResponseWriter&>(*audited) : counted;
  if (path == "/_weft/healthz") {
    (void)out.Send(200, {{"Content-Type", "text/plain"}}, "ok\n");
  } else if (path == "/_weft/metrics") {
    (void)out.Send(200, {{"Content-Type", "text/plain; version=0.0.4"}}, MetricsText());
  } else if (path.starts_with("/_weft/api/") && rest_ != nullptr) {
    rest_->Handle(request, body, out);
  } else if (path.starts_with("/_weft/fabric/") && fabric_ != nullptr) {
    fabric_->Handle(request, body, out);
  } else if (path.starts_with("/_weft/")) {
    (void)out.Send(404, {{"Content-Type", "application/json"}},
                   R"({"error":"NotFound","message":"no such Weft endpoint"})");
  } else {
    s3_->Handle(request, body, out);
  }
  if (audited) audited->RecordUnanswered();
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
  counter("weft_audit_failures_total",
          "Requests answered 503 (or served unanswered) because their audit record failed.",
          std::to_string(audit_failures_.load()));
  if (extra_metrics_) out += extra_metrics_();
  return out;
}

}  // namespace weft::server
