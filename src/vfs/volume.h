// Volume: the namespace-and-data API every front end calls (CLI, S3, REST, FUSE, NFS, SFTP).
// LocalVolume implements it over a KvStore and a ChunkStore (the hub's engine); later a
// PortalVolume implements it at a spoke. Paths are absolute, '/'-separated and validated here
// (see path.h). Reads may name a snapshot, either with ReadOptions::snapshot or with the path
// form "/.weft/snapshots/<name>/...". Every call carries a RequestContext so an authorising
// decorator can check and audit it without changing this API. Implementations are thread-safe.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/status.h"
#include "chunk/chunk_id.h"
#include "chunk/chunk_store.h"

namespace weft {

// What an authorising decorator learned while serving one request (opaque here): the many
// calls of one request then check each directory once.
struct AccessMemo;

// Who is asking, through which protocol, from which site.
struct RequestContext {
  std::string principal = "root";
  std::string protocol = "cli";
  std::string site = "local";
  // The tags of the site asking, for a request that comes from another site (a spoke through
  // the fabric): what is resident to sites without one of them is refused. Unset for this
  // site's own clients.
  std::optional<std::vector<std::string>> site_tags = std::nullopt;
  // What a protocol keeps in a staging area ("/<top>/.weft-uploads/...", S3's multipart
  // uploads) is judged by the path it is staged for, named here: its parts become that
  // object. Ignored for every other path.
  std::string staging_for = {};
  // Set by a front end that makes many calls for one request (see AccessMemo); may be null.
  std::shared_ptr<AccessMemo> memo = nullptr;
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// The last four are special files: entries with a type, a mode and (devices) a device number,
// and no content. The kernel gives them their behaviour; the volume only names them.
enum class FileType : uint8_t {
  kFile = 1,
  kDirectory = 2,
  kSymlink = 3,
  kFifo = 4,
  kSocket = 5,
  kCharDevice = 6,
  kBlockDevice = 7,
};
inline constexpr uint8_t kMaxFileType = 7;

// The most names one file may have (LINK_MAX, as ext4's).
inline constexpr uint32_t kMaxLinks = 65000;

constexpr bool IsSpecialFile(FileType type) {
  return type >= FileType::kFifo && type <= FileType::kBlockDevice;
}

// "file", "directory", "symlink", "fifo", ...: how listings (CLI, REST) name a type.
constexpr std::string_view FileTypeName(FileType type) {
  switch (type) {
    case FileType::kFile:
      return "file";
    case FileType::kDirectory:
      return "directory";
    case FileType::kSymlink:
      return "symlink";
    case FileType::kFifo:
      return "fifo";
    case FileType::kSocket:
      return "socket";
    case FileType::kCharDevice:
      return "char-device";
    case FileType::kBlockDevice:
      return "block-device";
  }
  return "unknown";
}

// Named string values carried with a file version or a directory: the S3 front end keeps
// Content-Type, Content-Encoding, Cache-Control, x-amz-meta-* and its own settings here.
// Limits (InvalidArgument beyond them): at most 64 entries, names 1..256 bytes, names and
// values together at most 8 KiB. Names starting with "weft." are read by the engine itself
// (see GcOptions).
using Attributes = std::map<std::string, std::string>;

struct FileInfo {
  std::string path;  // as resolved (snapshot form for snapshot reads)
  uint64_t inode = 0;
  FileType type = FileType::kFile;
  uint32_t mode = 0;  // permission bits only (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  // The access time: as set explicitly (SetAttrRequest::atime_ns), else the mtime. Reads do
  // not change it (noatime).
  int64_t atime_ns = 0;
  // POSIX link count: a directory's is 2 + its subdirectories (1 for a directory made by a
  // weft that did not count them, which tells tools such as find not to count on it).
  uint32_t nlink = 1;
  uint64_t rdev = 0;       // device number (character and block devices only)
  std::string etag;        // hex MD5 of the content (files only)
  std::string version_id;  // identifies this content version (files only)
  uint64_t chunks = 0;     // number of chunks in the manifest (files only)
  std::string symlink_target;
  // Files: the attributes of this version (immutable, like its bytes). Directories: the
  // directory's own, changed with SetAttr.
  Attributes attributes;
  // Answered from metadata that may be out of date: a spoke in --stale-ok mode, cut off from
  // its hub after its lease ran out. Front ends tell their clients (S3: a Warning header).
  bool stale = false;
};

struct DirEntry {
  std::string name;
  FileType type = FileType::kFile;
  uint64_t inode = 0;
  std::optional<FileInfo> info;  // filled when ReadDirOptions::with_info
  // The name has no current entry, only retained versions (ReadDirOptions::include_removed);
  // `type` and `inode` are what it last named, and `info` is never filled.
  bool removed = false;
};

struct ReadOptions {
  // Read as of this snapshot instead of the live namespace.
  std::optional<std::string> snapshot;
};

struct ReadDirOptions {
  std::optional<std::string> snapshot;
  std::string start_after;  // return names strictly greater than this
  uint32_t limit = 1000;    // at most this many entries (1..100000)
  bool with_info = false;
  // Also files that were removed but whose versions are retained (ListVersions still lists
  // them), marked `removed`, in name order among the others. Live listings only; volumes
  // that cannot tell (a spoke) answer Unimplemented.
  bool include_removed = false;
};

struct ReadDirPage {
  std::vector<DirEntry> entries;  // sorted by name (bytewise)
  bool truncated = false;         // more entries follow the last one
  bool stale = false;             // as FileInfo::stale
  // The commit sequence a live listing reflects (ReadChanges after it tells what changed
  // since); 0 where the volume cannot tell.
  uint64_t sequence = 0;
};

struct WriteOptions {
  uint32_t mode = 0644;
  // Commit only if the current version of the path has this version id ("" = must not exist).
  std::optional<std::string> if_version;
  // Create missing parent directories (mode 0755) at commit.
  bool create_parents = false;
  // Set the file's mtime instead of "now".
  std::optional<int64_t> mtime_ns;
  // Stored with the new version; see Attributes for the limits.
  Attributes attributes;
  // The version's ETag, instead of the hex MD5 of its bytes, which is then not computed at all
  // (S3 multipart ETags are "md5hex-N"; a copy reuses its source's ETag). 1..64 printable ASCII
  // characters without '"'. Required by FileWriter::AppendFrom.
  std::optional<std::string> etag;
  // A file larger than this gets an ETag derived from its chunk ids ("<32 hex>-<chunks>", the
  // form S3 gives an object uploaded in parts, which clients do not take for an MD5) and no
  // MD5 of its bytes is computed: ingest spares a pass over every byte. Unset: always the MD5.
  // Ignored when `etag` is set.
  std::optional<uint64_t> md5_etag_limit;
  // The size the caller is about to write, if it knows (a local file's stat). With
  // md5_etag_limit, an expected size over the limit decides for the chunk ETag from the first
  // byte: nothing is hashed for an MD5 that would be dropped, and a large file's chunks go to
  // the store's pipeline from its second MiB on, not only past the limit. The ETag then
  // follows the expectation even if the writes end up shorter (the file shrank while read).
  std::optional<uint64_t> expected_size;
};

// One piece of a version's content: the SHA-256 of the bytes and their length. A version is
// the concatenation of its chunks. Spokes move content as chunks: they are named by their
// bytes, so a copy never goes stale and one already present never moves again.
struct ChunkRef {
  ChunkId id;
  uint32_t length = 0;
  // A run of zeros (a hole): never stored, fetched or read from disk (chunk/zero_chunks.h).
  bool is_hole() const;
};

inline constexpr uint64_t kMaxHoleMd5Bytes = 64 << 20;

// The ETag of a version whose MD5 is not worth computing (WriteOptions::md5_etag_limit, large
// holes): the SHA-256 of its chunk ids, shortened to an MD5's length, and the number of
// chunks, as in an S3 multipart ETag. Same content, same chunks, same ETag.
std::string ChunksEtag(const std::vector<ChunkRef>& chunks);

class FileReader;

// Streams a new version of one file. Nothing is visible until Commit() returns OK; Abort() or
// destruction without Commit() leaves the namespace unchanged. Not thread-safe.
class FileWriter {
 public:
  virtual ~FileWriter() = default;
  virtual Status Write(ByteSpan data) = 0;
  // Appends the whole content of the version `source` reads, in any order with Write(). A
  // reader of the same LocalVolume costs no byte copy: its chunks are referenced, not
  // rewritten (S3 multipart complete and CopyObject); another reader's bytes are copied.
  // FailedPrecondition unless WriteOptions::etag is set, since no MD5 of the appended content
  // is computed.
  virtual Status AppendFrom(FileReader& source) = 0;
  // Appends one whole chunk, keeping chunk boundaries as the sender cut them (a spoke's write
  // reaching its hub). With `data`, the bytes must hash to `chunk.id` and have its length
  // (InvalidArgument otherwise) and are stored; without, the volume must already hold the
  // chunk (FailedPrecondition otherwise: ask MissingChunks first). Like AppendFrom it needs
  // WriteOptions::etag. A failure aborts the writer.
  virtual Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) = 0;
  // Appends `length` zero bytes, a hole (a file extended by truncate, the gaps of a sparse
  // file), as zero chunks (chunk/zero_chunks.h): nothing is hashed, stored or sent, so a
  // terabyte costs a manifest of 64 Ki entries. The bytes before it end in a chunk of their
  // own. Once a version's holes total more than kMaxHoleMd5Bytes its ETag is derived from its
  // chunks (ChunksEtag) rather than the MD5, which would cost what the hole saves.
  virtual Status WriteZeros(uint64_t length) = 0;
  // Makes the new version durable and visible atomically; returns its info.
  virtual Result<FileInfo> Commit() = 0;
  virtual void Abort() = 0;
  virtual uint64_t bytes_written() const = 0;
};

// Whether the chunks a read brings in are worth keeping in memory after it.
enum class Reuse { kLikely, kUnlikely };

// Reads one version of one file, fixed at open: a concurrent overwrite never tears what it
// reads. Thread-safe.
class FileReader {
 public:
  virtual ~FileReader() = default;
  virtual const FileInfo& info() const = 0;
  // Reads up to `length` bytes at `offset` (fewer at end of file; empty at or past it).
  virtual Result<std::string> ReadAt(uint64_t offset, uint64_t length) = 0;
  // The version's chunks, in order (what a spoke fetches and caches by id).
  virtual const std::vector<ChunkRef>& chunks() const = 0;
  // The plaintext of chunk `index`, verified against its id; OutOfRange past the last.
  virtual Result<std::shared_ptr<const std::string>> ReadChunk(size_t index) = 0;
  // ReadChunk of each of chunks [first, last), asked for together: a local reader waits for
  // the disk once, a remote one makes one round trip. Serving these without copying them into
  // one buffer is the cheapest way to stream a file. With Reuse::kUnlikely (a large object
  // streamed once) a local reader does not keep them in its volume's chunk cache.
  virtual Result<std::vector<std::shared_ptr<const std::string>>> ReadChunks(size_t first,
                                                                             size_t last,
                                                                             Reuse /*reuse*/) {
    if (last > first + 1) WillNeed(first, last);
    return Collect(first, last, [this](size_t i) { return ReadChunk(i); });
  }
  // Lends `use` the plaintexts of chunks [first, last), verified, for bytes written out at
  // once: a reader over local packs lends them from its read buffer without copying or
  // keeping them (ChunkStore::LendMany). The views live only during the call. The default
  // lends ReadChunks' chunks (Reuse::kUnlikely).
  virtual Status LendChunks(size_t first, size_t last, const ChunkUser& use) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const std::string>> chunks,
                          ReadChunks(first, last, Reuse::kUnlikely));
    return use(ViewsOf(chunks));
  }
  // A hint that chunks [first, last) will be read soon: a reader over local packs starts
  // reading them from disk in the background. The default does nothing.
  virtual void WillNeed(size_t /*first*/, size_t /*last*/) {}

 protected:
  // `get(i)` for each of chunks [first, last), stopping at the first error.
  template <class Get>
  static Result<std::vector<std::shared_ptr<const std::string>>> Collect(size_t first, size_t last,
                                                                         Get&& get) {
    std::vector<std::shared_ptr<const std::string>> out;
    for (size_t i = first; i < last; ++i) {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> chunk, get(i));
      out.push_back(std::move(chunk));
    }
    return out;
  }
};

