// ContentHints: remembers each file's chunk ids across generations, forgets what was not seen
// for two, and keeps no hint for large files.
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

std::vector<ChunkId> Ids(const std::vector<ChunkRef>& chunks) {
  std::vector<ChunkId> ids;
  for (const ChunkRef& c : chunks) ids.push_back(c.id);
  return ids;
}

TEST(ContentHintsTest, RemembersTheLastVersionSeenWithinTwoGenerations) {
  ContentHints hints(2);
  hints.Remember("/a", Chunks(1, 1));
  hints.Remember("/a", Chunks(2, 2));  // a newer version replaces the older
  EXPECT_EQ(hints.Recall("/a"), Ids(Chunks(2, 2)));
  EXPECT_TRUE(hints.Recall("/never").empty());
  hints.Remember("/b", Chunks(1, 3));
  hints.Remember("/c", Chunks(1, 4));  // a new generation: /a and /b are the previous one
  EXPECT_EQ(hints.Recall("/b"), Ids(Chunks(1, 3)));  // seen again: current once more
  hints.Remember("/d", Chunks(1, 5));
  hints.Remember("/e", Chunks(1, 6));
  hints.Remember("/f", Chunks(1, 7));
  EXPECT_TRUE(hints.Recall("/a").empty());  // two generations without a look: forgotten
  EXPECT_EQ(hints.Recall("/f"), Ids(Chunks(1, 7)));
}

TEST(ContentHintsTest, LargeFilesAndEmptyOnesLeaveNoHint) {
  ContentHints hints(100);
  hints.Remember("/big", Chunks(ContentHints::kMaxChunksPerFile + 1, 1));
  hints.Remember("/empty", {});
  EXPECT_TRUE(hints.Recall("/big").empty());
  EXPECT_TRUE(hints.Recall("/empty").empty());
}

}  // namespace
}  // namespace weft::fabric
