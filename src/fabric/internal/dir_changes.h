// Which children of a directory changed since a spoke last listed it, told from the hub's
// change feed: what the hub answers a `dir` revalidation with `since` (docs/fabric.md). Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vfs/volume.h"

namespace weft::fabric {

struct ChildChanges {
  std::set<std::string> names;  // children that may have changed, appeared or gone
  uint64_t sequence = 0;        // the newest change read (0 if none)
};

// The children of `dir` that the changes after sequence `since` may have touched, from the
// feed read after it (`changes`, oldest first, as ReadChanges answers with a limit of
// kMaxDirChanges + 1), given the sequence a listing of `dir` taken just before reflects
// (`listed`, >= `since`). A change names the child on the way to its path (and, for a
// rename or a link, to its second path). nullopt where the feed cannot tell: a gap after
// `since` (a trimmed feed), more than kMaxDirChanges changes, or a change at `dir` or above
// it (an ancestor renamed, a snapshot of the root).
std::optional<ChildChanges> ChangedChildren(const std::string& dir, uint64_t since, uint64_t listed,
                                            const std::vector<Change>& changes);

}  // namespace weft::fabric