// The bytes of file range [begin, end) that lie in `chunks`, consecutive chunks of which the
// first starts at file offset `start`: slices of the chunks themselves, for a writev or a
// FUSE reply of what LendChunks or ReadChunks handed over.
inline std::vector<struct iovec> SlicesInRange(std::span<const std::string_view> chunks,
                                               uint64_t start, uint64_t begin, uint64_t end) {
  std::vector<struct iovec> slices;
  slices.reserve(chunks.size());
  for (std::string_view c : chunks) {
    const uint64_t from = std::max(start, begin);
    const uint64_t to = std::min(start + c.size(), end);
    if (from < to) slices.push_back({const_cast<char*>(c.data()) + (from - start), to - from});
    start += c.size();
  }
  return slices;
}

struct SetAttrRequest {
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<int64_t> mtime_ns;
  std::optional<int64_t> atime_ns;
  // Replaces a directory's attributes (the S3 front end keeps bucket settings on the bucket
  // directory), or those of a file's current version, which keeps its version id (S3 object
  // tags change that way; older versions keep theirs).
  std::optional<Attributes> attributes;
  // Apply only while the path is a file whose current version has this id (a read-modify-write
  // of its attributes must not land on a newer version); FailedPrecondition otherwise.
  std::optional<std::string> if_version;
};

