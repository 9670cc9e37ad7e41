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

// A fresh 16 MiB reservation is not resident until written; prefaulting maps it at once and
// leaves the content alone.
TEST(MemoryTest, PrefaultCapacityMapsTheWholeBuffer) {
  std::string buffer = "kept";
  buffer.reserve(16 << 20);
  const long before = ResidentPages();
  PrefaultCapacity(buffer);
  const long after = ResidentPages();
  if (before == 0) GTEST_SKIP() << "no /proc/self/statm";
  EXPECT_GE(after - before, (12 << 20) / 4096) << before << " -> " << after;
  EXPECT_EQ(buffer, "kept");
  std::string empty;
  PrefaultCapacity(empty);  // smaller than a page: nothing to do
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace weft
