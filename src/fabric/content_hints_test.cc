// ContentHints: remembers each file's latest version and the one before it across
// generations, forgets what was not seen for two, and keeps no hint for huge files.
#include "fabric/content_hints.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::fabric {
namespace {

std::vector<ChunkRef> Chunks(int n, int seed) {
  std::vector<ChunkRef> out;
  for (int i = 0; i < n; ++i) {
    const std::string bytes = std::to_string(seed) + "/" + std::to_string(i);
    out.push_back({ChunkId::Of(AsBytes(bytes)), static_cast<uint32_t>(bytes.size())});
  }
  return out;
}

std::string Latest(ContentHints& hints, const std::string& path) {
  std::optional<KnownContent> known = hints.Recall(path);
  return known ? known->latest.version_id : "";
}

TEST(ContentHintsTest, KeepsTheLatestVersionAndTheOneBefore) {
  ContentHints hints(10, 100);
  hints.Remember("/a", "v1", Chunks(2, 1));
  hints.Remember("/a", "v1", Chunks(2, 1));  // the same version again changes nothing
  std::optional<KnownContent> known = hints.Recall("/a");
  ASSERT_TRUE(known);
  EXPECT_EQ(known->latest.chunks.size(), 2u);
  EXPECT_FALSE(known->previous);
  hints.Remember("/a", "v2", Chunks(3, 2));
  known = hints.Recall("/a");
  EXPECT_EQ(known->latest.version_id, "v2");
  ASSERT_TRUE(known->previous);
  EXPECT_EQ(known->previous->version_id, "v1");
  EXPECT_EQ(known->previous->chunks[1].id, Chunks(2, 1)[1].id);
  EXPECT_FALSE(hints.Recall("/never"));
}

TEST(ContentHintsTest, ForgetsWhatTwoGenerationsDidNotSee) {
  ContentHints hints(2, 1000);
  hints.Remember("/a", "1", Chunks(1, 1));
  hints.Remember("/b", "1", Chunks(1, 2));
  hints.Remember("/c", "1", Chunks(1, 3));  // a new generation: /a and /b are the previous one
  EXPECT_EQ(Latest(hints, "/b"), "1");      // seen again: current once more
  hints.Remember("/d", "1", Chunks(1, 4));
  hints.Remember("/e", "1", Chunks(1, 5));
  hints.Remember("/f", "1", Chunks(1, 6));
  EXPECT_EQ(Latest(hints, "/a"), "");  // two generations without a look: forgotten
  EXPECT_EQ(Latest(hints, "/f"), "1");
}

TEST(ContentHintsTest, ChunkRefsBoundAGenerationAndHugeFilesLeaveNoHint) {
  ContentHints hints(100, 10);
  hints.Remember("/x", "1", Chunks(6, 1));
  hints.Remember("/y", "1", Chunks(6, 2));  // over 10 refs: a new generation
  hints.Remember("/z", "1", Chunks(6, 3));  // again: /x is gone
  EXPECT_EQ(Latest(hints, "/x"), "");
  EXPECT_EQ(Latest(hints, "/z"), "1");
  hints.Remember("/big", "1", Chunks(ContentHints::kMaxChunksPerFile + 1, 4));
  hints.Remember("/empty", "1", {});
  EXPECT_EQ(Latest(hints, "/big"), "");
  EXPECT_EQ(Latest(hints, "/empty"), "");
}

}  // namespace
}  // namespace weft::fabric
