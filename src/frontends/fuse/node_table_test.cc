#include "frontends/fuse/node_table.h"

#include <gtest/gtest.h>

namespace weft::fuse {
namespace {

TEST(NodeTableTest, LookupGivesOneIdPerPathUntilForgotten) {
  NodeTable nodes;
  EXPECT_EQ(nodes.PathOf(NodeTable::kRootId), "/");
  uint64_t a = nodes.Lookup("/a");
  EXPECT_NE(a, NodeTable::kRootId);
  EXPECT_EQ(nodes.Lookup("/a"), a);
  EXPECT_EQ(nodes.PathOf(a), "/a");
  nodes.Forget(a, 1);
  EXPECT_EQ(nodes.PathOf(a), "/a");  // one lookup left
  nodes.Forget(a, 1);
  EXPECT_EQ(nodes.PathOf(a), std::nullopt);
  EXPECT_EQ(nodes.IdOf("/a"), std::nullopt);
  EXPECT_NE(nodes.Lookup("/a"), a);  // ids are never reused
  nodes.Forget(NodeTable::kRootId, 100);
  EXPECT_EQ(nodes.PathOf(NodeTable::kRootId), "/");
}

TEST(NodeTableTest, RenameMovesTheSubtreeAndDetachesTheTarget) {
  NodeTable nodes;
  uint64_t dir = nodes.Lookup("/d");
  uint64_t file = nodes.Lookup("/d/f");
  uint64_t deep = nodes.Lookup("/d/sub/x");
  uint64_t sibling = nodes.Lookup("/d b");  // sorts between "/d" and "/d/..."
  uint64_t target = nodes.Lookup("/e");
  uint64_t below_target = nodes.Lookup("/e/old");
  nodes.Rename("/d", "/e");
  EXPECT_EQ(nodes.PathOf(dir), "/e");
  EXPECT_EQ(nodes.PathOf(file), "/e/f");
  EXPECT_EQ(nodes.PathOf(deep), "/e/sub/x");
  EXPECT_EQ(nodes.PathOf(sibling), "/d b");
  EXPECT_EQ(nodes.PathOf(target), std::nullopt);
  EXPECT_EQ(nodes.PathOf(below_target), std::nullopt);
  EXPECT_EQ(nodes.IdOf("/e"), dir);
  EXPECT_EQ(nodes.IdOf("/d"), std::nullopt);
  // A detached node still has its lookups: forgetting it later is harmless.
  nodes.Forget(target, 1);
  EXPECT_EQ(nodes.size(), 6u);
}

TEST(NodeTableTest, DetachLeavesNeighboursAlone) {
  NodeTable nodes;
  uint64_t a = nodes.Lookup("/a");
  uint64_t ab = nodes.Lookup("/a/b");
  uint64_t a2 = nodes.Lookup("/a2");
  nodes.Detach("/a");
  EXPECT_EQ(nodes.PathOf(a), std::nullopt);
  EXPECT_EQ(nodes.PathOf(ab), std::nullopt);
  EXPECT_EQ(nodes.PathOf(a2), "/a2");
  // A new file at the old path is a new node.
  EXPECT_NE(nodes.Lookup("/a"), a);
}

TEST(NodeTableTest, UnderListsChildrenOfDirectoriesAndWholeSubtrees) {
  NodeTable nodes;
  uint64_t d = nodes.Lookup("/d");
  uint64_t f = nodes.Lookup("/d/f");
  nodes.Lookup("/d/sub");
  uint64_t deep = nodes.Lookup("/d/sub/x");
  uint64_t t = nodes.Lookup("/t");
  uint64_t tx = nodes.Lookup("/t/x");
  auto children = nodes.Under({"/d"}, {"/t"});
  std::vector<std::tuple<uint64_t, std::string, uint64_t>> got;
  for (const auto& c : children) got.emplace_back(c.parent, c.name, c.id);
  std::sort(got.begin(), got.end());
  uint64_t sub = *nodes.IdOf("/d/sub");
  std::vector<std::tuple<uint64_t, std::string, uint64_t>> want = {
      {NodeTable::kRootId, "t", t}, {d, "f", f}, {d, "sub", sub}, {t, "x", tx}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::count_if(children.begin(), children.end(),
                          [&](const NodeTable::Child& c) { return c.id == deep; }),
            0);
}

TEST(NodeTableTest, PathHelpers) {
  EXPECT_EQ(ChildPath("/", "a"), "/a");
  EXPECT_EQ(ChildPath("/a", "b"), "/a/b");
  EXPECT_EQ(ParentPath("/a/b"), "/a");
  EXPECT_EQ(ParentPath("/a"), "/");
}

}  // namespace
}  // namespace weft::fuse
