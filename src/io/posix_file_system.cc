// PosixFileSystem: FileSystem over open/pread/write/fdatasync/rename/mkdir. Every error names
// the operation and path ("write /data/packs/7.pack: No space left on device").
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "io/file_system.h"
#include "io/internal/path.h"

namespace weft {
namespace {

// Small appends (index records, log entries) are gathered into one write(2) of up to
// kBufferSize bytes. Appends of kWriteThrough or more are written as they are: a pack's
// hand-offs (~1 MiB, less at a sync) would otherwise be copied twice, into fresh pages.
constexpr size_t kBufferSize = 1 << 20;
constexpr size_t kWriteThrough = 64 << 10;

Status PosixError(std::string_view op, const std::string& path) {
  std::string context(op);
  context += ' ';
  context += path;
  return ErrnoToStatus(errno, context);
}

// Ownership: owns fd_ and closes it in Close() or the destructor. Not thread-safe.
// After a failed write the file's tail is unknown, so the error sticks: every later Append or
// Sync returns it rather than writing past a hole.
class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();
  }
  PosixWritableFile(const PosixWritableFile&) = delete;
  PosixWritableFile& operator=(const PosixWritableFile&) = delete;

  Status Append(std::string_view data) override {
    WEFT_RETURN_IF_ERROR(CheckWritable("append to"));
    const bool small = data.size() < kWriteThrough;
    if (!small || data.size() > kBufferSize - buffer_.size()) {
      WEFT_RETURN_IF_ERROR(FlushBuffer());
    }
    if (small) {
      buffer_.append(data);
    } else {
      WEFT_RETURN_IF_ERROR(WriteAll(data));
    }
    size_ += data.size();
    return OkStatus();
  }

  Status Sync() override {
    WEFT_RETURN_IF_ERROR(CheckWritable("sync"));
    WEFT_RETURN_IF_ERROR(FlushBuffer());
    // fdatasync also persists the file size, which is all the metadata a reader needs.
    while (fdatasync(fd_) != 0) {
      if (errno == EINTR) continue;
      error_ = PosixError("fdatasync", path_);
      return error_;
    }
    return OkStatus();
  }

  Status Close() override {
    if (fd_ < 0) return error_;
    Status status = error_.ok() ? FlushBuffer() : error_;
    // Linux releases the descriptor even when close fails with EINTR, so never retry it.
    if (::close(fd_) != 0 && status.ok()) status = PosixError("close", path_);
    fd_ = -1;
    return status;
  }

  uint64_t Size() const override { return size_; }

 private:
  Status CheckWritable(std::string_view op) const {
    if (fd_ < 0) return FailedPrecondition(std::string(op) + " closed file " + path_);
    return error_;
  }

  Status FlushBuffer() {
    if (buffer_.empty()) return OkStatus();
    Status status = WriteAll(buffer_);
    buffer_.clear();
    return status;
  }

  Status WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = PosixError("write", path_);
        return error_;
      }
      if (n == 0) {  // Not expected for regular files; avoid spinning forever.
        error_ = IoError("write " + path_ + ": wrote 0 bytes");
        return error_;
      }
      data.remove_prefix(static_cast<size_t>(n));
      written_ += static_cast<uint64_t>(n);
    }
    StartWriteback();
    return OkStatus();
  }

  // Asks the kernel to start writing the bytes written so far, without waiting, every few
  // MiB. A later Sync then waits only for the last few MiB instead of everything since the
  // previous one, so disk writes overlap with the caller's CPU work (hashing, chunking).
  // A hint only: errors surface at Sync.
  void StartWriteback() {
    if (written_ - writeback_from_ < kWritebackStep) return;
    (void)::sync_file_range(fd_, static_cast<off_t>(writeback_from_),
                            static_cast<off_t>(written_ - writeback_from_), SYNC_FILE_RANGE_WRITE);
    writeback_from_ = written_;
  }

  static constexpr uint64_t kWritebackStep = 4 << 20;

  const std::string path_;
  int fd_;
  uint64_t written_ = 0;         // bytes handed to write(2)
  uint64_t writeback_from_ = 0;  // writeback was started for [0, writeback_from_)
  std::string buffer_;           // Appended but not yet written; at most kBufferSize bytes.
  uint64_t size_ = 0;
  Status error_;  // Sticky first write/sync failure.
};

