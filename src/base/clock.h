// Clock: the injected source of time - wall time for what is recorded, monotonic time for
// durations and deadlines (leases, timeouts, rates) - so tests and simulations can drive time
// instead of sleeping. SystemClock is thread-safe; FakeClock is thread-safe (atomic) and only
// moves when told, both of its times together.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace weft {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since the Unix epoch.
  virtual int64_t NowNanos() const = 0;
  // Monotonic time: never goes back, unrelated to the wall and to other processes.
  virtual std::chrono::steady_clock::time_point SteadyNow() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowNanos() const override;
  std::chrono::steady_clock::time_point SteadyNow() const override {
    return std::chrono::steady_clock::now();
  }
  // A process-wide instance; never destroyed.
  static SystemClock* Default();
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_nanos = 1'700'000'000'000'000'000) : now_(start_nanos) {}
  int64_t NowNanos() const override { return now_.load(); }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(now_.load()));
  }
  void AdvanceNanos(int64_t d) { now_ += d; }
  void SetNanos(int64_t t) { now_ = t; }  // may move SteadyNow back: wall-time tests only

 private:
  std::atomic<int64_t> now_;
};

// "2026-12-02T17:27:10Z", or with `millis` "2026-12-02T17:27:10.123Z" (S3 XML): UTC, rounded
// down to the second (millisecond) even before 1970.
std::string FormatIso8601(int64_t unix_ns, bool millis = false);

}  // namespace weft
