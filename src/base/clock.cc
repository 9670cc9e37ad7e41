#include "base/clock.h"

#include <chrono>

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

}  // namespace weft
