#include "vfs/path.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(PathTest, SplitsValidPaths) {
  EXPECT_TRUE(SplitPath("/")->empty());
  EXPECT_EQ(*SplitPath("/a/b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*SplitPath("/a/b/"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(JoinPath({"a", "b"}), "/a/b");
  EXPECT_EQ(JoinPath({}), "/");
}

TEST(PathTest, RejectsHostileSegments) {
  for (const std::string& bad :
       std::vector<std::string>{"", "a", "/a/../b", "/./a", "/a//b", "//", "/a/.", "/..",
                                std::string("/a\0b", 4), "/" + std::string(256, 'x')}) {
    auto r = SplitPath(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_TRUE(SplitPath("/" + std::string(255, 'x')).ok());
  EXPECT_FALSE(SplitPath("/" + std::string(5000, 'x')).ok());  // one segment over 255
}

// Limits apply per segment (255) and to the whole path (32 KiB), not PATH_MAX: a tree reached
// through relative paths is deeper than any one system call names.
TEST(PathTest, DeepPathsBeyondPathMax) {
  std::string deep;
  while (deep.size() + 251 <= kMaxPathBytes) deep += "/" + std::string(250, 'd');
  EXPECT_GT(deep.size(), 4096u);
  EXPECT_TRUE(SplitPath(deep).ok());
  EXPECT_EQ(SplitPath(deep + "/" + std::string(250, 'e')).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PathTest, SplitParent) {
  auto pn = SplitParent("/a/b/c");
  ASSERT_TRUE(pn.ok());
  EXPECT_EQ(pn->parent, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pn->name, "c");
  EXPECT_FALSE(SplitParent("/").ok());
}

}  // namespace
}  // namespace weft
