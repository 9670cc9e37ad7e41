#include "base/memory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

namespace weft {
namespace {

long ResidentPages() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

// A fresh 16 MiB reservation is resident at once, and the content is left alone; a
// reservation the buffer already has changes nothing.
TEST(MemoryTest, ReserveMappedMapsTheWholeNewBuffer) {
  std::string buffer = "kept";
  const long before = ResidentPages();
  ReserveMapped(buffer, 16 << 20);
  const long after = ResidentPages();
  if (before == 0) GTEST_SKIP() << "no /proc/self/statm";
  EXPECT_GE(after - before, (12 << 20) / 4096) << before << " -> " << after;
  EXPECT_EQ(buffer, "kept");
  EXPECT_GE(buffer.capacity(), 16u << 20);
  const char* data = buffer.data();
  ReserveMapped(buffer, 1 << 20);
  EXPECT_EQ(buffer.data(), data);
  std::string small;
  ReserveMapped(small, 100);  // less than a page: nothing to map
  EXPECT_GE(small.capacity(), 100u);
}

// Trims once when traffic stops, not again while it stays stopped, and again after the next
// burst; never while traffic flows. Traffic grows at every look while "busy", so scheduling
// delays cannot make it look quiet.
TEST(MemoryTest, IdleTrimmerTrimsOncePerQuietSpell) {
  std::atomic<uint64_t> traffic = 0;
  std::atomic<bool> busy = true;
  std::atomic<int> trims = 0;
  auto wait_for_trims = [&](int n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (trims < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // and no more after
    return trims.load();
  };
  {
    IdleTrimmer trimmer(
        [&] {
          if (busy) traffic += 2 << 20;
          return traffic.load();
        },
        std::chrono::milliseconds(10), 1 << 20, [&] { ++trims; });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(trims, 0);  // busy all along
    busy = false;
    EXPECT_EQ(wait_for_trims(1), 1);  // quiet for many periods: once
    traffic += 10 << 20;              // a burst
    EXPECT_EQ(wait_for_trims(2), 2);
    EXPECT_EQ(trimmer.trims(), 2u);
  }
  ReturnFreeMemory();  // the real one: harmless at any time
}

}  // namespace
}  // namespace weft