struct SnapshotInfo {
  std::string name;
  std::string path;       // the subtree it covers ("/" for everything)
  uint64_t sequence = 0;  // the commit sequence it names
  int64_t created_ns = 0;
};

struct VersionInfo {
  std::string version_id;
  uint64_t size = 0;
  std::string etag;
  int64_t mtime_ns = 0;
  uint64_t sequence = 0;  // when it became this path's content (or, for a marker, was removed)
  bool is_current = false;
  bool is_delete_marker = false;  // the path was removed at this sequence
};

// One entry of the ordered change feed.
struct Change {
  uint64_t sequence = 0;
  int64_t time_ns = 0;
  // "write", "mkdir", "rename", "unlink", "rmdir", "setattr", "symlink", "delete-version", ...
  std::string op;
  std::string path;
  std::string path2;  // rename target; for "delete-version", the version id
  std::string principal;
};

struct UsageInfo {
  uint64_t files = 0;
  uint64_t directories = 0;
  uint64_t logical_bytes = 0;     // sum of live file sizes
  uint64_t referenced_bytes = 0;  // sum of sizes of all retained versions (live + history)
  uint64_t unique_bytes = 0;      // distinct chunk bytes before compression
  uint64_t stored_bytes = 0;      // distinct chunk bytes after compression
  uint64_t pack_bytes = 0;        // bytes of pack files on disk (incl. garbage)
  uint64_t metadata_bytes = 0;    // approximate metadata store size
};

