#define FUSE_USE_VERSION 312
#include "frontends/fuse/fuse_mount.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "frontends/fuse/node_table.h"
#include "frontends/fuse/process_jobs.h"
#include "vfs/path.h"

namespace weft::fuse {

int ErrnoOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidArgument:
      return EINVAL;
    case StatusCode::kNotFound:
      return ENOENT;
    case StatusCode::kAlreadyExists:
      return EEXIST;
    case StatusCode::kNotADirectory:
      return ENOTDIR;
    case StatusCode::kIsADirectory:
      return EISDIR;
    case StatusCode::kNotEmpty:
      return ENOTEMPTY;
    case StatusCode::kPermissionDenied:
      return EACCES;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAborted:
      return EBUSY;
    case StatusCode::kReadOnly:
      return EROFS;
    case StatusCode::kOutOfRange:
      return EINVAL;
    case StatusCode::kResourceExhausted:
      return ENOSPC;
    case StatusCode::kUnavailable:
      return EHOSTUNREACH;
    case StatusCode::kUnimplemented:
      return ENOTSUP;
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      return EIO;
  }
  return EIO;
}

namespace {

constexpr size_t kIoBytes = 1 << 20;  // largest read and write the kernel sends
// The largest file the mount writes (EFBIG past it): ext4's limit for the staging file, and a
// manifest of 1 Mi zero chunks for a hole that size.
constexpr uint64_t kMaxFileBytes = uint64_t{16} << 40;
constexpr size_t kMaxReaders = 1024;           // cached readers (each may hold a chunk)
constexpr uint32_t kLookupReadWindow = 64;     // LOOKUP-time reads judged together
constexpr uint32_t kLookupReadPause = 1024;    // lookups without one after a poor window
constexpr double kImmutableTimeout = 86400.0;  // snapshot trees never change
constexpr uint32_t kReadDirPage = 1000;
// Synthetic paths of the cache control (see fuse_mount.h).
constexpr const char* kWeftDir = "/.weft";
constexpr const char* kSnapshotsDir = "/.weft/snapshots";
constexpr const char* kControlDir = "/.weft/cache";
constexpr const char* kStatsFile = "/.weft/cache/stats";
constexpr const char* kHintsFile = "/.weft/cache/hints";
// Inode numbers the synthetic entries show (the volume's own start at 1).
constexpr uint64_t kSyntheticIno = 1ull << 62;

bool InSnapshot(const std::string& path) {
  return path.rfind("/.weft/snapshots/", 0) == 0;
}
bool UnderWeft(const std::string& path) {
  return path == kWeftDir || path.rfind("/.weft/", 0) == 0;
}

struct timespec ToTimespec(int64_t ns) {
  struct timespec ts {};
  ts.tv_sec = ns / 1'000'000'000;
  ts.tv_nsec = ns % 1'000'000'000;
  if (ts.tv_nsec < 0) {
    ts.tv_sec -= 1;
    ts.tv_nsec += 1'000'000'000;
  }
  return ts;
}

int64_t NowNs() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct stat StatOf(const FileInfo& info, uint64_t fallback_ino) {
  struct stat st {};
  st.st_ino = info.inode != 0 ? info.inode : fallback_ino;
  switch (info.type) {
    case FileType::kFile:
      st.st_mode = S_IFREG;
      break;
    case FileType::kDirectory:
      st.st_mode = S_IFDIR;
      break;
    case FileType::kSymlink:
      st.st_mode = S_IFLNK;
      break;
    case FileType::kFifo:
      st.st_mode = S_IFIFO;
      break;
    case FileType::kSocket:
      st.st_mode = S_IFSOCK;
      break;
    case FileType::kCharDevice:
      st.st_mode = S_IFCHR;
      break;
    case FileType::kBlockDevice:
      st.st_mode = S_IFBLK;
      break;
  }
  st.st_mode |= info.mode & 07777;
  // 2 + subdirectories for a directory (1 where the volume does not count them, which tells
  // tools such as find not to count on it).
  st.st_nlink = info.nlink;
  st.st_rdev = static_cast<dev_t>(info.rdev);
  st.st_uid = info.uid;
  st.st_gid = info.gid;
  st.st_size =
      static_cast<off_t>(info.type == FileType::kSymlink ? info.symlink_target.size() : info.size);
  st.st_blksize = kIoBytes;
  st.st_blocks = static_cast<blkcnt_t>((info.size + 511) / 512);
  st.st_mtim = ToTimespec(info.mtime_ns);
  st.st_atim = ToTimespec(info.atime_ns);
  st.st_ctim = ToTimespec(info.ctime_ns != 0 ? info.ctime_ns : info.mtime_ns);
  return st;
}

FileInfo SyntheticDir(const std::string& path, uint64_t ino) {
  FileInfo info;
  info.path = path;
  info.inode = kSyntheticIno + ino;
  info.type = FileType::kDirectory;
  info.mode = 0555;
  return info;
}

// A file or directory open through the mount; fi->fh is its number in HandleTable.
struct Handle {
  virtual ~Handle() = default;
};

// Open handles by number. An operation holds its handle for as long as it runs, so a RELEASE
// that overtakes a request still in progress (seen with direct-I/O reads) cannot free the
// handle under it.
class HandleTable {
 public:
  uint64_t Add(std::shared_ptr<Handle> handle) {
    std::lock_guard lock(mu_);
    uint64_t id = next_++;
    handles_[id] = std::move(handle);
    return id;
  }
  std::shared_ptr<Handle> Get(uint64_t id) {
    std::lock_guard lock(mu_);
    auto it = handles_.find(id);
    return it == handles_.end() ? nullptr : it->second;
  }
  std::shared_ptr<Handle> Remove(uint64_t id) {
    std::lock_guard lock(mu_);
    auto it = handles_.find(id);
    if (it == handles_.end()) return nullptr;
    std::shared_ptr<Handle> handle = std::move(it->second);
    handles_.erase(it);
    return handle;
  }

 private:
  std::mutex mu_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Handle>> handles_;
};

// Reads one fixed version: a concurrent overwrite never tears it.
struct ReadHandle : Handle {
  uint64_t node = 0;
  std::shared_ptr<FileReader> reader;  // shared with the open cache
  bool started_at_lookup = false;      // opened, and its start read from disk, by a LOOKUP
  std::atomic<bool> read{false};       // a READ used it

  // The end offset of each chunk. Filled on first use; never changed after, so the reference
  // stays valid and may be read without the lock.
  const std::vector<uint64_t>& ChunkEnds() {
    std::lock_guard lock(mu);
    if (chunk_ends.empty()) {
      uint64_t at = 0;
      for (const ChunkRef& c : reader->chunks()) chunk_ends.push_back(at += c.length);
    }
    return chunk_ends;
  }

  // Read-ahead state (MountOptions::read_ahead_bytes).
  std::mutex mu;
  std::vector<uint64_t> chunk_ends;  // GUARDED_BY(mu) until filled; see ChunkEnds
  uint64_t last_end = 0;             // where the furthest read so far ended
  size_t hinted_until = 0;           // chunks before this index were hinted to the disk
};

// Bytes served from memory: the cache control's stats.
struct MemoryHandle : Handle {
  std::string bytes;
};

// A write to the cache control's hints file: the body is taken at close.
struct HintHandle : Handle {
  std::mutex mu;
  std::string body;
  bool sent = false;
};

// A file open for writing. Its bytes live in an unlinked temporary file until a close or
// fsync commits them as a new version. The current content is copied in only when the handle
// first reads or writes without having truncated it.
struct WriteHandle : Handle {
  std::mutex mu;
  uint64_t node = 0;
  RequestContext ctx;
  int fd = -1;
  // The version the file had at open (none for a truncating open): Load copies it in even
  // after the name is gone, and an unlinked file's fstat is answered from it.
  std::shared_ptr<FileReader> source;
  FileInfo opened;  // the file's attributes at open (a truncating open has no source)
  // Atomic so getattr can read them (and fstat fd) without waiting for a commit under mu.
  std::atomic<bool> loaded = false;  // fd holds the content (copied in, or truncated to empty)
  std::atomic<bool> dirty = false;   // fd differs from the committed version

  // A handle that starts empty feeds writes arriving in order from offset 0 to `stream` as
  // well, after replying, so that chunking and hashing overlap the writer's next write and
  // close commits without reading the staging file back. Any other write, a truncate, a
  // rename or a chmod before close falls back to committing the staging file.
  bool streamable = false;
  std::unique_ptr<FileWriter> stream;
  std::string stream_path;
  uint32_t stream_mode = 0;
  uint64_t streamed = 0;  // bytes [0, streamed) went to stream

  void AbandonStream() {
    if (stream) stream->Abort();
    stream.reset();
    streamable = false;
  }

  ~WriteHandle() override {
    if (fd >= 0) ::close(fd);
  }
};

struct DirHandle : Handle {
  std::mutex mu;
  uint64_t node = 0;
  std::string path;
  std::vector<DirEntry> entries;  // fetched so far; entry i has offset i + 3
  bool complete = false;
};

class FuseMountImpl final : public FuseMount {
 public:
  FuseMountImpl(Volume* volume, MountOptions options)
      : volume_(volume), options_(std::move(options)) {}

  ~FuseMountImpl() override {
    {
      std::lock_guard lock(notify_mu_);
      stopping_ = true;
    }
    notify_cv_.notify_all();
    if (notifier_.joinable()) notifier_.join();
    if (session_ != nullptr) {
      if (mounted_) fuse_session_unmount(session_);
      fuse_session_destroy(session_);
    }
  }

