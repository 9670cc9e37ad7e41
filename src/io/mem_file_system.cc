#include "io/mem_file_system.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "io/internal/path.h"

namespace weft {
namespace {

using io_internal::Dirname;
using io_internal::NormalizePath;

// A file's bytes, shared by the namespace entry and every open handle, like an inode: a handle
// keeps reading and writing it after the name is renamed or removed.
struct Inode {
  std::mutex mu;
  std::string data;  // Guarded by mu.
};

class MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(std::string path, std::shared_ptr<Inode> inode)
      : path_(std::move(path)), inode_(std::move(inode)) {}

  Status Append(std::string_view data) override {
    if (closed_) return FailedPrecondition("append to closed file " + path_);
    std::lock_guard lock(inode_->mu);
    inode_->data.append(data);
    size_ += data.size();
    return OkStatus();
  }
  Status Sync() override {
    if (closed_) return FailedPrecondition("sync closed file " + path_);
    return OkStatus();
  }
  Status Close() override {
    closed_ = true;
    return OkStatus();
  }
  uint64_t Size() const override { return size_; }

 private:
  const std::string path_;
  const std::shared_ptr<Inode> inode_;
  uint64_t size_ = 0;
  bool closed_ = false;
};

class MemRandomAccessFile final : public RandomAccessFile {
 public:
  explicit MemRandomAccessFile(std::shared_ptr<Inode> inode) : inode_(std::move(inode)) {}

  Result<std::string_view> ReadAt(uint64_t offset, size_t n, char* scratch) const override {
    std::lock_guard lock(inode_->mu);
    const std::string& data = inode_->data;
    if (offset >= data.size()) return std::string_view(scratch, 0);
    size_t count = std::min<uint64_t>(n, data.size() - offset);
    std::copy_n(data.data() + offset, count, scratch);
    return std::string_view(scratch, count);
  }

  Result<uint64_t> Size() const override {
    std::lock_guard lock(inode_->mu);
    return inode_->data.size();
  }

