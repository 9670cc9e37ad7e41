// Lexical path helpers shared by the FileSystem implementations: no system calls, no ".."
// resolution. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace weft::io_internal {

// Collapses repeated '/', drops "." components and any trailing '/'. "" stays "" (no such
// path); a path that reduces to nothing becomes "/" (absolute) or "." (relative).
std::string NormalizePath(std::string_view path);

// The directory holding `path`, normalized: "a/b/" -> "a", "a" -> ".", "/a" -> "/", "/" -> "/".
std::string Dirname(std::string_view path);

}  // namespace weft::io_internal
