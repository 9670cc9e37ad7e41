// Path validation for every Volume entry point. A valid path is absolute ('/'-separated,
// leading '/'), each segment 1..255 bytes, not "." or "..", without NUL; the whole path at most
// kMaxPathBytes; one trailing '/' is tolerated. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace weft {

inline constexpr size_t kMaxNameBytes = 255;
// Not PATH_MAX: that bounds what one system call names, and a tree reached through relative
// paths (or a mount of a subtree) goes deeper. 32 KiB keeps a path a bounded string.
inline constexpr size_t kMaxPathBytes = 32 << 10;
// A symlink's target, as the kernel bounds it (PATH_MAX).
inline constexpr size_t kMaxSymlinkTargetBytes = 4096;

// InvalidArgument naming the offending segment, or OK.
Status ValidateName(std::string_view name);

// Splits a path into validated segments ("/" -> {}).
Result<std::vector<std::string>> SplitPath(std::string_view path);

// "/" + segments joined by '/'.
std::string JoinPath(const std::vector<std::string>& segments);

// The path of entry `name` of directory `dir` ("/" + "a" -> "/a", "/d" + "a" -> "/d/a").
std::string ChildPath(std::string_view dir, std::string_view name);

// Parent path and final name of a non-root path.
struct ParentAndName {
  std::vector<std::string> parent;
  std::string name;
  // parent + name: the whole path's segments.
  std::vector<std::string> Segments() const {
    std::vector<std::string> all = parent;
    all.push_back(name);
    return all;
  }
};
Result<ParentAndName> SplitParent(std::string_view path);

}  // namespace weft
