// ChangedChildren: which children of a directory each kind of change names, and when the feed
// cannot tell (a gap, too many changes, a change at or above the directory).
#include "fabric/internal/dir_changes.h"

#include <gtest/gtest.h>

#include "fabric/wire.h"

namespace weft::fabric {
namespace {

std::vector<Change> Feed(uint64_t first, std::vector<std::vector<std::string>> ops) {
  std::vector<Change> out;
  for (auto& op : ops) {
    Change c;
    c.sequence = first++;
    c.op = op[0];
    c.path = op[1];
    if (op.size() > 2) c.path2 = op[2];
    out.push_back(c);
  }
  return out;
}

std::set<std::string> Names(const std::optional<ChildChanges>& c) {
  return c ? c->names : std::set<std::string>{"<cannot tell>"};
}

TEST(DirChangesTest, EachKindOfChangeNamesTheChildOnItsWay) {
  auto c = ChangedChildren("/d", 10, 10,
                           Feed(11, {{"write", "/d/a"},
                                     {"write", "/d/new/deep/x"},  // a directory made on the way
                                     {"unlink", "/d/gone"},
                                     {"mkdir", "/d/sub"},
                                     {"setattr", "/d/m"},
                                     {"symlink", "/d/l", "/elsewhere/target"},  // not a path
                                     {"mknod", "/d/p", "fifo"},
                                     {"write", "/other/x"},  // another directory
                                     {"write", "/dx"}}));    // a sibling sharing the prefix
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->names, (std::set<std::string>{"a", "new", "gone", "sub", "m", "l", "p"}));
  EXPECT_EQ(c->sequence, 19u);
}

TEST(DirChangesTest, RenamesAndLinksNameBothEnds) {
  // Into the directory, out of it, and a link whose existing name is here: its count changed.
  EXPECT_EQ(Names(ChangedChildren("/d", 1, 1,
                                  Feed(2, {{"rename", "/e/x", "/d/in"},
                                           {"rename", "/d/out", "/e/y"},
                                           {"link", "/e/z", "/d/linked"},
                                           {"delete-version", "/d/v", "12.3"}}))),
            (std::set<std::string>{"in", "out", "linked", "v"}));
  // The root's children.
  EXPECT_EQ(Names(ChangedChildren("/", 1, 1, Feed(2, {{"write", "/a/b/c"}, {"mkdir", "/z"}}))),
            (std::set<std::string>{"a", "z"}));
}

TEST(DirChangesTest, AChangeAtOrAboveTheDirectoryCannotBeTold) {
  EXPECT_FALSE(ChangedChildren("/d/e", 1, 1, Feed(2, {{"rename", "/d", "/f"}})));  // an ancestor
  EXPECT_FALSE(ChangedChildren("/d/e", 1, 1, Feed(2, {{"rename", "/f", "/d"}})));  // replaced
  EXPECT_FALSE(ChangedChildren("/d/e", 1, 1, Feed(2, {{"setattr", "/d/e"}})));     // itself
  EXPECT_FALSE(ChangedChildren("/d", 1, 1, Feed(2, {{"snapshot", "/", "s1"}})));
}

TEST(DirChangesTest, AGapOrTooManyChangesCannotBeTold) {
  // The feed was trimmed: the first change read is not the one after `since`.
  EXPECT_FALSE(ChangedChildren("/d", 5, 9, Feed(8, {{"write", "/d/a"}})));
  // Nothing read, but the listing is newer than `since`.
  EXPECT_FALSE(ChangedChildren("/d", 5, 9, {}));
  // Nothing read and nothing changed.
  auto none = ChangedChildren("/d", 9, 9, {});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->names.empty());
  std::vector<std::vector<std::string>> many(kMaxDirChanges + 1, {"write", "/d/a"});
  EXPECT_FALSE(ChangedChildren("/d", 1, 1, Feed(2, many)));
  many.pop_back();
  EXPECT_TRUE(ChangedChildren("/d", 1, 1, Feed(2, many)));
}

}  // namespace
}  // namespace weft::fabric
