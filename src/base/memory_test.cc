#include "base/memory.h"

#include <gtest/gtest.h>

#include <fstream>

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

}  // namespace
}  // namespace weft
