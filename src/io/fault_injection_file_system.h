// FaultInjectionFileSystem: wraps another FileSystem to simulate power loss, failing calls and
// a full disk, so every recovery path can be tested (LevelDB db/fault_injection_test.cc,
// RocksDB utilities/fault_injection_fs.h). Thread-safe: one mutex serialises every call,
// including the wrapped file system's I/O; this is a test tool, not a fast path.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "io/file_system.h"

namespace weft {

// Durability model, applied by DropUnsyncedData() ("the power went out"):
//  - File data: bytes appended through this file system survive only up to the file's last
//    successful WritableFile::Sync(). Reopening an existing file with NewWritableFile truncates
//    it, and the truncation counts as unsynced data loss too (the file comes back empty).
//  - Directory entries: creating a file, RemoveFile and Rename are undone unless SyncDir was
//    later called on the directory holding the name (for Rename: on both directories).
//    A new file whose directory was never synced disappears even if its data was synced; a
//    removed file comes back; a renamed file returns to its old name and the file it replaced
//    reappears with its durable bytes.
//  - Files this object never opened for writing count as fully durable; directories are
//    durable once CreateDirs returns (the interface has no way to remove one), and renaming
//    a directory is passed through untracked.
// To undo RemoveFile and Rename, the durable bytes of the file removed or replaced are copied
// into memory at the time of the call, so keep test files modest.
//
// Injected faults apply to mutating calls only: NewWritableFile, CreateDirs, RemoveFile,
// Rename, SyncDir, and WritableFile::Append/Sync/Close. A failed call changes nothing (a
// failed Close still releases the handle). Reads, ListDir, FileSize and Exists never fail by
// injection.
//
// Lifetime: the wrapped file system is not owned and must outlive this object; files opened
// through this object must not outlive it.
class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* base);
  ~FaultInjectionFileSystem() override;
  FaultInjectionFileSystem(const FaultInjectionFileSystem&) = delete;
  FaultInjectionFileSystem& operator=(const FaultInjectionFileSystem&) = delete;

  // Simulates power loss as described above, directly on the wrapped file system (injected
  // faults do not apply). Files still open for writing are closed first; every later call on
  // such a handle returns FailedPrecondition, as the process that held it is gone.
  Status DropUnsyncedData();

  // The next `n` mutating calls fail with `s`, later ones succeed. Replaces any earlier fault.
  void FailNextCalls(int n, Status s);
  // The next `n_calls` mutating calls succeed and every one after fails with `s` until
  // ClearFaults(): a disk that dies mid-operation. With MutatingCalls() counted on a clean run,
  // `for n in [0, count)` crashes an operation at every step.
  void FailAfter(int n_calls, Status s);
  // Total bytes that files written through this object may hold (untracked files count zero).
  // An Append that would exceed it fails with ResourceExhausted and writes nothing.
  void SetCapacity(uint64_t bytes);
  // Removes the injected faults and the capacity limit; keeps the durability bookkeeping.
  void ClearFaults();

  // Mutating calls attempted so far, failed ones included.
  uint64_t MutatingCalls() const;
  // Calls failed by FailNextCalls/FailAfter or by the capacity limit.
  uint64_t InjectedFailures() const;
  // Bytes of the file now at `path` that survive DropUnsyncedData if its name does: the last
  // synced length for files written through this object, the size for any other file.
  Result<uint64_t> SyncedSize(const std::string& path) const;

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  bool Exists(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  // With a capacity set, that capacity and what it leaves; else the wrapped system's.
  Result<DiskSpace> Space(const std::string& path) override;

 private:
  class File;
  friend class File;

  // Per file written through this object; shared with open handles so it follows renames.
  struct FileState {
    uint64_t size = 0;    // Bytes appended since the last truncation.
    uint64_t synced = 0;  // Prefix of size made durable by Sync.
  };

  // A directory-entry change not yet made durable by SyncDir, with what undoing it needs.
  struct PendingOp {
    enum Kind { kCreate, kRemove, kRename } kind;
    std::string path;                     // kCreate/kRemove: the name; kRename: the source.
    std::string to;                       // kRename: the target.
    bool replaced = false;                // Undo must recreate the file removed or replaced.
    std::string replaced_data;            // Durable bytes of the file removed or replaced.
    std::set<std::string> unsynced_dirs;  // SyncDir of each makes the op durable.
  };

  Status MaybeFailLocked();
  uint64_t UsedLocked() const;
  bool FitsLocked(uint64_t bytes) const;
  Result<std::string> DurableBytesLocked(const std::string& path);
  Status WriteDurableLocked(const std::string& path, std::string_view data);
  bool PendingCreateLocked(const std::string& path) const;

  FileSystem* const base_;

  mutable std::mutex mu_;
  // All below guarded by mu_. Paths are normalized.
  std::map<std::string, std::shared_ptr<FileState>> files_;
  std::vector<PendingOp> pending_;  // Oldest first.
  std::set<File*> open_files_;
  uint64_t succeed_before_fault_ = 0;
  uint64_t faults_left_ = 0;  // Calls still to fail once succeed_before_fault_ is spent.
  Status fault_;
  uint64_t capacity_ = std::numeric_limits<uint64_t>::max();  // Bytes; max means unlimited.
  uint64_t mutating_calls_ = 0;
  uint64_t injected_failures_ = 0;
};

}  // namespace weft
