// The metadata key layout and value codecs of LocalVolume (docs/formats/metadata.md).
// Every key starts with a one-byte table tag; integers are big-endian so keys sort
// numerically. Decoders treat stored bytes as untrusted: a malformed value is Corruption.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chunk/chunk_id.h"
#include "vfs/volume.h"

namespace weft::schema {

inline constexpr uint64_t kRootInode = 1;
inline constexpr uint32_t kFormatVersion = 1;

// Table tags.
inline constexpr char kSystem = 'S';    // S<name>                    -> u64 counters
inline constexpr char kDirent = 'D';    // D<parent:8><name>           -> Current<Dirent>
inline constexpr char kInode = 'I';     // I<ino:8>                    -> Current<Inode>
inline constexpr char kManifest = 'M';  // M<ino:8><content_seq:8>     -> Manifest
inline constexpr char kHistory = 'H';   // H<current key>\0?<end:8>     -> History<T>
inline constexpr char kSnapshot = 'N';  // N<name>                     -> Snapshot
inline constexpr char kFeed = 'F';      // F<seq:8>                    -> Change
// A delete marker DeleteVersion removed: the name's history record ending at seq stays (it
// holds the version before it, and what snapshots read), but ListVersions no longer shows the
// marker it implies.
inline constexpr char kRemovedMarker = 'X';  // X<parent:8><name>\0<seq:8> -> ""

std::string SystemKey(std::string_view name);
std::string DirentKey(uint64_t parent, std::string_view name);
std::string DirentPrefix(uint64_t parent);
std::string InodeKey(uint64_t ino);
std::string ManifestKey(uint64_t ino, uint64_t content_seq);
std::string SnapshotKey(std::string_view name);
std::string FeedKey(uint64_t seq);

// History keys: the current key, then (for dirents, whose names vary in length) a 0 byte,
// then the sequence at which the value stopped being current. For one current key, records
// sort by end sequence, so "the value as of S" is the first record with end > S.
std::string DirentHistoryPrefix(uint64_t parent);
std::string DirentHistoryNamePrefix(uint64_t parent, std::string_view name);
std::string DirentHistoryKey(uint64_t parent, std::string_view name, uint64_t seq_end);
std::string RemovedMarkerKey(uint64_t parent, std::string_view name, uint64_t seq);
// The removed-marker key of the delete marker a dirent history key ("HD...") implies.
std::string RemovedMarkerKeyOf(std::string_view dirent_history_key);
std::string InodeHistoryPrefix(uint64_t ino);
std::string InodeHistoryKey(uint64_t ino, uint64_t seq_end);

struct Dirent {
  uint64_t ino = 0;
  FileType type = FileType::kFile;
};

struct Inode {
  FileType type = FileType::kFile;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t content_seq = 0;  // files: which manifest (M<ino><content_seq>) holds the bytes
  std::string etag;          // files: hex MD5
  uint64_t chunks = 0;
  std::string symlink_target;
  // Directories: their own. Files: a copy of the current version's (like etag and size), so
  // Stat and ReadDir need no manifest read.
  Attributes attributes;
  // Set explicitly (utimensat); absent, the access time is the mtime.
  std::optional<int64_t> atime_ns;
  uint64_t rdev = 0;  // devices
  // The POSIX link count where the volume keeps it: every directory made since link counts
  // exist (2 + subdirectories). 0: not kept (an older directory, a file: one name).
  uint32_t nlink = 0;
};

using weft::ChunkRef;

struct Manifest {
  uint64_t size = 0;
  std::string etag;
  int64_t mtime_ns = 0;
  std::vector<ChunkRef> chunks;
  Attributes attributes;
};

// A current record: the value and the sequence that made it current.
template <typename T>
struct Current {
  uint64_t seq_begin = 0;
  T value;
};

// A past value: current during [seq_begin, seq_end); seq_end is in the key.
template <typename T>
struct History {
  uint64_t seq_begin = 0;
  uint64_t seq_end = 0;
  int64_t end_time_ns = 0;  // when it stopped being current (for retention)
  T value;
};

std::string EncodeDirent(uint64_t seq_begin, const Dirent& d);
Result<Current<Dirent>> DecodeDirent(std::string_view v);
std::string EncodeInode(uint64_t seq_begin, const Inode& i);
Result<Current<Inode>> DecodeInode(std::string_view v);

std::string EncodeDirentHistory(const History<Dirent>& h);
Result<History<Dirent>> DecodeDirentHistory(std::string_view v);
std::string EncodeInodeHistory(const History<Inode>& h);
Result<History<Inode>> DecodeInodeHistory(std::string_view v);

std::string EncodeManifest(const Manifest& m);
Result<Manifest> DecodeManifest(std::string_view v);

std::string EncodeSnapshot(const SnapshotInfo& s);
Result<SnapshotInfo> DecodeSnapshot(std::string_view name, std::string_view v);

std::string EncodeChange(const Change& c);
Result<Change> DecodeChange(uint64_t seq, std::string_view v);

uint64_t DecodeU64(std::string_view v);  // 0 if malformed; only for the S table
std::string EncodeU64(uint64_t v);

// Version ids name one manifest: "<content_seq>.<ino>" in decimal.
std::string MakeVersionId(uint64_t ino, uint64_t content_seq);
bool ParseVersionId(std::string_view id, uint64_t* ino, uint64_t* content_seq);

}  // namespace weft::schema