// Retention: a directory attribute "weft.keep-versions" = "all" (kKeepVersionsAttribute) on a
// directory or any of its ancestors makes garbage collection keep every non-current version of
// the files below it, whatever keep_noncurrent_ns says (S3 bucket versioning "Enabled"); only
// DeleteVersion removes them then.
inline constexpr const char* kKeepVersionsAttribute = "weft.keep-versions";

// Residency: a directory attribute "weft.residency" = "eu" (kResidencyAttribute; several tags
// comma-separated) restricts the directory and everything below it to spoke sites carrying
// one of those tags: the hub sends none of its metadata or chunks to any other spoke.
inline constexpr const char* kResidencyAttribute = "weft.residency";

struct GcOptions {
  // Non-current versions not held by a snapshot are kept this long after they stop being
  // current (0 = drop them now).
  int64_t keep_noncurrent_ns = 24LL * 3600 * 1'000'000'000;
};

struct GcReport {
  uint64_t versions_pruned = 0;
  uint64_t chunks_removed = 0;
  uint64_t bytes_reclaimed = 0;
  uint64_t packs_rewritten = 0;
};

struct FsckReport {
  uint64_t files_checked = 0;
  uint64_t chunks_checked = 0;
  std::vector<std::string> problems;  // empty = clean
};

class Volume {
 public:
  virtual ~Volume() = default;

  virtual Result<FileInfo> Stat(const RequestContext& ctx, const std::string& path,
                                const ReadOptions& opts = {}) = 0;
  virtual Result<ReadDirPage> ReadDir(const RequestContext& ctx, const std::string& path,
                                      const ReadDirOptions& opts = {}) = 0;

