// FileSystem: the injected file-system seam. Weft's stores touch disk only through it, so tests
// can run on memory (MemFileSystem) or inject crashes and full disks (FaultInjectionFileSystem).
// Implementations are thread-safe; individual file objects are not (one user at a time).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace weft {

// A file open for appending. Data is durable only after Sync() returns OK.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  // Flushes and fsyncs the file's data.
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
  // Bytes appended so far (including unsynced ones).
  virtual uint64_t Size() const = 0;
};

// A file open for positional reads; safe for concurrent ReadAt calls.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset` into `scratch`; returns the bytes read, fewer at EOF.
  virtual Result<std::string_view> ReadAt(uint64_t offset, size_t n, char* scratch) const = 0;
  virtual Result<uint64_t> Size() const = 0;
  // A hint that [offset, offset + length) will be read soon: a file on disk starts reading it
  // in the background, so reads that follow wait for one I/O instead of one each. The
  // default does nothing.
  virtual void WillNeed(uint64_t /*offset*/, uint64_t /*length*/) const {}
};

// The space of the file system holding a path, in bytes.
struct DiskSpace {
  static constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();
  uint64_t total = kUnlimited;
  uint64_t available = kUnlimited;  // to this (unprivileged) process
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // How full the file system holding `path` is. The default knows no limit (memory).
  virtual Result<DiskSpace> Space(const std::string& /*path*/) { return DiskSpace{}; }

  // Creates (truncating) a file for appending.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;

  virtual Status CreateDirs(const std::string& path) = 0;
  // Names (not paths) of the entries in `dir`, unsorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Atomically replaces `to` with `from`.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Makes directory entries (creates, renames, removes) in `dir` durable.
  virtual Status SyncDir(const std::string& dir) = 0;
};

// The real file system through POSIX calls. Process-wide instance; never destroyed.
FileSystem* PosixFileSystem();

// Reads a whole file; for small files (manifests, keys), not packs.
Result<std::string> ReadFileToString(FileSystem* fs, const std::string& path);
// Writes a file atomically and durably: temp file, fsync, rename, fsync of the directory.
Status WriteFileAtomically(FileSystem* fs, const std::string& path, std::string_view data);

}  // namespace weft
