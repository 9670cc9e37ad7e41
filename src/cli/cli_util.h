// Small pure helpers the `weft` command line shares: turning user paths into Volume paths,
// parsing durations, and formatting modes, times and rates for people.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "vfs/volume.h"

namespace weft::cli {

// "data/x" -> "/data/x", "" -> "/". Nothing else is normalised: ".", "..", empty segments
// and trailing slashes reach the Volume, which validates every path (vfs/path.h).
std::string ToVolumePath(std::string_view user_path);

// True when the user wrote a trailing '/' ("put a.txt /dir/" means "into /dir").
bool HasTrailingSlash(std::string_view user_path);

// Appends one name to a Volume path ("/" + "a" -> "/a", "/x" + "a" -> "/x/a").
std::string JoinVolumePath(std::string_view dir, std::string_view name);

// Last segment of a '/'-separated path, ignoring trailing slashes ("/a/b/" -> "b", "/" -> "").
std::string BaseName(std::string_view path);

// Parses "0", "90s", "15m", "24h", "7d", "2w", "500ms" (a number and one unit) into
// nanoseconds. InvalidArgument on anything else, negative values or overflow.
Result<int64_t> ParseDuration(std::string_view text);

// "drwxr-xr-x" style.
std::string FormatMode(FileType type, uint32_t mode);
// "2024-05-01 12:34:56" in UTC.
std::string FormatTimeUtc(int64_t unix_ns);
// "12.3 MiB/s"; "-" when the interval is too short to mean anything.
std::string FormatRate(uint64_t bytes, double seconds);

}  // namespace weft::cli