  virtual Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx,
                                                         const std::string& path,
                                                         const ReadOptions& opts = {}) = 0;
  // Opens a reader on a specific version from ListVersions (also a non-current one).
  virtual Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                          const std::string& path,
                                                          const std::string& version_id) = 0;

  // Starts a new version of `path` (created if missing; its parent must exist unless
  // opts.create_parents).
  virtual Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext& ctx,
                                                         const std::string& path,
                                                         const WriteOptions& opts = {}) = 0;

  // Commits finished writers of this volume as one atomic transaction with one data sync and
  // one metadata sync for all of them: every file becomes visible and durable together, or
  // none does (the writers are consumed either way). Tools that store many small files use it
  // instead of paying two syncs per file.
  virtual Result<std::vector<FileInfo>> CommitAll(
      const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) = 0;

  virtual Result<FileInfo> Mkdir(const RequestContext& ctx, const std::string& path,
                                 uint32_t mode = 0755, bool parents = false) = 0;
  virtual Result<FileInfo> Symlink(const RequestContext& ctx, const std::string& path,
                                   const std::string& target) = 0;
  // Creates a special file (IsSpecialFile(type)): a FIFO, a socket or a device node, with
  // permission bits `mode` and, for devices, device number `rdev`. AlreadyExists if the path
  // exists; InvalidArgument for any other type.
  virtual Result<FileInfo> Mknod(const RequestContext& ctx, const std::string& path, FileType type,
                                 uint32_t mode, uint64_t rdev) = 0;
  // Atomically moves `from` to `to`, replacing a file (or an empty directory) at `to`.
  virtual Status Rename(const RequestContext& ctx, const std::string& from,
                        const std::string& to) = 0;
  // Gives the file (or symlink, or special file) at `existing` a second name `path`, as
  // link(2): both name one inode, whose content, attributes and versions they share, and
  // which goes with its last name. AlreadyExists if `path` exists; IsADirectory for a
  // directory; ResourceExhausted past kMaxLinks names.
  virtual Result<FileInfo> Link(const RequestContext& ctx, const std::string& existing,
                                const std::string& path) = 0;
  // Removes one name; a file goes with its last name.
  virtual Status Unlink(const RequestContext& ctx, const std::string& path) = 0;
  virtual Status Rmdir(const RequestContext& ctx, const std::string& path) = 0;
  virtual Result<FileInfo> SetAttr(const RequestContext& ctx, const std::string& path,
                                   const SetAttrRequest& req) = 0;

  virtual Result<SnapshotInfo> CreateSnapshot(const RequestContext& ctx, const std::string& name,
                                              const std::string& path = "/") = 0;
  virtual Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext& ctx) = 0;
  virtual Status DeleteSnapshot(const RequestContext& ctx, const std::string& name) = 0;

  // Versions of the file at `path`, newest first, including non-current ones still retained.
  virtual Result<std::vector<VersionInfo>> ListVersions(const RequestContext& ctx,
                                                        const std::string& path) = 0;

  // Permanently removes one retained version of the file at `path` (S3 DELETE ?versionId=).
  // A non-current version leaves the version list; FailedPrecondition if a snapshot's
  // sequence falls inside its lifetime (the snapshot still reads it). Removing the current
  // version makes the next older entry of ListVersions current again: a content version is
  // restored with its version id, while a delete marker (or nothing) leaves the path removed,
  // as S3 does. NotFound for a version id the path does not have. Removing a delete marker
  // hides it from ListVersions (the history behind it stays, for snapshots); if it was the
  // newest entry, the content version before it becomes current again, under its own id.
  virtual Status DeleteVersion(const RequestContext& ctx, const std::string& path,
                               const std::string& version_id) = 0;

  // The ids among `ids` whose chunks this volume does not hold (a spoke uploads only those).
  virtual Result<std::vector<ChunkId>> MissingChunks(const RequestContext& ctx,
                                                     const std::vector<ChunkId>& ids) = 0;

  // Changes with sequence > `after`, oldest first, at most `limit`.
  virtual Result<std::vector<Change>> ReadChanges(const RequestContext& ctx, uint64_t after,
                                                  uint32_t limit) = 0;

  virtual Result<UsageInfo> Usage(const RequestContext& ctx) = 0;
  virtual Result<GcReport> CollectGarbage(const RequestContext& ctx, const GcOptions& opts) = 0;
  virtual Result<FsckReport> Fsck(const RequestContext& ctx) = 0;
};

}  // namespace weft
