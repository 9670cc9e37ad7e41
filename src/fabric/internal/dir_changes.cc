#include "fabric/internal/dir_changes.h"

#include <algorithm>
#include <string_view>

#include "fabric/lease_table.h"
#include "fabric/wire.h"

namespace weft::fabric {

std::optional<ChildChanges> ChangedChildren(const std::string& dir, uint64_t since, uint64_t listed,
                                            const std::vector<Change>& changes) {
  if (changes.size() > kMaxDirChanges) return std::nullopt;
  // Complete only without a gap: the first change read follows `since`, unless the listing
  // itself is at `since` and nothing came after it.
  if (changes.empty() ? since != listed : changes.front().sequence != since + 1) {
    return std::nullopt;
  }
  ChildChanges out;
  for (const Change& c : changes) {
    out.sequence = std::max(out.sequence, c.sequence);
    // path2 names a path only for a rename and a link (the existing name, whose link count
    // changes); otherwise a symlink's target, a snapshot's name, a version id.
    const bool two_paths = c.op == "rename" || c.op == "link";
    for (const std::string* p : {&c.path, &c.path2}) {
      if (p->empty() || (p == &c.path2 && !two_paths)) continue;
      if (IsAtOrUnder(dir, *p)) return std::nullopt;
      if (IsAtOrUnder(*p, dir)) {
        // The child on the way to the changed path: the file itself, or a directory a write
        // with create_parents may have made.
        std::string_view rest = std::string_view(*p).substr(dir == "/" ? 1 : dir.size() + 1);
        out.names.insert(std::string(rest.substr(0, rest.find('/'))));
      }
    }
  }
  return out;
}

}  // namespace weft::fabric