  Status Start() {
    struct stat st {};
    if (::stat(options_.mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument("mount point " + options_.mountpoint + " is not a directory");
    }
    if (::stat(options_.staging_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument("staging directory " + options_.staging_dir + " is not a directory");
    }
    // nodev: a device node anyone made in the volume must not open a device of this machine.
    // noatime: reads do not change access times (docs/mount.md), and the mount says so.
    std::string opts =
        "fsname=weft:" + options_.source + ",subtype=weft,default_permissions,nodev,noatime";
    if (options_.allow_other) opts += ",allow_other";
    if (options_.read_only) opts += ",ro";
    std::vector<std::string> argv = {"weft", "-o", opts};
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    struct fuse_args args = FUSE_ARGS_INIT(static_cast<int>(raw.size()), raw.data());
    static const struct fuse_lowlevel_ops ops = Ops();
    session_ = fuse_session_new(&args, &ops, sizeof(ops), this);
    if (session_ == nullptr) return Internal("fuse_session_new failed for " + opts);
    if (fuse_session_mount(session_, options_.mountpoint.c_str()) != 0) {
      return Unavailable("cannot mount at " + options_.mountpoint +
                         " (is /dev/fuse there, and fusermount3 installed for non-root users?)");
    }
    mounted_ = true;
    WidenReadahead();
    notifier_ = std::thread([this] { NotifyLoop(); });
    return OkStatus();
  }

  // The kernel caps a FUSE mount's readahead at its default (128 KiB), whatever INIT asks for;
  // a sequential reader then waits for 128 KiB round trips. Root may raise the mount's
  // read_ahead_kb in sysfs; found through mountinfo, since a stat of the mount point would
  // ask this (not yet serving) daemon. Best effort: others keep the default.
  void WidenReadahead() {
    std::FILE* info = std::fopen("/proc/self/mountinfo", "r");
    if (info == nullptr) return;
    char* line = nullptr;
    size_t cap = 0;
    std::string device;
    char real[PATH_MAX];
    const std::string target =
        ::realpath(options_.mountpoint.c_str(), real) != nullptr ? real : options_.mountpoint;
    while (::getline(&line, &cap, info) > 0) {
      // "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ..."
      char dev[64], root[PATH_MAX], point[PATH_MAX];
      if (std::sscanf(line, "%*s %*s %63s %4095s %4095s", dev, root, point) == 3 &&
          target == point) {
        device = dev;  // the last match is the newest mount
      }
    }
    std::free(line);
    std::fclose(info);
    if (device.empty()) return;
    std::FILE* ra = std::fopen(("/sys/class/bdi/" + device + "/read_ahead_kb").c_str(), "w");
    if (ra == nullptr) return;
    std::fprintf(ra, "%zu\n", kIoBytes / 1024);
    std::fclose(ra);
  }

  Status Run() override {
    if (fuse_set_signal_handlers(session_) != 0) return Internal("fuse_set_signal_handlers failed");
    struct fuse_loop_config* config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, 64);
    int rc = fuse_session_loop_mt(session_, config);
    fuse_loop_cfg_destroy(config);
    fuse_remove_signal_handlers(session_);
    fuse_session_unmount(session_);
    mounted_ = false;
    // A signal ends the loop with its number; that is a clean stop.
    if (rc < 0) return IoError("FUSE session ended with error " + std::to_string(-rc));
    return OkStatus();
  }

  // Queued, not done here: the caller may be a spoke acknowledging a lease revocation that a
  // request of this very mount is waiting for while the kernel holds the directory's lock,
  // which a notification needs too.
  void Invalidate(const std::vector<std::string>& dirs,
                  const std::vector<std::string>& subtrees) override {
    for (const NodeTable::Child& c : nodes_.Under(dirs, subtrees)) ForgetOpen(c.id);
    Queue(Pending{dirs, subtrees, 0});
  }

  // A kernel notification to send: names and pages under directories, or the attributes of
  // one node.
  struct Pending {
    std::vector<std::string> dirs;
    std::vector<std::string> subtrees;
    uint64_t attributes_of = 0;
  };

  void Queue(Pending pending) {
    std::lock_guard lock(notify_mu_);
    pending_.push_back(std::move(pending));
    notify_cv_.notify_one();
  }

  void NotifyLoop() {
    std::unique_lock lock(notify_mu_);
    for (;;) {
      notify_cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      Pending next = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      Notify(next);
      lock.lock();
    }
  }

  void Notify(const Pending& pending) {
    if (pending.attributes_of != 0) {
      // A negative offset: the attributes only; the pages are right (writes went through).
      fuse_lowlevel_notify_inval_inode(session_, pending.attributes_of, -1, 0);
      return;
    }
    // Collected first: the kernel may answer a notification with a FORGET, which takes the
    // node table's lock on another thread.
    // (Invalidate dropped their open cache already, before it returned.)
    std::vector<NodeTable::Child> children = nodes_.Under(pending.dirs, pending.subtrees);
    for (const NodeTable::Child& c : children) {
      fuse_lowlevel_notify_inval_entry(session_, c.parent, c.name.c_str(), c.name.size());
      fuse_lowlevel_notify_inval_inode(session_, c.id, 0, 0);
    }
  }

  void SetCacheControl(CacheControl control) override {
    std::lock_guard lock(mu_);
    control_ = std::move(control);
  }

 private:
  static FuseMountImpl* Self(fuse_req_t req) {
    return static_cast<FuseMountImpl*>(fuse_req_userdata(req));
  }

  RequestContext ContextOf(fuse_req_t req) {
    RequestContext ctx = options_.context;
    const struct fuse_ctx* caller = fuse_req_ctx(req);
    ctx.uid = caller->uid;
    ctx.gid = caller->gid;
    // NeuralCache counts reads and hints by principal: one job per hinting process tree.
    if (pid_t job = jobs_.JobOf(caller->pid)) ctx.principal += "/pid:" + std::to_string(job);
    return ctx;
  }

  // Who a new entry at `path` is created by: the caller, but with the group of a setgid parent
  // directory, whose bit a new directory inherits (as Linux file systems do; the kernel leaves
  // it to a FUSE file system).
  RequestContext CreatorOf(fuse_req_t req, const std::string& path, mode_t* mode = nullptr) {
    RequestContext ctx = ContextOf(req);
    Result<FileInfo> parent = volume_->Stat(ctx, ParentPath(path));
    if (parent.ok() && (parent->mode & S_ISGID)) {
      ctx.gid = parent->gid;
      if (mode != nullptr && S_ISDIR(*mode)) *mode |= S_ISGID;
    }
    return ctx;
  }

  bool HasControl() {
    std::lock_guard lock(mu_);
    return static_cast<bool>(control_.stats);
  }

  double TimeoutFor(const std::string& path) const {
    return InSnapshot(path) ? kImmutableTimeout : options_.attr_timeout_s;
  }
  // The kernel keeps an inode per name, so it cannot know that a change through one name of a
  // file with several (a write, an unlink of another name) changes the others' attributes:
  // those it must ask for each time.
  double AttrTimeoutFor(const std::string& path, const FileInfo& info) const {
    return info.nlink > 1 && info.type != FileType::kDirectory ? 0 : TimeoutFor(path);
  }

  // The path node `ino` names; otherwise answers ESTALE and returns nullopt. A node loses its
  // path when it is unlinked or renamed over; a request that resolved the name just before
  // (open racing a rename over the file) then gets ESTALE, on which the kernel walks the path
  // again and finds what the name holds now.
  std::optional<std::string> PathOr(fuse_req_t req, fuse_ino_t ino) {
    std::optional<std::string> path = nodes_.PathOf(ino);
    if (!path) fuse_reply_err(req, ESTALE);
    return path;
  }

  std::optional<std::string> ChildOr(fuse_req_t req, fuse_ino_t parent, const char* name) {
    std::optional<std::string> dir = PathOr(req, parent);
    if (!dir) return std::nullopt;
    std::string_view n(name);
    if (n.size() > kMaxNameBytes || dir->size() + 1 + n.size() > kMaxPathBytes) {
      fuse_reply_err(req, ENAMETOOLONG);
      return std::nullopt;
    }
    if (!ValidateName(n).ok()) {
      fuse_reply_err(req, EINVAL);
      return std::nullopt;
    }
    return ChildPath(*dir, std::string(n));
  }

  bool RejectWrite(fuse_req_t req, const std::string& path) {
    if (!options_.read_only && !UnderWeft(path)) return false;
    fuse_reply_err(req, EROFS);
    return true;
  }

  // Stat through the volume, with the cache control's synthetic entries and the sizes of
  // writes still open here.
  Result<FileInfo> StatPath(const RequestContext& ctx, const std::string& path) {
    if (UnderWeft(path) && HasControl()) {
      if (path == kControlDir) return SyntheticDir(path, 1);
      if (path == kStatsFile || path == kHintsFile) {
        FileInfo info;
        info.path = path;
        info.inode = kSyntheticIno + (path == kStatsFile ? 2 : 3);
        info.mode = path == kStatsFile ? 0444 : 0222;
        info.mtime_ns = NowNs();
        return info;
      }
    }
    Result<FileInfo> info = volume_->Stat(ctx, path);
    if (!info.ok() && path == kWeftDir && info.status().code() == StatusCode::kNotFound &&
        HasControl()) {
      return SyntheticDir(path, 0);
    }
    return info;
  }

  // Applies open writes' sizes to what the volume says of node `ino`. A handle in writes_ is
  // not deleted while mu_ is held.
  void OverlayOpenWrites(fuse_ino_t ino, struct stat* st) {
    std::lock_guard lock(mu_);
    auto it = writes_.find(ino);
    if (it == writes_.end()) return;
    for (WriteHandle* w : it->second) {
      if (!w->loaded) continue;
      struct stat tmp {};
      if (::fstat(w->fd, &tmp) == 0) {
        st->st_size = tmp.st_size;
        st->st_blocks = tmp.st_blocks;
        if (w->dirty) {
          // Written and not yet committed: the commit's times will be about these.
          st->st_mtim = tmp.st_mtim;
          if (std::tie(tmp.st_ctim.tv_sec, tmp.st_ctim.tv_nsec) >
              std::tie(st->st_ctim.tv_sec, st->st_ctim.tv_nsec)) {
            st->st_ctim = tmp.st_ctim;
          }
        }
      }
      return;
    }
  }

  void ReplyEntry(fuse_req_t req, const std::string& path, const FileInfo& info) {
    ReplyEntryOf(req, nodes_.Lookup(path), path, info);
  }

  // Replies with node ino, whose lookup count the caller has raised (nodes_.Lookup).
  void ReplyEntryOf(fuse_req_t req, fuse_ino_t ino, const std::string& path, const FileInfo& info) {
    struct fuse_entry_param e {};
    e.ino = ino;
    e.attr = StatOf(info, e.ino);
    OverlayOpenWrites(e.ino, &e.attr);
    e.entry_timeout = TimeoutFor(path);
    e.attr_timeout = AttrTimeoutFor(path, info);
    if (fuse_reply_entry(req, &e) != 0) nodes_.Forget(e.ino, 1);
  }

  void ReplyAttr(fuse_req_t req, fuse_ino_t ino, const std::string& path, const FileInfo& info) {
    struct stat st = StatOf(info, ino);
    OverlayOpenWrites(ino, &st);
    fuse_reply_attr(req, &st, AttrTimeoutFor(path, info));
  }

  // Asks the disk for the chunks up to read_ahead_bytes past a read that continues (within
  // the kernel's own readahead window, which may reorder requests) where earlier ones ended.
  // Only a hint: loading the chunks on background threads into the chunk cache, as this did
  // before, made the first cold `cat` of 1 GiB through a fresh mount 2-3x slower (490-790
  // vs 1,500-1,780 MB/s; later passes the same), since replies keep no chunks (OpRead) and
  // the loads only filled the cache with fresh memory.
  void HintAheadOf(ReadHandle& r, uint64_t off, uint64_t size) {
    const uint64_t end = off + size;
    const std::vector<uint64_t>& ends = r.ChunkEnds();
    size_t first = 0, last = 0;
    {
      std::lock_guard lock(r.mu);
      const bool sequential = off <= r.last_end + kIoBytes && off + 4 * kIoBytes >= r.last_end;
      r.last_end = std::max(r.last_end, end);
      if (!sequential || off == 0) return;
      auto index_of = [&](uint64_t offset) {
        return static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), offset) -
                                   ends.begin());
      };
      first = std::max(r.hinted_until, index_of(end));
      last = std::min(ends.size(), index_of(end + options_.read_ahead_bytes) + 1);
      if (first >= last) return;
      r.hinted_until = last;
    }
    r.reader->WillNeed(first, last);  // one disk request for the window, not one per chunk
  }

  // ---- the open cache ----
  // What this mount last opened of a node: its version (whose pages the kernel may keep) and
  // the reader, which the next open reuses instead of resolving the path again. Readers are
  // kept only when this mount is the volume's only writer (MountOptions::exclusive): then
  // whatever changes a node's content or name goes through here and forgets it, so a reused
  // reader is always the current version.

  std::shared_ptr<FileReader> CachedReader(uint64_t node) {
    std::lock_guard lock(versions_mu_);
    auto it = readers_.find(node);
    return it == readers_.end() ? nullptr : it->second;
  }

  // Records an open; true when the kernel's pages of the node hold this same version.
  bool RememberOpen(uint64_t node, const std::shared_ptr<FileReader>& reader, bool writing) {
    const std::string& version = reader->info().version_id;
    std::lock_guard lock(versions_mu_);
    // A file with several names changes through nodes of other names, which this one does
    // not know of: neither its pages nor its reader are kept.
    if (reader->info().nlink > 1) {
      cached_versions_.erase(node);
      readers_.erase(node);
      return false;
    }
    std::string& cached = cached_versions_[node];
    const bool same = cached == version && !writing;
    cached = version;
    if (writing || !options_.exclusive) return false;
    if (readers_.size() >= kMaxReaders && readers_.count(node) == 0) {
      readers_.erase(readers_.begin());
    }
    readers_[node] = reader;
    return same;
  }

  void ForgetOpen(uint64_t node) {
    std::lock_guard lock(versions_mu_);
    cached_versions_.erase(node);
    readers_.erase(node);
    node_reads_.erase(node);
  }

  void ForgetOpen(const std::string& path) {
    std::optional<uint64_t> id = nodes_.IdOf(path);
    if (id) ForgetOpen(*id);
  }

  // ---- writes ----

  Result<int> NewStagingFile() {
    int fd = ::open(options_.staging_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string name = options_.staging_dir + "/.weft-write-XXXXXX";
    fd = ::mkstemp(name.data());
    if (fd < 0) return IoError("cannot create a staging file in " + options_.staging_dir);
    ::unlink(name.c_str());
    return fd;
  }

  // Whether the caller of `req` gave up (a signal: the kernel sent FUSE_INTERRUPT), or the
  // daemon is stopping (SIGTERM ends the session, which waits for the requests in flight).
  // Long operations check it between pieces, so even a SIGKILLed caller is let go at once.
  // A RELEASE (no `req`) is never cut short: nobody could be told its write was lost.
  bool Interrupted(fuse_req_t req) const {
    return req != nullptr && (fuse_session_exited(session_) || fuse_req_interrupted(req));
  }
  static Status InterruptedError() { return Aborted("interrupted by a signal"); }
  // The errno for `status`: EINTR when it failed because the caller was interrupted.
  int ErrnoFor(fuse_req_t req, const Status& status) const {
    const bool ours =
        status.code() == StatusCode::kAborted && status.message() == InterruptedError().message();
    return ours && Interrupted(req) ? EINTR : ErrnoOf(status);
  }

  // Copies the committed content of the handle's file into its staging file, once. Holes
  // (zero chunks) stay holes of the staging file: nothing is read or written for them.
  Status Load(WriteHandle& w, fuse_req_t req) {
    if (w.loaded) return OkStatus();
    std::optional<std::string> path = nodes_.PathOf(w.node);
    // The current version, as another writer may have committed since the open; the version
    // the handle opened only once the name is gone (unlinked while open).
    const bool unlinked = !path && w.source;
    if (unlinked) path = w.source->info().path;
    if (path) {
      Result<std::shared_ptr<FileReader>> reader = w.source;
      if (!unlinked) {
        Result<std::unique_ptr<FileReader>> opened = volume_->OpenReader(w.ctx, *path);
        reader = opened.ok() ? Result<std::shared_ptr<FileReader>>(std::move(*opened))
                             : Result<std::shared_ptr<FileReader>>(opened.status());
      }
      if (!reader.ok() && reader.status().code() != StatusCode::kNotFound) return reader.status();
      if (reader.ok()) {
        const std::vector<ChunkRef>& chunks = (*reader)->chunks();
        uint64_t offset = 0;
        for (size_t i = 0; i < chunks.size();) {
          if (chunks[i].is_hole()) {
            offset += chunks[i++].length;
            continue;
          }
          uint64_t run = 0;  // the data chunks from i on, read as one range
          for (; i < chunks.size() && !chunks[i].is_hole(); ++i) run += chunks[i].length;
          for (const uint64_t end = offset + run; offset < end;) {
            if (Interrupted(req)) return InterruptedError();
            WEFT_ASSIGN_OR_RETURN(
                std::string piece,
                (*reader)->ReadAt(offset, std::min<uint64_t>(kIoBytes, end - offset)));
            if (piece.empty()) return Corruption(*path + ": ended early while staging it");
            if (::pwrite(w.fd, piece.data(), piece.size(), static_cast<off_t>(offset)) !=
                static_cast<ssize_t>(piece.size())) {
              return ResourceExhausted("cannot stage " + *path + " in " + options_.staging_dir +
                                       ": " + std::strerror(errno));
            }
            offset += piece.size();
          }
        }
        if (::ftruncate(w.fd, static_cast<off_t>((*reader)->info().size)) != 0) {
          return ResourceExhausted("cannot stage " + *path + " in " + options_.staging_dir + ": " +
                                   std::strerror(errno));
        }
      }
    }
    w.loaded = true;
    return OkStatus();
  }

  // Writes the staging file to `writer`: its data through the chunker, its holes (a truncate
  // that extended the file, ranges a writer seeked over) as zero chunks, never read.
  Status CopyStaged(WriteHandle& w, FileWriter& writer, const std::string& path, fuse_req_t req) {
    struct stat st {};
    if (::fstat(w.fd, &st) != 0) return IoError("cannot stat the staged bytes of " + path);
    const off_t end = st.st_size;
    std::string buffer(kIoBytes, '\0');
    for (off_t offset = 0; offset < end;) {
      if (Interrupted(req)) return InterruptedError();
      // File systems without hole support report all data (SEEK_DATA = offset).
      off_t data = ::lseek(w.fd, offset, SEEK_DATA);
      if (data < 0) data = errno == ENXIO ? end : offset;
      if (data > offset) {
        WEFT_RETURN_IF_ERROR(writer.WriteZeros(static_cast<uint64_t>(data - offset)));
        offset = data;
        continue;
      }
      off_t hole = ::lseek(w.fd, offset, SEEK_HOLE);
      if (hole < 0 || hole > end) hole = end;
      for (; offset < hole;) {
        if (Interrupted(req)) return InterruptedError();
        const size_t want = static_cast<size_t>(std::min<off_t>(hole - offset, kIoBytes));
        const ssize_t n = ::pread(w.fd, buffer.data(), want, offset);
        if (n < 0) return IoError("cannot read the staged bytes of " + path);
        if (n == 0) return IoError("the staged bytes of " + path + " ended early");
        WEFT_RETURN_IF_ERROR(
            writer.Write(AsBytes(std::string_view(buffer.data(), static_cast<size_t>(n)))));
        offset += n;
      }
    }
    return OkStatus();
  }

  // Makes the staged bytes the file's new version. An unlinked file's bytes go with it.
  Status Commit(WriteHandle& w, fuse_req_t req) {
    if (!w.dirty) return OkStatus();
    std::optional<std::string> path = nodes_.PathOf(w.node);
    if (!path) {
      w.AbandonStream();
      w.dirty = false;
      // The file may live on under another name, which the mount cannot find from here: say
      // the bytes were not kept rather than drop them quietly (docs/mount.md).
      const FileInfo& at_open = w.source ? w.source->info() : w.opened;
      if (at_open.nlink > 1) {
        return IoError(at_open.path +
                       ": the name written through was removed; the file's other names were "
                       "not changed");
      }
      return OkStatus();
    }
    WriteOptions opts;
    Result<FileInfo> current = volume_->Stat(w.ctx, *path);
    if (current.ok()) opts.mode = current->mode;
    if (w.stream) {
      struct stat st {};
      if (::fstat(w.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == w.streamed &&
          *path == w.stream_path && opts.mode == w.stream_mode) {
        std::unique_ptr<FileWriter> streamed = std::move(w.stream);
        w.streamable = false;  // what is written after this commit goes the staging way
        WEFT_RETURN_IF_ERROR(streamed->Commit().status());
        return Committed(w);
      }
      w.AbandonStream();
    }
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileWriter> writer,
                          volume_->OpenWriter(w.ctx, *path, opts));
    WEFT_RETURN_IF_ERROR(CopyStaged(w, *writer, *path, req));
    WEFT_RETURN_IF_ERROR(writer->Commit().status());
    return Committed(w);
  }

  Status Committed(WriteHandle& w) {
    w.dirty = false;
    ForgetOpen(w.node);
    // The new version's mtime and ctime are the volume's: the kernel asks again.
    Queue(Pending{{}, {}, w.node});
    return OkStatus();
  }

  // Called under w.mu before a write lands at `off`: whether its bytes go to the stream too.
  bool Streams(WriteHandle& w, uint64_t off) {
    if (!w.streamable) return false;
    if (off != w.streamed) {
      w.AbandonStream();
      return false;
    }
    if (w.stream) return true;
    std::optional<std::string> path = nodes_.PathOf(w.node);
    Result<FileInfo> current = path ? volume_->Stat(w.ctx, *path) : NotFound("unlinked");
    WriteOptions opts;
    if (current.ok()) opts.mode = current->mode;
    Result<std::unique_ptr<FileWriter>> writer =
        current.ok() ? volume_->OpenWriter(w.ctx, *path, opts) : current.status();
    if (!writer.ok()) {
      w.streamable = false;  // the staging file still has everything
      return false;
    }
    w.stream = std::move(*writer);
    w.stream_path = *path;
    w.stream_mode = opts.mode;
    return true;
  }

  // `known`: the file's attributes, when the caller has just read them (open and create do).
  Result<std::unique_ptr<WriteHandle>> OpenWrite(const RequestContext& ctx, uint64_t node,
                                                 bool truncate,
                                                 const std::optional<FileInfo>& known = {}) {
    auto w = std::make_unique<WriteHandle>();
    w->node = node;
    w->ctx = ctx;
    WEFT_ASSIGN_OR_RETURN(w->fd, NewStagingFile());
    if (std::optional<std::string> path = nodes_.PathOf(node)) {
      if (!truncate) {
        Result<std::unique_ptr<FileReader>> reader = volume_->OpenReader(ctx, *path);
        if (reader.ok()) w->source = std::move(*reader);
      } else if (known) {
        w->opened = *known;
      } else if (Result<FileInfo> info = volume_->Stat(ctx, *path); info.ok()) {
        w->opened = *info;
      }
    }
    if (truncate) {
      w->loaded = true;
      w->dirty = true;
      w->streamable = true;
    }
    std::lock_guard lock(mu_);
    if (writes_[node].insert(w.get()).second) ++open_writes_;
    return w;
  }

  void CloseWrite(WriteHandle* w) {
    std::lock_guard lock(mu_);
    auto it = writes_.find(w->node);
    if (it == writes_.end()) return;
    if (it->second.erase(w) > 0) --open_writes_;
    if (it->second.empty()) writes_.erase(it);
  }

  // Read handles (and directory handles) open on `node`, and the file they read: the fstat of
  // one whose name is gone.
  void TrackRead(uint64_t node, const FileInfo& info, int delta) {
    std::lock_guard lock(mu_);
    auto& [count, known] = reads_[node];
    count += delta;
    if (delta > 0) known = info;
    if (count <= 0) reads_.erase(node);
  }

  // What a handle open on `node` says the file is: its staged size if one writes it, else the
  // version it opened. For a node whose name is gone.
  std::optional<FileInfo> OpenInfo(uint64_t node) {
    // Under mu_: a handle in writes_ is not freed while it is held (CloseWrite takes it).
    std::lock_guard lock(mu_);
    if (auto w = writes_.find(node); w != writes_.end() && !w->second.empty()) {
      const WriteHandle& h = **w->second.begin();
      FileInfo info = h.source ? h.source->info() : h.opened;
      info.type = FileType::kFile;
      struct stat st {};
      if (h.loaded && ::fstat(h.fd, &st) == 0) info.size = static_cast<uint64_t>(st.st_size);
      return info;
    }
    auto it = reads_.find(node);
    if (it == reads_.end()) return std::nullopt;
    return it->second.second;
  }

  // POSIX: a read after a write returns what was written, on any descriptor. A reader of a node
  // that a descriptor here has written and not yet committed reads what that one staged. (The
  // kernel's pages of the node, which the write updated, answer most such reads first.)
  // Replies and returns true if there is one.
  bool ReadFromLocalWriter(fuse_req_t req, uint64_t node, size_t size, off_t off) {
    if (open_writes_.load(std::memory_order_relaxed) == 0) return false;  // reads stay unlocked
    // Under mu_: a handle in writes_ is not freed while it is held (CloseWrite takes it).
    std::lock_guard lock(mu_);
    auto it = writes_.find(node);
    if (it == writes_.end()) return false;
    for (WriteHandle* w : it->second) {
      if (!w->loaded || !w->dirty) continue;
      std::string buffer(size, '\0');
      ssize_t n = ::pread(w->fd, buffer.data(), size, off);
      if (n < 0) return fuse_reply_err(req, EIO), true;
      fuse_reply_buf(req, buffer.data(), static_cast<size_t>(n));
      return true;
    }
    return false;
  }

  // A handle already open on `node` for writing, if any (truncate goes through it).
  WriteHandle* OpenWriteOf(uint64_t node) {
    std::lock_guard lock(mu_);
    auto it = writes_.find(node);
    return it == writes_.end() || it->second.empty() ? nullptr : *it->second.begin();
  }

  Status Truncate(const RequestContext& ctx, uint64_t node, uint64_t size, fuse_req_t req) {
    WriteHandle* open = OpenWriteOf(node);
    std::unique_ptr<WriteHandle> own;
    if (open == nullptr) {
      WEFT_ASSIGN_OR_RETURN(own, OpenWrite(ctx, node, size == 0));
      open = own.get();
    }
    Status done;
    {
      std::lock_guard lock(open->mu);
      open->AbandonStream();
      done = Load(*open, req);
      if (done.ok() && ::ftruncate(open->fd, static_cast<off_t>(size)) != 0) {
        done = ResourceExhausted("cannot truncate in " + options_.staging_dir);
      }
      if (done.ok()) open->dirty = true;
      // Without a handle open the truncation is its own version; with one, its close commits.
      if (done.ok() && own) done = Commit(*open, req);
    }
    if (own) CloseWrite(own.get());
    return done;
  }

  // ---- operations ----

  static void OpInit(void* userdata, struct fuse_conn_info* conn) {
    auto* self = static_cast<FuseMountImpl*>(userdata);
    // Nothing can change a read-only exclusive volume: opens need no round trip at all (the
    // first OPEN answers ENOSYS; the kernel then opens without asking and keeps the pages).
    self->zero_open_ = (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) && self->options_.read_only &&
                       self->options_.exclusive;
    conn->max_write = kIoBytes;
    conn->max_readahead = kIoBytes;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    // Writes reach us as written: the staging file is the only copy until commit.
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  }

  static void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path) return;
    const RequestContext ctx = self->ContextOf(req);
    // (Files only: the control files under /.weft are the stat's to answer.)
    const bool may_be_file = !UnderWeft(*path) || InSnapshot(*path);
    if (self->zero_open_ && may_be_file && self->LookupStartingRead(req, ctx, *path)) return;
    Result<FileInfo> info = self->StatPath(ctx, *path);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    self->ReplyEntry(req, *path, *info);
  }

  // On a zero-message-open mount a LOOKUP is usually followed by a READ of the file's start
  // (open, then read). So the lookup opens the file's reader, whose FileInfo answers it,
  // caches it as the node's reader and asks the disk for the first MiB before replying: the
  // disk works while the kernel and the application turn the entry into a READ, which finds
  // the reader and the bytes on their way. (Asking after the reply, or reading the bytes on
  // this thread for the READ to take, measured slower: the READ then waited longer for the
  // disk, or for a thread switch more.) Lookups that no READ follows (a scan that only
  // stats) would read for nothing: when fewer than half of a window of such starts were
  // read, lookups only stat for the next kLookupReadPause. Returns whether it answered req
  // (false: not a file, or paused; the caller stats as usual).
  bool LookupStartingRead(fuse_req_t req, const RequestContext& ctx, const std::string& path) {
    {
      std::lock_guard lock(versions_mu_);
      if (lookup_read_pause_ > 0) {
        --lookup_read_pause_;
        return false;
      }
    }
    Result<std::unique_ptr<FileReader>> reader = volume_->OpenReader(ctx, path);
    if (!reader.ok() && reader.status().code() == StatusCode::kNotFound) {
      fuse_reply_err(req, ENOENT);  // what a stat would find as well
      return true;
    }
    if (!reader.ok()) return false;  // a directory or a link; or an error the stat reports
    const FileInfo info = (*reader)->info();
    const fuse_ino_t ino = nodes_.Lookup(path);
    auto handle = std::make_shared<ReadHandle>();
    handle->reader = std::move(*reader);
    handle->started_at_lookup = true;
    bool started = false;
    if (info.size > 0) {
      std::lock_guard lock(versions_mu_);
      started = KeepNodeReaderLocked(ino, handle) == handle;  // else one was cached already
      if (started && ++lookup_reads_started_ >= kLookupReadWindow) {
        if (lookup_reads_used_ < kLookupReadWindow / 2) lookup_read_pause_ = kLookupReadPause;
        lookup_reads_started_ = lookup_reads_used_ = 0;
      }
    }
    if (started) {
      const std::vector<uint64_t>& ends = handle->ChunkEnds();
      const size_t last = std::lower_bound(ends.begin(), ends.end(), kIoBytes) - ends.begin();
      handle->reader->WillNeed(0, std::min(last + 1, ends.size()));  // the first kIoBytes
    }
    ReplyEntryOf(req, ino, path, info);
    return true;
  }

  void NoteReadOf(ReadHandle& h) {
    if (!h.started_at_lookup || h.read.exchange(true)) return;
    std::lock_guard lock(versions_mu_);
    ++lookup_reads_used_;
  }

  static void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    Self(req)->ForgetNode(ino, nlookup);
    fuse_reply_none(req);
  }

  static void OpForgetMulti(fuse_req_t req, size_t count, struct fuse_forget_data* forgets) {
    for (size_t i = 0; i < count; ++i) Self(req)->ForgetNode(forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
  }

  void ForgetNode(uint64_t id, uint64_t lookups) {
    nodes_.Forget(id, lookups);
    if (!nodes_.PathOf(id)) ForgetOpen(id);
  }

  static void OpGetattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->nodes_.PathOf(ino);
    if (!path) {
      // Unlinked but still open (fstat; the kernel rarely names the handle): the handles
      // open on the node know its file.
      // It has no name left.
      // No name left that the mount knows of (another name of the file may remain; the mount
      // cannot find it from here).
      auto gone = [](FileInfo info) {
        info.nlink = 0;
        return info;
      };
      if (fi != nullptr) {
        std::shared_ptr<Handle> held = self->handles_.Get(fi->fh);
        if (auto* r = dynamic_cast<ReadHandle*>(held.get())) {
          return self->ReplyAttr(req, ino, r->reader->info().path, gone(r->reader->info()));
        }
      }
      if (std::optional<FileInfo> open = self->OpenInfo(ino)) {
        return self->ReplyAttr(req, ino, open->path, gone(*open));
      }
      return (void)fuse_reply_err(req, ESTALE);  // see PathOr
    }
    Result<FileInfo> info = self->StatPath(self->ContextOf(req), *path);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    self->ReplyAttr(req, ino, *path, *info);
  }

  static void OpSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                        struct fuse_file_info*) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->PathOr(req, ino);
    if (!path || self->RejectWrite(req, *path)) return;
    RequestContext ctx = self->ContextOf(req);
    if ((to_set & FUSE_SET_ATTR_SIZE) && static_cast<uint64_t>(attr->st_size) > kMaxFileBytes) {
      return (void)fuse_reply_err(req, EFBIG);
    }
    self->ForgetOpen(ino);
    if (to_set & FUSE_SET_ATTR_SIZE) {
      Status truncated = self->Truncate(ctx, ino, static_cast<uint64_t>(attr->st_size), req);
      if (!truncated.ok()) return (void)fuse_reply_err(req, self->ErrnoFor(req, truncated));
    }
    SetAttrRequest change;
    if (to_set & FUSE_SET_ATTR_MODE) change.mode = attr->st_mode & 07777;
    if (to_set & FUSE_SET_ATTR_UID) change.uid = attr->st_uid;
    if (to_set & FUSE_SET_ATTR_GID) change.gid = attr->st_gid;
    if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
      change.mtime_ns = NowNs();
    } else if (to_set & FUSE_SET_ATTR_MTIME) {
      change.mtime_ns =
          static_cast<int64_t>(attr->st_mtim.tv_sec) * 1'000'000'000 + attr->st_mtim.tv_nsec;
    }
    // An atime is kept when set; reads do not change it (noatime).
    if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
      change.atime_ns = NowNs();
    } else if (to_set & FUSE_SET_ATTR_ATIME) {
      change.atime_ns =
          static_cast<int64_t>(attr->st_atim.tv_sec) * 1'000'000'000 + attr->st_atim.tv_nsec;
    }
    if (change.mode || change.uid || change.gid || change.mtime_ns || change.atime_ns) {
      Result<FileInfo> changed = self->volume_->SetAttr(ctx, *path, change);
      if (!changed.ok()) return (void)fuse_reply_err(req, ErrnoOf(changed.status()));
    }
    Result<FileInfo> info = self->StatPath(ctx, *path);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    self->ReplyAttr(req, ino, *path, *info);
  }

  static void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->PathOr(req, ino);
    if (!path) return;
    Result<FileInfo> info = self->volume_->Stat(self->ContextOf(req), *path);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    if (info->type != FileType::kSymlink) return (void)fuse_reply_err(req, EINVAL);
    fuse_reply_readlink(req, info->symlink_target.c_str());
  }

  // A new empty file, visible at once (O_CREAT, mknod): an empty version, committed only if
  // nothing is at the path yet.
  Result<FileInfo> CreateEmpty(const RequestContext& ctx, const std::string& path, mode_t mode) {
    WriteOptions opts;
    opts.mode = mode & 07777;
    opts.if_version = "";
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileWriter> writer, volume_->OpenWriter(ctx, path, opts));
    Result<FileInfo> info = writer->Commit();
    if (!info.ok() && info.status().code() == StatusCode::kFailedPrecondition) {
      return AlreadyExists(path + " exists");
    }
    return info;
  }

  static void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                      dev_t rdev) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path || self->RejectWrite(req, *path)) return;
    // FIFOs, sockets and devices are entries only: the kernel makes a pipe of a FIFO it opens,
    // and the mount is nodev, so a device node opens nothing.
    std::optional<FileType> special = S_ISFIFO(mode)   ? FileType::kFifo
                                      : S_ISSOCK(mode) ? FileType::kSocket
                                      : S_ISCHR(mode)  ? FileType::kCharDevice
                                      : S_ISBLK(mode)  ? FileType::kBlockDevice
                                                       : std::optional<FileType>();
    if (!special && !S_ISREG(mode)) return (void)fuse_reply_err(req, EINVAL);
    RequestContext ctx = self->CreatorOf(req, *path);
    Result<FileInfo> info = special ? self->volume_->Mknod(ctx, *path, *special, mode & 07777, rdev)
                                    : self->CreateEmpty(ctx, *path, mode);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    self->ReplyEntry(req, *path, *info);
  }

  static void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path) return;
    if (ParentPath(*path) == kSnapshotsDir && !self->options_.read_only) {
      // mkdir /.weft/snapshots/NAME takes a snapshot of the whole volume.
      RequestContext ctx = self->ContextOf(req);
      Result<SnapshotInfo> snap = self->volume_->CreateSnapshot(ctx, name, "/");
      if (!snap.ok()) return (void)fuse_reply_err(req, ErrnoOf(snap.status()));
      Result<FileInfo> info = self->volume_->Stat(ctx, *path);
      if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
      return self->ReplyEntry(req, *path, *info);
    }
    if (self->RejectWrite(req, *path)) return;
    mode |= S_IFDIR;  // the kernel does not always say
    RequestContext ctx = self->CreatorOf(req, *path, &mode);
    Result<FileInfo> info = self->volume_->Mkdir(ctx, *path, mode & 07777);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    self->ReplyEntry(req, *path, *info);
  }

  static void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path || self->RejectWrite(req, *path)) return;
    Status removed = self->volume_->Unlink(self->ContextOf(req), *path);
    if (!removed.ok()) return (void)fuse_reply_err(req, ErrnoOf(removed));
    self->ForgetOpen(*path);
    self->nodes_.Detach(*path);
    fuse_reply_err(req, 0);
  }

  static void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path) return;
    Status removed;
    if (ParentPath(*path) == kSnapshotsDir && !self->options_.read_only) {
      removed = self->volume_->DeleteSnapshot(self->ContextOf(req), name);
    } else if (self->RejectWrite(req, *path)) {
      return;
    } else {
      removed = self->volume_->Rmdir(self->ContextOf(req), *path);
    }
    if (!removed.ok()) return (void)fuse_reply_err(req, ErrnoOf(removed));
    self->ForgetOpen(*path);
    self->nodes_.Detach(*path);
    fuse_reply_err(req, 0);
  }

  static void OpSymlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path || self->RejectWrite(req, *path)) return;
    Result<FileInfo> info = self->volume_->Symlink(self->CreatorOf(req, *path), *path, link);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    self->ReplyEntry(req, *path, *info);
  }

  static void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                       const char* newname, unsigned int flags) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> from = self->ChildOr(req, parent, name);
    if (!from) return;
    std::optional<std::string> to = self->ChildOr(req, newparent, newname);
    if (!to || self->RejectWrite(req, *from) || self->RejectWrite(req, *to)) return;
    RequestContext ctx = self->ContextOf(req);
    if (flags & RENAME_EXCHANGE) return (void)fuse_reply_err(req, EINVAL);
    if (flags & RENAME_NOREPLACE) {
      Result<FileInfo> there = self->volume_->Stat(ctx, *to);
      if (there.ok()) return (void)fuse_reply_err(req, EEXIST);
    }
    // Two names of one file: rename(2) does nothing, and both names keep their nodes (and
    // their open writes).
    if (Result<FileInfo> src = self->volume_->Stat(ctx, *from);
        src.ok() && src->nlink > 1 && src->type != FileType::kDirectory) {
      Result<FileInfo> dst = self->volume_->Stat(ctx, *to);
      if (dst.ok() && dst->inode == src->inode) {
        // The kernel moves its entry all the same: have it look both names up again.
        self->Queue(Pending{{ParentPath(*from), ParentPath(*to)}, {}, 0});
        return (void)fuse_reply_err(req, 0);
      }
    }
    Status moved = self->volume_->Rename(ctx, *from, *to);
    if (!moved.ok()) return (void)fuse_reply_err(req, ErrnoOf(moved));
    self->ForgetOpen(*to);
    self->nodes_.Rename(*from, *to);
    fuse_reply_err(req, 0);
  }

  static void OpLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char* name) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> existing = self->PathOr(req, ino);
    if (!existing) return;
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path || self->RejectWrite(req, *path) || self->RejectWrite(req, *existing)) return;
    Result<FileInfo> info = self->volume_->Link(self->ContextOf(req), *existing, *path);
    if (!info.ok()) {
      const bool too_many = info.status().code() == StatusCode::kResourceExhausted;
      return (void)fuse_reply_err(req, too_many ? EMLINK : ErrnoOf(info.status()));
    }
    // The kernel gives the new name an inode of its own and keeps the existing one's
    // attributes (one link) until they time out: drop them, and the reader kept for it.
    self->ForgetOpen(ino);
    fuse_lowlevel_notify_inval_inode(self->session_, ino, -1, 0);
    self->ReplyEntry(req, *path, *info);
  }

  std::shared_ptr<Handle> OpenControl(fuse_req_t req, const std::string& path,
                                      struct fuse_file_info* fi) {
    std::lock_guard lock(mu_);
    fi->direct_io = 1;  // generated content: the size the kernel was told means nothing
    if (path == kStatsFile) {
      if ((fi->flags & O_ACCMODE) != O_RDONLY) return fuse_reply_err(req, EACCES), nullptr;
      auto h = std::make_shared<MemoryHandle>();
      h->bytes = control_.stats() + "\n";
      fi->noflush = 1;
      return h;
    }
    if ((fi->flags & O_ACCMODE) == O_RDONLY) return fuse_reply_err(req, EACCES), nullptr;
    return std::make_shared<HintHandle>();
  }

  static void OpOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    if (self->zero_open_) return (void)fuse_reply_err(req, ENOSYS);
    std::optional<std::string> path = self->PathOr(req, ino);
    if (!path) return;
    RequestContext ctx = self->ContextOf(req);
    if ((*path == kStatsFile || *path == kHintsFile) && self->HasControl()) {
      std::shared_ptr<Handle> h = self->OpenControl(req, *path, fi);
      if (h == nullptr) return;
      fi->fh = self->handles_.Add(std::move(h));
      return (void)fuse_reply_open(req, fi);
    }
    if ((fi->flags & O_ACCMODE) == O_RDONLY) {
      bool writing = false;
      {
        std::lock_guard lock(self->mu_);
        writing = self->writes_.count(ino) > 0;
      }
      std::shared_ptr<FileReader> reader = writing ? nullptr : self->CachedReader(ino);
      if (reader == nullptr) {
        Result<std::unique_ptr<FileReader>> opened = self->volume_->OpenReader(ctx, *path);
        if (!opened.ok()) return (void)fuse_reply_err(req, ErrnoOf(opened.status()));
        reader = std::move(*opened);
      }
      // Keep the kernel's pages when they hold this very version (or a snapshot's).
      fi->keep_cache = self->RememberOpen(ino, reader, writing) || InSnapshot(*path);
      // A reader has nothing to commit at close: spare the kernel the FLUSH round trip.
      fi->noflush = 1;
      auto h = std::make_shared<ReadHandle>();
      h->node = ino;
      h->reader = std::move(reader);
      self->TrackRead(ino, h->reader->info(), +1);
      fi->fh = self->handles_.Add(std::move(h));
      return (void)fuse_reply_open(req, fi);
    }
    if (self->RejectWrite(req, *path)) return;
    Result<FileInfo> info = self->volume_->Stat(ctx, *path);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    if (info->type == FileType::kDirectory) return (void)fuse_reply_err(req, EISDIR);
    Result<std::unique_ptr<WriteHandle>> w = self->OpenWrite(ctx, ino, fi->flags & O_TRUNC, *info);
    if (!w.ok()) return (void)fuse_reply_err(req, ErrnoOf(w.status()));
    self->ForgetOpen(ino);
    fi->keep_cache = 0;
    fi->fh = self->handles_.Add(std::shared_ptr<WriteHandle>(std::move(*w)));
    fuse_reply_open(req, fi);
  }

  static void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                       struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->ChildOr(req, parent, name);
    if (!path || self->RejectWrite(req, *path)) return;
    RequestContext ctx = self->CreatorOf(req, *path);
    Result<FileInfo> info = self->CreateEmpty(ctx, *path, mode);
    const bool created = info.ok();
    if (!info.ok() && info.status().code() == StatusCode::kAlreadyExists && !(fi->flags & O_EXCL)) {
      info = self->volume_->Stat(ctx, *path);  // another client made it first: open that
    }
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    struct fuse_entry_param e {};
    e.ino = self->nodes_.Lookup(*path);
    Result<std::unique_ptr<WriteHandle>> w =
        self->OpenWrite(ctx, e.ino, created || (fi->flags & O_TRUNC), *info);
    if (!w.ok()) {
      self->nodes_.Forget(e.ino, 1);
      return (void)fuse_reply_err(req, ErrnoOf(w.status()));
    }
    if (created) (*w)->dirty = false;  // the empty version is committed already
    e.attr = StatOf(*info, e.ino);
    e.attr_timeout = e.entry_timeout = self->TimeoutFor(*path);
    WriteHandle* handle = w->get();
    fi->fh = self->handles_.Add(std::shared_ptr<WriteHandle>(std::move(*w)));
    if (fuse_reply_create(req, &e, fi) != 0) {
      self->CloseWrite(handle);
      self->handles_.Remove(fi->fh);
      self->nodes_.Forget(e.ino, 1);
    }
  }

  // Replies with slices of the chunks themselves: copying them into one buffer first cost a
  // copy and fresh pages per byte, a fifth of the daemon's CPU on sequential reads. Chunks
  // not worth keeping are borrowed (LendChunks): a local volume's pack read buffer goes out
  // as it is, with no copy into chunk strings and no memory of their own.
  static void ReplyFromChunks(fuse_req_t req, ReadHandle& r, uint64_t off, size_t size,
                              Reuse reuse) {
    const std::vector<uint64_t>& ends = r.ChunkEnds();
    const uint64_t end = std::min<uint64_t>(off + size, r.reader->info().size);
    if (off >= end) return (void)fuse_reply_buf(req, nullptr, 0);
    const size_t first = std::upper_bound(ends.begin(), ends.end(), off) - ends.begin();
    const size_t last = std::lower_bound(ends.begin(), ends.end(), end) - ends.begin() + 1;
    auto reply = [&](std::span<const std::string_view> chunks) {
      std::vector<iovec> iov = SlicesInRange(chunks, first == 0 ? 0 : ends[first - 1], off, end);
      fuse_reply_iov(req, iov.data(), static_cast<int>(iov.size()));
    };
    if (reuse == Reuse::kUnlikely) {
      bool replied = false;
      Status lent = r.reader->LendChunks(first, last, [&](std::span<const std::string_view> c) {
        reply(c);
        replied = true;
        return OkStatus();
      });
      if (!replied) fuse_reply_err(req, ErrnoOf(lent));
      return;
    }
    Result<std::vector<std::shared_ptr<const std::string>>> chunks =
        r.reader->ReadChunks(first, last, reuse);
    if (!chunks.ok()) return (void)fuse_reply_err(req, ErrnoOf(chunks.status()));
    reply(ViewsOf(*chunks));
  }

  static void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::shared_ptr<Handle> held = self->handles_.Get(fi->fh);
    if (held == nullptr && self->zero_open_) {
      Result<std::shared_ptr<ReadHandle>> node = self->NodeReader(req, ino);
      if (!node.ok()) return (void)fuse_reply_err(req, ErrnoOf(node.status()));
      self->NoteReadOf(**node);
      held = std::move(*node);
    }
    Handle* h = held.get();
    if (auto* r = dynamic_cast<ReadHandle*>(h)) {
      if (self->ReadFromLocalWriter(req, ino, size, off)) return;
      if (self->options_.read_ahead_bytes > 0) {
        self->HintAheadOf(*r, static_cast<uint64_t>(off), size);
      }
      // On an exclusive mount the kernel keeps the pages of a file while its version stays
      // (zero-message opens, or keep_cache on reopening it), so the chunk cache would hold a
      // second copy: not keeping the chunks lets each reply reuse memory the daemon has
      // touched already. On this VM a first touch of a page costs ~11 us: 40 % of the time
      // of a cold 115 KB file went there (1,100 -> 1,900 files/s).
      return ReplyFromChunks(req, *r, static_cast<uint64_t>(off), size,
                             self->options_.exclusive ? Reuse::kUnlikely : Reuse::kLikely);
    }
    if (auto* m = dynamic_cast<MemoryHandle*>(h)) {
      size_t start = std::min(m->bytes.size(), static_cast<size_t>(off));
      size_t n = std::min(size, m->bytes.size() - start);
      return (void)fuse_reply_buf(req, m->bytes.data() + start, n);
    }
    auto* w = dynamic_cast<WriteHandle*>(h);
    if (w == nullptr) return (void)fuse_reply_err(req, EBADF);
    std::lock_guard lock(w->mu);
    Status loaded = self->Load(*w, req);
    if (!loaded.ok()) return (void)fuse_reply_err(req, self->ErrnoFor(req, loaded));
    std::string buffer(size, '\0');
    ssize_t n = ::pread(w->fd, buffer.data(), size, off);
    if (n < 0) return (void)fuse_reply_err(req, EIO);
    fuse_reply_buf(req, buffer.data(), static_cast<size_t>(n));
  }

  static void OpWrite(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off,
                      struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::shared_ptr<Handle> held = self->handles_.Get(fi->fh);
    Handle* h = held.get();
    if (auto* hint = dynamic_cast<HintHandle*>(h)) {
      std::lock_guard lock(hint->mu);
      constexpr size_t kMaxHintBytes = 64 << 20;
      size_t end = static_cast<size_t>(off) + size;
      if (end > kMaxHintBytes) return (void)fuse_reply_err(req, EFBIG);
      if (hint->body.size() < end) hint->body.resize(end);
      std::memcpy(hint->body.data() + off, buf, size);
      return (void)fuse_reply_write(req, size);
    }
    auto* w = dynamic_cast<WriteHandle*>(h);
    if (w == nullptr) return (void)fuse_reply_err(req, EBADF);
    if (static_cast<uint64_t>(off) + size > kMaxFileBytes) return (void)fuse_reply_err(req, EFBIG);
    std::lock_guard lock(w->mu);
    Status loaded = self->Load(*w, req);
    if (!loaded.ok()) return (void)fuse_reply_err(req, self->ErrnoFor(req, loaded));
    const bool streams = self->Streams(*w, static_cast<uint64_t>(off));
    ssize_t n = ::pwrite(w->fd, buf, size, off);
    if (n < 0) return (void)fuse_reply_err(req, errno == ENOSPC ? ENOSPC : EIO);
    w->dirty = true;
    // Replied first: the writer's next request is on its way while these bytes are hashed
    // (the request buffer stays ours until this handler returns).
    fuse_reply_write(req, static_cast<size_t>(n));
    if (!streams) return;
    if (w->stream->Write(AsBytes(std::string_view(buf, static_cast<size_t>(n)))).ok()) {
      w->streamed += static_cast<uint64_t>(n);
    } else {
      w->AbandonStream();
    }
  }

  // Without opens (zero_open_) reads go through one handle per node, kept while the kernel
  // holds the node (at most kMaxReaders of them).
  Result<std::shared_ptr<ReadHandle>> NodeReader(fuse_req_t req, uint64_t node) {
    {
      std::lock_guard lock(versions_mu_);
      auto it = node_reads_.find(node);
      if (it != node_reads_.end()) return it->second;
    }
    std::optional<std::string> path = nodes_.PathOf(node);
    if (!path) return NotFound("node " + std::to_string(node) + " names no file");
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader,
                          volume_->OpenReader(ContextOf(req), *path));
    auto handle = std::make_shared<ReadHandle>();
    handle->reader = std::move(reader);
    std::lock_guard lock(versions_mu_);
    return KeepNodeReaderLocked(node, std::move(handle));
  }

  // Caches `handle` as node's reader (at most kMaxReaders), unless another thread cached one
  // first; returns the one cached.
  std::shared_ptr<ReadHandle> KeepNodeReaderLocked(uint64_t node,
                                                   std::shared_ptr<ReadHandle> handle) {
    if (node_reads_.size() >= kMaxReaders) node_reads_.erase(node_reads_.begin());
    return node_reads_.emplace(node, std::move(handle)).first->second;
  }

  // A close (of each descriptor): commits, so that close() reports a failed commit.
  static void OpFlush(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    // Nothing to commit on a read-only volume: ENOSYS, and the kernel stops asking.
    if (self->zero_open_) return (void)fuse_reply_err(req, ENOSYS);
    std::shared_ptr<Handle> held = self->handles_.Get(fi->fh);
    Handle* h = held.get();
    if (auto* hint = dynamic_cast<HintHandle*>(h)) {
      std::lock_guard lock(hint->mu);
      if (hint->sent || hint->body.empty()) return (void)fuse_reply_err(req, 0);
      hint->sent = true;
      CacheControl control;
      {
        std::lock_guard clock(self->mu_);
        control = self->control_;
      }
      self->jobs_.Declare(fuse_req_ctx(req)->pid);
      Result<std::string> answer = control.hint(self->ContextOf(req), hint->body);
      if (!answer.ok()) {
        std::fprintf(stderr, "weft: hint refused: %s\n", answer.status().ToString().c_str());
        return (void)fuse_reply_err(req, EINVAL);
      }
      return (void)fuse_reply_err(req, 0);
    }
    auto* w = dynamic_cast<WriteHandle*>(h);
    if (w == nullptr) return (void)fuse_reply_err(req, 0);
    std::lock_guard lock(w->mu);
    Status committed = self->Commit(*w, req);
    fuse_reply_err(req, self->ErrnoFor(req, committed));
  }

  static void OpFsync(fuse_req_t req, fuse_ino_t, int, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::shared_ptr<Handle> held = self->handles_.Get(fi->fh);
    auto* w = dynamic_cast<WriteHandle*>(held.get());
    if (w == nullptr) return (void)fuse_reply_err(req, 0);  // committed versions are durable
    std::lock_guard lock(w->mu);
    fuse_reply_err(req, self->ErrnoFor(req, self->Commit(*w, req)));
  }

  static void OpRelease(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::shared_ptr<Handle> held = self->handles_.Remove(fi->fh);
    if (auto* w = dynamic_cast<WriteHandle*>(held.get())) {
      {
        std::lock_guard lock(w->mu);
        // No caller waits for a release, and nothing interrupts it.
        Status committed = self->Commit(*w, nullptr);
        if (!committed.ok()) {
          std::fprintf(stderr, "weft: a write was lost at close: %s\n",
                       committed.ToString().c_str());
        }
      }
      self->CloseWrite(w);
    } else if (auto* r = dynamic_cast<ReadHandle*>(held.get())) {
      self->TrackRead(r->node, {}, -1);
    }
    fuse_reply_err(req, 0);
  }

  // ---- directories ----

  static void OpOpendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->PathOr(req, ino);
    if (!path) return;
    Result<FileInfo> info = self->StatPath(self->ContextOf(req), *path);
    if (!info.ok()) return (void)fuse_reply_err(req, ErrnoOf(info.status()));
    if (info->type != FileType::kDirectory) return (void)fuse_reply_err(req, ENOTDIR);
    auto h = std::make_shared<DirHandle>();
    h->node = ino;
    h->path = *path;
    self->TrackRead(ino, *info, +1);  // fstat after an rmdir
    fi->fh = self->handles_.Add(std::move(h));
    fi->cache_readdir = InSnapshot(*path);
    fuse_reply_open(req, fi);
  }

  // Fetches the next page of `d` (with attributes for readdirplus).
  Status FetchPage(const RequestContext& ctx, DirHandle& d, bool with_info) {
    if (d.path == kControlDir) {
      for (const char* name : {"hints", "stats"}) {
        DirEntry e;
        e.name = name;
        e.info = StatPath(ctx, ChildPath(d.path, name)).value();
        d.entries.push_back(std::move(e));
      }
      d.complete = true;
      return OkStatus();
    }
    ReadDirOptions opts;
    opts.limit = kReadDirPage;
    opts.with_info = with_info;
    if (!d.entries.empty()) opts.start_after = d.entries.back().name;
    Result<ReadDirPage> page = volume_->ReadDir(ctx, d.path, opts);
    if (!page.ok() && d.path == kWeftDir && page.status().code() == StatusCode::kNotFound) {
      page = ReadDirPage{};
    }
    WEFT_RETURN_IF_ERROR(page.status());
    for (DirEntry& e : page->entries) d.entries.push_back(std::move(e));
    d.complete = !page->truncated;
    if (d.complete && d.path == kWeftDir && HasControl() &&
        std::none_of(d.entries.begin(), d.entries.end(),
                     [](const DirEntry& e) { return e.name == "cache"; })) {
      DirEntry e;
      e.name = "cache";
      e.type = FileType::kDirectory;
      e.info = SyntheticDir(kControlDir, 1);
      d.entries.push_back(std::move(e));
    }
    return OkStatus();
  }

  void ReadDir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info* fi, bool plus) {
    std::shared_ptr<Handle> held = handles_.Get(fi->fh);
    auto* d = dynamic_cast<DirHandle*>(held.get());
    if (d == nullptr) return (void)fuse_reply_err(req, EBADF);
    std::lock_guard lock(d->mu);
    RequestContext ctx = ContextOf(req);
    if (off == 0) {  // (re)start: a rewinddir sees the directory as it is now
      d->entries.clear();
      d->complete = false;
    }
    std::string buffer(size, '\0');
    size_t used = 0;
    for (off_t next = off;; ++next) {
      std::string name;
      struct stat st {};
      std::optional<FileInfo> info;
      if (next < 2) {
        name = next == 0 ? "." : "..";
        st.st_mode = S_IFDIR;
        st.st_ino = NodeTable::kRootId;  // any non-zero number: "." and ".." are the kernel's
      } else {
        size_t index = static_cast<size_t>(next - 2);
        while (index >= d->entries.size() && !d->complete) {
          Status fetched = FetchPage(ctx, *d, plus);
          if (!fetched.ok()) {
            if (used > 0) break;
            return (void)fuse_reply_err(req, ErrnoOf(fetched));
          }
        }
        if (index >= d->entries.size()) break;
        const DirEntry& e = d->entries[index];
        name = e.name;
        info = e.info;
        if (!info) {
          FileInfo bare;
          bare.type = e.type;
          bare.inode = e.inode;
          info = bare;
        }
      }
      size_t room = buffer.size() - used;
      size_t wrote = 0;
      if (plus && info) {
        struct fuse_entry_param e {};
        std::string child = ChildPath(d->path, name);
        // The size first: a lookup is counted only for an entry that is sent.
        if (fuse_add_direntry_plus(req, nullptr, 0, name.c_str(), nullptr, 0) > room) break;
        e.ino = nodes_.Lookup(child);
        e.attr = StatOf(*info, e.ino);
        OverlayOpenWrites(e.ino, &e.attr);
        e.entry_timeout = TimeoutFor(child);
        e.attr_timeout = AttrTimeoutFor(child, *info);
        wrote = fuse_add_direntry_plus(req, buffer.data() + used, room, name.c_str(), &e, next + 1);
      } else {
        if (info) st = StatOf(*info, 0);
        if (plus) {
          // "." and "..": no entry, no lookup.
          struct fuse_entry_param e {};
          e.attr = st;
          wrote =
              fuse_add_direntry_plus(req, buffer.data() + used, room, name.c_str(), &e, next + 1);
        } else {
          wrote = fuse_add_direntry(req, buffer.data() + used, room, name.c_str(), &st, next + 1);
        }
      }
      if (wrote > room) break;
      used += wrote;
    }
    fuse_reply_buf(req, buffer.data(), used);
  }

  static void OpReaddir(fuse_req_t req, fuse_ino_t, size_t size, off_t off,
                        struct fuse_file_info* fi) {
    Self(req)->ReadDir(req, size, off, fi, false);
  }
  static void OpReaddirplus(fuse_req_t req, fuse_ino_t, size_t size, off_t off,
                            struct fuse_file_info* fi) {
    Self(req)->ReadDir(req, size, off, fi, true);
  }

  static void OpReleasedir(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
    FuseMountImpl* self = Self(req);
    if (auto* d = dynamic_cast<DirHandle*>(self->handles_.Get(fi->fh).get())) {
      self->TrackRead(d->node, {}, -1);
    }
    self->handles_.Remove(fi->fh);
    fuse_reply_err(req, 0);
  }

  // ---- extended attributes: what Weft knows of a path, read-only ----

  // user.weft.version_id and user.weft.etag of a file; user.weft.snapshot_path of a snapshot's
  // root (/.weft/snapshots/NAME shows that subtree of the volume).
  Result<std::map<std::string, std::string>> XattrsOf(const RequestContext& ctx,
                                                      const std::string& path) {
    std::map<std::string, std::string> out;
    if (ParentPath(path) == kSnapshotsDir) {
      WEFT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> snapshots, volume_->ListSnapshots(ctx));
      const std::string name = path.substr(std::string(kSnapshotsDir).size() + 1);
      for (const SnapshotInfo& snap : snapshots) {
        if (snap.name == name) out["user.weft.snapshot_path"] = snap.path;
      }
      return out;
    }
    if (UnderWeft(path) && !InSnapshot(path)) return out;
    WEFT_ASSIGN_OR_RETURN(FileInfo info, volume_->Stat(ctx, path));
    if (info.type == FileType::kFile) {
      out["user.weft.version_id"] = info.version_id;
      out["user.weft.etag"] = info.etag;
    }
    return out;
  }

  static void ReplyXattr(fuse_req_t req, const std::string& value, size_t size) {
    if (size == 0) return (void)fuse_reply_xattr(req, value.size());
    if (size < value.size()) return (void)fuse_reply_err(req, ERANGE);
    fuse_reply_buf(req, value.data(), value.size());
  }

  static void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->PathOr(req, ino);
    if (!path) return;
    Result<std::map<std::string, std::string>> attrs = self->XattrsOf(self->ContextOf(req), *path);
    if (!attrs.ok()) return (void)fuse_reply_err(req, ErrnoOf(attrs.status()));
    auto it = attrs->find(name);
    if (it == attrs->end()) return (void)fuse_reply_err(req, ENODATA);
    ReplyXattr(req, it->second, size);
  }

  static void OpListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
    FuseMountImpl* self = Self(req);
    std::optional<std::string> path = self->PathOr(req, ino);
    if (!path) return;
    Result<std::map<std::string, std::string>> attrs = self->XattrsOf(self->ContextOf(req), *path);
    if (!attrs.ok()) return (void)fuse_reply_err(req, ErrnoOf(attrs.status()));
    std::string names;
    for (const auto& [name, value] : *attrs) names += name + '\0';
    ReplyXattr(req, names, size);
  }

  static void OpSetxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
    fuse_reply_err(req, ENOTSUP);
  }
  static void OpRemovexattr(fuse_req_t req, fuse_ino_t, const char*) {
    fuse_reply_err(req, ENOTSUP);
  }

  static void OpStatfs(fuse_req_t req, fuse_ino_t) {
    // The disk that holds the data (or a spoke's cache) is where new bytes go.
    struct statvfs st {};
    if (::statvfs(Self(req)->options_.staging_dir.c_str(), &st) != 0) {
      return (void)fuse_reply_err(req, errno);
    }
    st.f_namemax = kMaxNameBytes;
    fuse_reply_statfs(req, &st);
  }

  static struct fuse_lowlevel_ops Ops() {
    struct fuse_lowlevel_ops ops {};
    ops.init = OpInit;
    ops.lookup = OpLookup;
    ops.forget = OpForget;
    ops.forget_multi = OpForgetMulti;
    ops.getattr = OpGetattr;
    ops.setattr = OpSetattr;
    ops.readlink = OpReadlink;
    ops.mknod = OpMknod;
    ops.mkdir = OpMkdir;
    ops.unlink = OpUnlink;
    ops.rmdir = OpRmdir;
    ops.symlink = OpSymlink;
    ops.rename = OpRename;
    ops.link = OpLink;
    ops.open = OpOpen;
    ops.create = OpCreate;
    ops.read = OpRead;
    ops.write = OpWrite;
    ops.flush = OpFlush;
    ops.fsync = OpFsync;
    ops.release = OpRelease;
    ops.opendir = OpOpendir;
    ops.readdir = OpReaddir;
    ops.readdirplus = OpReaddirplus;
    ops.releasedir = OpReleasedir;
    ops.statfs = OpStatfs;
    ops.getxattr = OpGetxattr;
    ops.listxattr = OpListxattr;
    ops.setxattr = OpSetxattr;
    ops.removexattr = OpRemovexattr;
    return ops;
  }

  Volume* volume_;
  MountOptions options_;
  struct fuse_session* session_ = nullptr;
  bool mounted_ = false;
  NodeTable nodes_;
  HandleTable handles_;
  ProcessJobs jobs_;

  std::thread notifier_;  // sends the kernel the invalidations queued by Invalidate
  std::mutex notify_mu_;
  std::condition_variable notify_cv_;
  std::deque<Pending> pending_;
  bool stopping_ = false;

  // Lock order: a WriteHandle's mu, then mu_ or versions_mu_ (never both).
  std::mutex mu_;
  CacheControl control_;                                         // guarded by mu_
  std::unordered_map<uint64_t, std::set<WriteHandle*>> writes_;  // open writes per node; mu_
  std::atomic<size_t> open_writes_ = 0;  // handles in writes_: reads skip mu_ when none
  // Read handles per node (count, the file they read); mu_.
  std::unordered_map<uint64_t, std::pair<int, FileInfo>> reads_;
  std::mutex versions_mu_;
  // The open cache: the version whose pages the kernel may hold for a node (keep_cache on the
  // next open), and the reader of it (at most kMaxReaders). Guarded by versions_mu_.
  std::unordered_map<uint64_t, std::string> cached_versions_;
  std::unordered_map<uint64_t, std::shared_ptr<FileReader>> readers_;
  std::unordered_map<uint64_t, std::shared_ptr<ReadHandle>> node_reads_;  // zero_open_ only
  // LookupStartingRead's account (versions_mu_): started and used in this window, lookups to skip.
  uint32_t lookup_reads_started_ = 0, lookup_reads_used_ = 0, lookup_read_pause_ = 0;
  bool zero_open_ = false;  // set once at INIT
};

}  // namespace

Result<std::unique_ptr<FuseMount>> FuseMount::Mount(Volume* volume, MountOptions options) {
  auto mount = std::make_unique<FuseMountImpl>(volume, std::move(options));
  WEFT_RETURN_IF_ERROR(mount->Start());
  return std::unique_ptr<FuseMount>(std::move(mount));
}

}  // namespace weft::fuse