// Ownership: owns fd_. Thread-safe: pread(2) keeps no file offset.
class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  PosixRandomAccessFile(const PosixRandomAccessFile&) = delete;
  PosixRandomAccessFile& operator=(const PosixRandomAccessFile&) = delete;

  Result<std::string_view> ReadAt(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    // pread may return fewer bytes than asked before EOF (signals, some file systems).
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("pread", path_);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return std::string_view(scratch, done);
  }

  void WillNeed(uint64_t offset, uint64_t length) const override {
    // Only a hint: a failure costs the read-ahead, never correctness.
    (void)::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                          POSIX_FADV_WILLNEED);
  }

  Result<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError("fstat", path_);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  const std::string path_;
  const int fd_;
};

// Stateless; thread-safe.
class PosixFileSystemImpl final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd;
    do {
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return PosixError("open", path);
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(path, fd));
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    int fd;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return PosixError("open", path);
    auto file = std::make_unique<PosixRandomAccessFile>(path, fd);
    // open(2) accepts a directory for reading; refuse here rather than on the first pread.
    struct stat st;
    if (::fstat(fd, &st) != 0) return PosixError("fstat", path);
    if (S_ISDIR(st.st_mode)) return IsADirectory("open " + path + ": is a directory");
    return std::unique_ptr<RandomAccessFile>(std::move(file));
  }

  Status CreateDirs(const std::string& path) override {
    std::string normal = io_internal::NormalizePath(path);
    if (normal.empty()) return InvalidArgument("mkdir: empty path");
    // Create each ancestor in turn, like mkdir -p.
    size_t pos = normal.front() == '/' ? 1 : 0;
    while (pos <= normal.size()) {
      size_t end = normal.find('/', pos);
      if (end == std::string::npos) end = normal.size();
      std::string prefix = normal.substr(0, end);
      if (::mkdir(prefix.c_str(), 0755) != 0) {
        if (errno != EEXIST) return PosixError("mkdir", prefix);
        struct stat st;
        if (::stat(prefix.c_str(), &st) != 0) return PosixError("stat", prefix);
        if (!S_ISDIR(st.st_mode)) {
          return end == normal.size()
                     ? AlreadyExists("mkdir " + prefix + ": is a file")
                     : NotADirectory("mkdir " + path + ": " + prefix + " is not a directory");
        }
      }
      pos = end + 1;
    }
    return OkStatus();
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());  // glibc opens it O_CLOEXEC.
    if (d == nullptr) return PosixError("opendir", dir);
    std::vector<std::string> names;
    while (true) {
      errno = 0;
      struct dirent* entry = ::readdir(d);
      if (entry == nullptr) break;
      std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    Status status = errno != 0 ? PosixError("readdir", dir) : OkStatus();
    ::closedir(d);
    if (!status.ok()) return status;
    return names;
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("unlink", path);
    return OkStatus();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename " + from + " to", to);
    return OkStatus();
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path);
    if (S_ISDIR(st.st_mode)) return IsADirectory("stat " + path + ": is a directory");
    return static_cast<uint64_t>(st.st_size);
  }

  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Result<DiskSpace> Space(const std::string& path) override {
    struct statvfs st;
    if (::statvfs(path.c_str(), &st) != 0) return PosixError("statvfs", path);
    return DiskSpace{static_cast<uint64_t>(st.f_blocks) * st.f_frsize,
                     static_cast<uint64_t>(st.f_bavail) * st.f_frsize};
  }

  Status SyncDir(const std::string& dir) override {
    int fd;
    do {
      fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return PosixError("open", dir);
    Status status;
    while (::fsync(fd) != 0) {
      if (errno == EINTR) continue;
      status = PosixError("fsync", dir);
      break;
    }
    ::close(fd);
    return status;
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static FileSystem* const fs = new PosixFileSystemImpl();
  return fs;
}

}  // namespace weft