 private:
  const std::shared_ptr<Inode> inode_;
};

// Lock order: mu_ before any Inode::mu.
class MemFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    std::string p = NormalizePath(path);
    std::lock_guard lock(mu_);
    if (IsDirLocked(p)) return IsADirectory("open " + path + ": is a directory");
    WEFT_RETURN_IF_ERROR(CheckParentLocked("open", p));
    std::shared_ptr<Inode>& inode = files_[p];
    if (inode == nullptr) {
      inode = std::make_shared<Inode>();
    } else {
      std::lock_guard inode_lock(inode->mu);
      inode->data.clear();
    }
    return std::unique_ptr<WritableFile>(std::make_unique<MemWritableFile>(p, inode));
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    std::string p = NormalizePath(path);
    std::lock_guard lock(mu_);
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, FindFileLocked("open", path, p));
    return std::unique_ptr<RandomAccessFile>(std::make_unique<MemRandomAccessFile>(inode));
  }

  Status CreateDirs(const std::string& path) override {
    std::string p = NormalizePath(path);
    if (p.empty()) return InvalidArgument("mkdir: empty path");
    std::lock_guard lock(mu_);
    // Check every ancestor before creating any, so a failure changes nothing.
    std::vector<std::string> missing;
    for (std::string dir = p; !IsDirLocked(dir); dir = Dirname(dir)) {
      if (files_.contains(dir)) {
        return dir == p ? AlreadyExists("mkdir " + path + ": is a file")
                        : NotADirectory("mkdir " + path + ": " + dir + " is not a directory");
      }
      missing.push_back(dir);
    }
    dirs_.insert(missing.begin(), missing.end());
    return OkStatus();
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    std::string d = NormalizePath(dir);
    std::lock_guard lock(mu_);
    if (!IsDirLocked(d)) {
      if (files_.contains(d)) return NotADirectory("opendir " + dir + ": not a directory");
      return NotFound("opendir " + dir + ": no such directory");
    }
    std::vector<std::string> names;
    auto add_children = [&](const std::string& p) {
      if (p != d && Dirname(p) == d) names.push_back(p.substr(p.rfind('/') + 1));
    };
    for (const auto& [p, inode] : files_) add_children(p);
    for (const std::string& p : dirs_) add_children(p);
    return names;
  }

  Status RemoveFile(const std::string& path) override {
    std::string p = NormalizePath(path);
    std::lock_guard lock(mu_);
    if (IsDirLocked(p)) return IsADirectory("unlink " + path + ": is a directory");
    if (files_.erase(p) == 0) return NotFound("unlink " + path + ": no such file");
    return OkStatus();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    std::string f = NormalizePath(from);
    std::string t = NormalizePath(to);
    const std::string what = "rename " + from + " to " + to;
    std::lock_guard lock(mu_);
    if (auto it = files_.find(f); it != files_.end()) {
      if (IsDirLocked(t)) return IsADirectory(what + ": target is a directory");
      WEFT_RETURN_IF_ERROR(CheckParentLocked("rename", t));
      if (f == t) return OkStatus();
      std::shared_ptr<Inode> inode = std::move(it->second);
      files_.erase(it);
      files_[t] = std::move(inode);
      return OkStatus();
    }
    if (!dirs_.contains(f)) {
      if (IsDirLocked(f)) return InvalidArgument(what + ": cannot rename a root directory");
      return NotFound(what + ": no such file or directory");
    }
    if (f == t) return OkStatus();
    if (files_.contains(t)) return NotADirectory(what + ": target is a file");
    if (t.starts_with(f + "/")) return InvalidArgument(what + ": target is inside the source");
    WEFT_RETURN_IF_ERROR(CheckParentLocked("rename", t));
    if (IsDirLocked(t)) {
      if (HasChildrenLocked(t)) return NotEmpty(what + ": target directory is not empty");
      dirs_.erase(t);
    }
    MoveTreeLocked(f, t);
    return OkStatus();
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    std::string p = NormalizePath(path);
    std::lock_guard lock(mu_);
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, FindFileLocked("stat", path, p));
    std::lock_guard inode_lock(inode->mu);
    return inode->data.size();
  }

  bool Exists(const std::string& path) override {
    std::string p = NormalizePath(path);
    std::lock_guard lock(mu_);
    return IsDirLocked(p) || files_.contains(p);
  }

  Status SyncDir(const std::string& dir) override {
    std::string d = NormalizePath(dir);
    std::lock_guard lock(mu_);
    if (IsDirLocked(d)) return OkStatus();
    if (files_.contains(d)) return NotADirectory("fsync " + dir + ": not a directory");
    return NotFound("fsync " + dir + ": no such directory");
  }

 private:
  bool IsDirLocked(const std::string& p) const { return p == "/" || p == "." || dirs_.contains(p); }

  Status CheckParentLocked(std::string_view op, const std::string& p) const {
    std::string parent = Dirname(p);
    if (IsDirLocked(parent)) return OkStatus();
    std::string m = std::string(op) + " " + p + ": ";
    if (files_.contains(parent)) return NotADirectory(m + parent + " is not a directory");
    return NotFound(m + "no such directory " + parent);
  }

  Result<std::shared_ptr<Inode>> FindFileLocked(std::string_view op, const std::string& path,
                                                const std::string& p) const {
    auto it = files_.find(p);
    if (it != files_.end()) return it->second;
    std::string m = std::string(op) + " " + path;
    if (IsDirLocked(p)) return IsADirectory(m + ": is a directory");
    return NotFound(m + ": no such file");
  }

  bool HasChildrenLocked(const std::string& d) const {
    auto is_child = [&](const std::string& p) { return p != d && Dirname(p) == d; };
    return std::any_of(files_.begin(), files_.end(),
                       [&](const auto& e) { return is_child(e.first); }) ||
           std::any_of(dirs_.begin(), dirs_.end(), is_child);
  }

  // Re-keys directory `from`, and everything below it, under `to`.
  void MoveTreeLocked(const std::string& from, const std::string& to) {
    const std::string prefix = from + "/";
    auto rekey = [&](const std::string& p) { return to + p.substr(from.size()); };
    std::map<std::string, std::shared_ptr<Inode>> moved_files;
    for (auto it = files_.lower_bound(prefix);
         it != files_.end() && it->first.starts_with(prefix);) {
      moved_files.emplace(rekey(it->first), std::move(it->second));
      it = files_.erase(it);
    }
    std::set<std::string> moved_dirs;
    for (auto it = dirs_.lower_bound(prefix); it != dirs_.end() && it->starts_with(prefix);) {
      moved_dirs.insert(rekey(*it));
      it = dirs_.erase(it);
    }
    dirs_.erase(from);
    dirs_.insert(to);
    files_.merge(moved_files);
    dirs_.merge(moved_dirs);
  }

  std::mutex mu_;
  // Guarded by mu_. Keys are normalized paths. dirs_ excludes the roots "/" and ".", which
  // always exist; a file's parent is always in dirs_ or a root.
  std::map<std::string, std::shared_ptr<Inode>> files_;
  std::set<std::string> dirs_;
};

}  // namespace

std::unique_ptr<FileSystem> NewMemFileSystem() {
  return std::make_unique<MemFileSystem>();
}

}  // namespace weft
