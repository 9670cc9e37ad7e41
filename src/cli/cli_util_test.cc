#include "cli/cli_util.h"

#include <gtest/gtest.h>

namespace weft::cli {
namespace {

TEST(ToVolumePathTest, AddsLeadingSlash) {
  EXPECT_EQ(ToVolumePath(""), "/");
  EXPECT_EQ(ToVolumePath("/"), "/");
  EXPECT_EQ(ToVolumePath("a/b"), "/a/b");
  EXPECT_EQ(ToVolumePath("/a/b/"), "/a/b/");
}

TEST(ToVolumePathTest, LeavesBadSegmentsForTheVolumeToReject) {
  EXPECT_EQ(ToVolumePath("/a//b"), "/a//b");
  EXPECT_EQ(ToVolumePath("/a/../b"), "/a/../b");
  EXPECT_EQ(ToVolumePath("/a//"), "/a//");
}

TEST(PathHelpersTest, JoinAndBaseName) {
  EXPECT_EQ(JoinVolumePath("/", "a"), "/a");
  EXPECT_EQ(JoinVolumePath("/x", "a"), "/x/a");
  EXPECT_EQ(BaseName("/a/b"), "b");
  EXPECT_EQ(BaseName("/a/b/"), "b");
  EXPECT_EQ(BaseName("b"), "b");
  EXPECT_EQ(BaseName("/"), "");
  EXPECT_TRUE(HasTrailingSlash("/a/"));
  EXPECT_FALSE(HasTrailingSlash("/a"));
}

TEST(ParseDurationTest, AcceptsNumberWithUnit) {
  EXPECT_EQ(*ParseDuration("0"), 0);
  EXPECT_EQ(*ParseDuration("0s"), 0);
  EXPECT_EQ(*ParseDuration("500ms"), 500'000'000);
  EXPECT_EQ(*ParseDuration("90s"), 90'000'000'000);
  EXPECT_EQ(*ParseDuration("24h"), 24LL * 3600 * 1'000'000'000);
  EXPECT_EQ(*ParseDuration("7d"), 7LL * 86400 * 1'000'000'000);
  EXPECT_EQ(*ParseDuration("2w"), 14LL * 86400 * 1'000'000'000);
}

TEST(ParseDurationTest, RejectsJunkAmbiguityAndOverflow) {
  for (const char* bad : {"", "s", "-1s", "10", "1.5h", "3y", "10 s", "999999999999999999w"}) {
    auto r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(FormatTest, ModeTimeRate) {
  EXPECT_EQ(FormatMode(FileType::kDirectory, 0755), "drwxr-xr-x");
  EXPECT_EQ(FormatMode(FileType::kFile, 0640), "-rw-r-----");
  EXPECT_EQ(FormatMode(FileType::kSymlink, 0777), "lrwxrwxrwx");
  EXPECT_EQ(FormatTimeUtc(0), "1970-01-01 00:00:00");
  EXPECT_EQ(FormatRate(100, 0.0), "-");
  EXPECT_EQ(FormatRate(2048, 1.0), "2.0 KiB/s");
}

}  // namespace
}  // namespace weft::cli
