#include "net/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/clock.h"

namespace weft::net {
namespace {

// A logfmt value: quoted when it holds a space, quote or '=', with control bytes escaped, so a
// hostile path cannot forge a line or a field.
void AppendValue(std::string* out, std::string_view value) {
  bool quote = value.empty();
  for (char c : value)
    quote |= c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20;
  if (quote) out->push_back('"');
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out->append(hex);
    } else {
      out->push_back(c);
    }
  }
  if (quote) out->push_back('"');
}

}  // namespace

Result<std::unique_ptr<AccessLog>> AccessLog::Open(const std::string& path) {
  if (path == "-") return std::unique_ptr<AccessLog>(new AccessLog(STDERR_FILENO, false));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoToStatus(errno, "opening the access log " + path);
  return std::unique_ptr<AccessLog>(new AccessLog(fd, true));
}

AccessLog::~AccessLog() {
  if (owned_) ::close(fd_);
}

std::string AccessLog::Format(const AccessRecord& r) {
  std::string line = "time=" + FormatIso8601(r.time_ns, /*millis=*/true);
  line += " id=";
  AppendValue(&line, r.request_id);
  line += " principal=";
  AppendValue(&line, r.principal);
  line += " op=";
  AppendValue(&line, r.operation);
  line += " path=";
  AppendValue(&line, r.path);
  line += " status=" + std::to_string(r.status);
  line += " bytes=" + std::to_string(r.bytes);
  char ms[32];
  std::snprintf(ms, sizeof ms, " ms=%.3f", static_cast<double>(r.latency_ns) / 1e6);
  line += ms;
  return line;
}

void AccessLog::Write(const AccessRecord& record) {
  std::string line = Format(record) + "\n";
  std::lock_guard lock(mu_);
  // A full disk or a closed stderr costs the line, never the request.
  for (size_t done = 0; done < line.size();) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace weft::net
