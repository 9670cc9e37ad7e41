// S3's view of a key's versions over Weft's history. Weft keeps every version of every file
// with its own id; S3 gives a version written while the bucket's versioning was off or
// suspended the id "null", keeps only the newest such one (a later null write replaces it),
// and leaves no delete marker for a delete made before versioning was first enabled. The
// bucket's versioning log (when each state began) decides which period a version belongs to,
// by the time it was written (a marker: the time of the delete). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vfs/volume.h"

namespace weft::s3 {

inline constexpr std::string_view kNullVersion = "null";

enum class Versioning { kOff, kEnabled, kSuspended };

// When each versioning state began, oldest first; Off before the first entry.
class VersioningLog {
 public:
  // From a bucket's attributes: the log, or for a bucket whose state predates the log, that
  // state since the beginning.
  static VersioningLog FromAttributes(const Attributes& attributes);

  Versioning At(int64_t time_ns) const;
  Versioning Now() const { return entries_.empty() ? Versioning::kOff : entries_.back().state; }
  // Records `state` from `time_ns` (no entry when it is already the state).
  void Change(Versioning state, int64_t time_ns);
  // The attribute value that FromAttributes reads back.
  std::string Encode() const;

 private:
  struct Entry {
    Versioning state;
    int64_t since_ns;
  };
  std::vector<Entry> entries_;
};

struct S3Version {
  std::string id;       // as S3 names it: "null" or Weft's version id
  std::string weft_id;  // Weft's version id (for OpenVersion and DeleteVersion)
  VersionInfo info;
  bool is_latest = false;
};

// The versions S3 shows for a key, newest first, from ListVersions' answer.
std::vector<S3Version> S3Versions(const std::vector<VersionInfo>& versions,
                                  const VersioningLog& log);

// The Weft versions that make up S3's "null" version of a key: the visible one and older null
// writes that it replaced (hidden, but still retained). Oldest first.
std::vector<VersionInfo> NullVersions(const std::vector<VersionInfo>& versions,
                                      const VersioningLog& log);

// The commit sequence a Weft version id names ("<sequence>.<inode>", "delete.<sequence>"):
// where a listing that ended at that version resumes once the version itself is gone.
std::optional<uint64_t> VersionIdSequence(std::string_view id);

// The id S3 gives the content version `info` (current content at the time of a GET).
std::string S3VersionId(const FileInfo& info, const VersioningLog& log);

}  // namespace weft::s3
