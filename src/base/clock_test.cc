#include "base/clock.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(ClockTest, FormatIso8601) {
  const int64_t t = 1'796'232'430'123'456'789;  // 2026-12-02T17:27:10.123456789Z
  EXPECT_EQ(FormatIso8601(t), "2026-12-02T17:27:10Z");
  EXPECT_EQ(FormatIso8601(t, /*millis=*/true), "2026-12-02T17:27:10.123Z");
  EXPECT_EQ(FormatIso8601(0, true), "1970-01-01T00:00:00.000Z");
  // Before the epoch it rounds down, not toward 1970.
  EXPECT_EQ(FormatIso8601(-1, true), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace weft
