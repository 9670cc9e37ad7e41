#include "base/clock.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace weft {

int64_t SystemClock::NowNanos() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SystemClock* SystemClock::Default() {
  static auto* clock = new SystemClock();
  return clock;
}

std::string FormatIso8601(int64_t unix_ns, bool millis) {
  constexpr int64_t kNanosPerSecond = 1'000'000'000;
  int64_t seconds = unix_ns / kNanosPerSecond;
  int64_t rest = unix_ns % kNanosPerSecond;
  if (rest < 0) {  // floor, so times before 1970 do not round toward it
    --seconds;
    rest += kNanosPerSecond;
  }
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm_utc;
  if (gmtime_r(&t, &tm_utc) == nullptr) return "";
  char out[64];
  size_t n = strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%S", &tm_utc);
  if (millis) {
    n += static_cast<size_t>(
        snprintf(out + n, sizeof out - n, ".%03d", static_cast<int>(rest / 1'000'000)));
  }
  return std::string(out, n) + "Z";
}

}  // namespace weft
