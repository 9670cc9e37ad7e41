#include "cli/cli_util.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <limits>

#include "base/bytes.h"

namespace weft::cli {

std::string ToVolumePath(std::string_view user_path) {
  std::string p(user_path);
  if (p.empty() || p[0] != '/') p.insert(p.begin(), '/');
  return p;
}

bool HasTrailingSlash(std::string_view user_path) {
  return !user_path.empty() && user_path.back() == '/';
}

std::string JoinVolumePath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path == "/") return "";
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

Result<int64_t> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("bad duration '" + std::string(text) +
                           "' (want a number and a unit: 0, 500ms, 90s, 15m, 24h, 7d, 2w)");
  };
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits == 0 || digits > 18) return bad();
  int64_t n = 0;
  for (size_t i = 0; i < digits; ++i) n = n * 10 + (text[i] - '0');
  std::string_view unit = text.substr(digits);
  int64_t scale = 0;
  if (unit.empty()) {
    if (n != 0) return bad();  // a bare number is ambiguous unless it is zero
    return int64_t{0};
  } else if (unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1'000;
  } else if (unit == "ms") {
    scale = 1'000'000;
  } else if (unit == "s") {
    scale = 1'000'000'000;
  } else if (unit == "m") {
    scale = 60LL * 1'000'000'000;
  } else if (unit == "h") {
    scale = 3600LL * 1'000'000'000;
  } else if (unit == "d") {
    scale = 86400LL * 1'000'000'000;
  } else if (unit == "w") {
    scale = 7 * 86400LL * 1'000'000'000;
  } else {
    return bad();
  }
  if (n > std::numeric_limits<int64_t>::max() / scale) return bad();
  return n * scale;
}

std::string FormatMode(FileType type, uint32_t mode) {
  std::string s = "----------";
  if (type == FileType::kDirectory) s[0] = 'd';
  if (type == FileType::kSymlink) s[0] = 'l';
  if (type == FileType::kFifo) s[0] = 'p';
  if (type == FileType::kSocket) s[0] = 's';
  if (type == FileType::kCharDevice) s[0] = 'c';
  if (type == FileType::kBlockDevice) s[0] = 'b';
  static constexpr char kRwx[] = "rwx";
  for (int i = 0; i < 9; ++i) {
    if (mode & (1u << (8 - i))) s[1 + i] = kRwx[i % 3];
  }
  return s;
}

std::string FormatTimeUtc(int64_t unix_ns) {
  time_t secs = static_cast<time_t>(unix_ns / 1'000'000'000);
  struct tm tm_utc;
  if (gmtime_r(&secs, &tm_utc) == nullptr) return "?";
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm_utc);
  return buf;
}

std::string FormatRate(uint64_t bytes, double seconds) {
  if (seconds < 0.05) return "-";
  return HumanBytes(static_cast<uint64_t>(static_cast<double>(bytes) / seconds)) + "/s";
}

}  // namespace weft::cli
