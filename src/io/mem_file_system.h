// NewMemFileSystem: an in-memory FileSystem for tests, modelled on LevelDB's helpers/memenv.
// Thread-safe. Behaves like POSIX where Weft's stores can tell the difference: a file's parent
// directory must exist (CreateDirs), "/" and "." always exist, open handles keep working after
// Rename or RemoveFile, and NewWritableFile on an existing file truncates it in place.
// Paths are compared after collapsing "//", "/./" and trailing slashes; ".." is not resolved.
#pragma once

#include <memory>

#include "io/file_system.h"

namespace weft {

std::unique_ptr<FileSystem> NewMemFileSystem();

}  // namespace weft
