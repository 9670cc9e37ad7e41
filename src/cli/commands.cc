#include "cli/commands.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstring>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>

#include "access/audit_log.h"
#include "base/bytes.h"
#include "cli/cli_util.h"
#include "cli/progress.h"

namespace weft::cli {

using nlohmann::json;

namespace {

// Pages of this many entries keep a listing of a huge directory in bounded memory.
constexpr uint32_t kListPage = 1000;

// Names may hold any bytes but JSON wants UTF-8: replace what is invalid instead of throwing.
std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void PrintLine(FILE* f, const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), f);
  std::fputc('\n', f);
}

// ---- local file helpers (POSIX, so every failure carries errno into a Status) ----

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Fills `buf` as far as the source allows: pipes hand out 64 KiB at a time, and the writer
// should see whole pieces. Returns the bytes read (< size only at end of input).
Result<size_t> ReadFull(int fd, uint8_t* buf, size_t size, const std::string& what) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, buf + got, size - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "reading " + what);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

bool IsLocalDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string JoinLocal(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// A name that cannot stand for itself at the destination: copying "." or "/" means copying
// the contents, as `cp -r . dir` does.
bool IsContentsOnlyName(const std::string& base) {
  return base.empty() || base == "." || base == "..";
}

enum class LocalKind { kFile, kDirectory, kSymlink, kOther };

LocalKind KindOf(mode_t mode) {
  if (S_ISREG(mode)) return LocalKind::kFile;
  if (S_ISDIR(mode)) return LocalKind::kDirectory;
  if (S_ISLNK(mode)) return LocalKind::kSymlink;
  return LocalKind::kOther;
}

// One step of a `put`: the local source, where it goes, and what it is.
struct PutItem {
  std::string local;
  std::string dest;
  LocalKind kind = LocalKind::kFile;
  uint64_t size = 0;
  uint32_t mode = 0644;
  std::string link_target;
};

// Appends `dir`'s subtree to `plan` in sorted order, directories before their contents.
// Symlinks inside the tree are stored as symlinks, not followed (as `cp -r` does).
Status WalkLocal(const std::string& dir, const std::string& dest, std::vector<PutItem>* plan) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoToStatus(errno, "listing " + dir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoToStatus(err, "listing " + dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    PutItem item;
    item.local = JoinLocal(dir, name);
    item.dest = JoinVolumePath(dest, name);
    struct stat st;
    if (::lstat(item.local.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat " + item.local);
    item.kind = KindOf(st.st_mode);
    item.mode = st.st_mode & 07777;
    if (item.kind == LocalKind::kFile) item.size = static_cast<uint64_t>(st.st_size);
    if (item.kind == LocalKind::kSymlink) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlink(item.local.c_str(), target.data(), target.size());
      if (n < 0) return ErrnoToStatus(errno, "readlink " + item.local);
      target.resize(static_cast<size_t>(n));
      item.link_target = std::move(target);
    }
    bool is_dir = item.kind == LocalKind::kDirectory;
    std::string sub_local = item.local;
    std::string sub_dest = item.dest;
    plan->push_back(std::move(item));
    if (is_dir) WEFT_RETURN_IF_ERROR(WalkLocal(sub_local, sub_dest, plan));
  }
  return OkStatus();
}

// Mkdir that accepts an existing directory, like `mkdir -p`.
Status EnsureDir(Volume& vol, const RequestContext& ctx, const std::string& path, uint32_t mode) {
  auto made = vol.Mkdir(ctx, path, mode, /*parents=*/true);
  if (made.ok()) return OkStatus();
  if (made.status().code() != StatusCode::kAlreadyExists) return made.status();
  auto st = vol.Stat(ctx, path);
  if (st.ok() && st->type == FileType::kDirectory) return OkStatus();
  return made.status();
}

json InfoToJson(const FileInfo& info) {
  json j = {{"path", info.path},        {"type", FileTypeName(info.type)},
            {"inode", info.inode},      {"mode", info.mode},
            {"uid", info.uid},          {"gid", info.gid},
            {"size", info.size},        {"mtime_ns", info.mtime_ns},
            {"ctime_ns", info.ctime_ns}};
  if (info.type == FileType::kFile) {
    j["etag"] = info.etag;
    j["version_id"] = info.version_id;
    j["chunks"] = info.chunks;
  }
  if (info.type == FileType::kSymlink) j["symlink_target"] = info.symlink_target;
  return j;
}

ReadOptions SnapshotRead(const std::optional<std::string>& snapshot) {
  ReadOptions ro;
  ro.snapshot = snapshot;
  return ro;
}

// Writes all of `pieces` to fd, however many calls it takes.
Status WritevFull(int fd, std::vector<struct iovec> pieces, const std::string& what) {
  size_t next = 0;
  while (next < pieces.size()) {
    const int count = static_cast<int>(std::min<size_t>(pieces.size() - next, IOV_MAX));
    ssize_t n = ::writev(fd, pieces.data() + next, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "writing " + what);
    }
    for (auto done = static_cast<size_t>(n); done > 0;) {
      const size_t step = std::min(done, pieces[next].iov_len);
      pieces[next].iov_base = static_cast<char*>(pieces[next].iov_base) + step;
      pieces[next].iov_len -= step;
      done -= step;
      if (pieces[next].iov_len == 0) ++next;
    }
    while (next < pieces.size() && pieces[next].iov_len == 0) ++next;
  }
  return OkStatus();
}

// Writes [offset, offset + length) of the reader's version to fd, about kPieceSize of whole
// chunks per write, from the buffer the chunks were read and checked in
// (FileReader::LendChunks): no copy of Weft's own, and no fresh buffer per piece, whose pages
// the kernel would have to map first (`weft get` of 2,318 small files spent a quarter of its
// time in page faults and copies).
Status CopyOut(FileReader& reader, uint64_t offset, uint64_t length, int fd,
               const std::string& what) {
  uint64_t end = length > std::numeric_limits<uint64_t>::max() - offset
                     ? std::numeric_limits<uint64_t>::max()
                     : offset + length;
  end = std::min(end, reader.info().size);
  const std::vector<ChunkRef>& chunks = reader.chunks();
  size_t first = 0;
  uint64_t first_start = 0;  // offset of chunks[first] in the file
  while (first < chunks.size() && first_start + chunks[first].length <= offset) {
    first_start += chunks[first++].length;
  }
  uint64_t pos = offset;
  while (pos < end) {
    if (first == chunks.size()) {
      // The reader pins one version, so chunks that end before its size are a store fault.
      return Internal("the chunks of " + reader.info().path + " end at offset " +
                      std::to_string(pos) + ", before its size");
    }
    size_t last = first;
    uint64_t last_end = first_start;
    do {
      last_end += chunks[last++].length;
    } while (last < chunks.size() && last_end < end &&
             last_end + chunks[last].length - first_start <= kPieceSize);
    WEFT_RETURN_IF_ERROR(
        reader.LendChunks(first, last, [&](std::span<const std::string_view> views) {
          return WritevFull(fd, SlicesInRange(views, first_start, pos, end), what);
        }));
    pos = std::min(last_end, end);
    first = last;
    first_start = last_end;
  }
  return OkStatus();
}

}  // namespace

// ---- CommandEnv ----

CommandEnv::CommandEnv(GlobalOptions options, VolumeOpener opener, int in_fd, FILE* out, FILE* err,
                       bool progress_allowed)
    : options_(std::move(options)),
      opener_(std::move(opener)),
      in_fd_(in_fd),
      out_(out),
      err_(err),
      progress_allowed_(progress_allowed && !options_.quiet) {
  ctx_.protocol = "cli";
  ctx_.uid = ::getuid();
  ctx_.gid = ::getgid();
  if (struct passwd* pw = ::getpwuid(ctx_.uid); pw != nullptr && pw->pw_name != nullptr) {
    ctx_.principal = pw->pw_name;
  } else {
    ctx_.principal = "uid:" + std::to_string(ctx_.uid);
  }
}

Result<Volume*> CommandEnv::volume() {
  if (!volume_) {
    auto opened = opener_(options_.data_dir);
    if (!opened.ok()) return opened.status();
    volume_ = std::move(opened).value();
  }
  return volume_.get();
}

int CommandEnv::Fail(std::string_view what, const Status& status) {
  std::fflush(out_);
  std::string line = "weft: ";
  line += what;
  line += ": ";
  line += status.ToString();
  // The contract is exactly one line, even when a message carries a newline.
  std::replace(line.begin(), line.end(), '\n', ' ');
  PrintLine(err_, line);
  return kExitError;
}

int CommandEnv::UsageError(std::string_view command, std::string_view message) {
  std::string line = "weft: ";
  line += message;
  line += " (see 'weft ";
  line += command;
  line += " --help')";
  PrintLine(err_, line);
  return kExitUsage;
}

void CommandEnv::Warn(std::string_view message) {
  if (options_.quiet) return;
  PrintLine(err_, "weft: warning: " + std::string(message));
}

// Opens the volume or returns the exit code of the failure, for the top of each command.
#define WEFT_CLI_VOLUME(var, env)                                                    \
  auto var##_result = (env).volume();                                                \
  if (!var##_result.ok()) {                                                          \
    return (env).Fail("opening " + (env).options().data_dir, var##_result.status()); \
  }                                                                                  \
  Volume& var = **var##_result

// ---- put ----

namespace {

// Small files are committed in groups through Volume::CommitAll: one data sync and one
// metadata sync per group instead of two per file, which dominates storing many small files.
// A file is reported ("committed ...") only once its group is durable. Thread-safe: the
// threads of a put share one batch, and a group commits while the others read on.
class PutBatch {
 public:
  static constexpr size_t kMaxFiles = 256;
  static constexpr uint64_t kMaxBytes = 64ull << 20;
  static constexpr uint64_t kAloneFrom = 16ull << 20;  // files this large commit on their own

  PutBatch(CommandEnv& env, Volume& vol, bool verbose, ProgressBar& bar)
      : env_(env), vol_(vol), verbose_(verbose), bar_(bar) {}

  Status Add(std::unique_ptr<FileWriter> writer) {
    uint64_t size = writer->bytes_written();
    if (size >= kAloneFrom) {
      WEFT_ASSIGN_OR_RETURN(FileInfo info, writer->Commit());
      std::lock_guard lock(mu_);
      Report(info);
      return OkStatus();
    }
    std::unique_lock lock(mu_);
    bytes_ += size;
    writers_.push_back(std::move(writer));
    if (writers_.size() >= kMaxFiles || bytes_ >= kMaxBytes) return FlushLocked(lock);
    return OkStatus();
  }

  Status Flush() {
    std::unique_lock lock(mu_);
    return FlushLocked(lock);
  }

 private:
  // Commits the group without holding mu_, so that other threads can queue the next one.
  Status FlushLocked(std::unique_lock<std::mutex>& lock) {
    if (writers_.empty()) return OkStatus();
    std::vector<std::unique_ptr<FileWriter>> group = std::move(writers_);
    writers_.clear();
    bytes_ = 0;
    lock.unlock();
    auto infos = vol_.CommitAll(env_.ctx(), std::move(group));
    lock.lock();
    if (!infos.ok()) return infos.status();
    for (const FileInfo& info : *infos) Report(info);
    return OkStatus();
  }

  void Report(const FileInfo& info) {
    bar_.FileDone();
    if (!verbose_) return;
    // Printed only after the commit returned OK: a test treats this line as the acknowledgement.
    std::fprintf(env_.out(), "committed %s %" PRIu64 " %s\n", info.path.c_str(), info.size,
                 info.etag.c_str());
    std::fflush(env_.out());
  }

  CommandEnv& env_;
  Volume& vol_;
  bool verbose_;
  ProgressBar& bar_;
  std::mutex mu_;
  std::vector<std::unique_ptr<FileWriter>> writers_;  // GUARDED_BY(mu_)
  uint64_t bytes_ = 0;                                // GUARDED_BY(mu_)
};

// What the threads of one put share.
struct PutShared {
  CommandEnv& env;
  Volume& vol;
  bool md5_etag;
  PutBatch& batch;
  ProgressBar& bar;
  std::atomic<bool> stop{false};  // a file failed: the others abandon the files they are reading
};

// Streams one local file (or stdin) into a new version of `dest`, committed through the batch.
// `size`: what stat said, if known (not for stdin).
Status PutOne(PutShared& put, int fd, const std::string& local, std::optional<uint64_t> size,
              const std::string& dest, uint32_t mode, std::vector<uint8_t>& buf) {
  WriteOptions wo;
  wo.mode = mode & 07777;
  wo.create_parents = true;
  // As `aws s3 cp` uploads files from 8 MiB on in parts, whose ETag is no MD5, so a file put
  // here gets a chunk ETag from that size on: its MD5 would be a second pass over every byte,
  // the most costly step of ingest after the disk.
  if (!put.md5_etag) wo.md5_etag_limit = kMd5EtagLimit;
  wo.expected_size = size;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileWriter> writer,
                        put.vol.OpenWriter(put.env.ctx(), dest, wo));
  for (;;) {
    if (put.stop.load(std::memory_order_relaxed)) {
      writer->Abort();
      return Aborted(local + ": abandoned after another file failed");
    }
    WEFT_ASSIGN_OR_RETURN(size_t n, ReadFull(fd, buf.data(), buf.size(), local));
    if (n > 0) {
      Status s = writer->Write(ByteSpan(buf.data(), n));
      if (!s.ok()) {
        writer->Abort();
        return s;
      }
      put.bar.AddBytes(n);
    }
    if (n < buf.size()) break;
  }
  return put.batch.Add(std::move(writer));
}

// PutOne for a plan item: stdin, or the local file, opened here.
Status PutFile(PutShared& put, const PutItem& item, std::vector<uint8_t>& buf) {
  if (item.local == "-") {
    return PutOne(put, put.env.in_fd(), "stdin", std::nullopt, item.dest, item.mode, buf);
  }
  Fd fd(::open(item.local.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoToStatus(errno, "opening " + item.local);
  return PutOne(put, fd.get(), item.local, item.size, item.dest, item.mode, buf);
}

// Keeps, of files planned for the same destination (`put x/f y/f /d/`, or two trees merged
// into one), the last, as one thread copying them in order would leave it.
void DropOverwrittenFiles(std::vector<const PutItem*>* files) {
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < files->size(); ++i) last[(*files)[i]->dest] = i;
  if (last.size() == files->size()) return;
  std::vector<const PutItem*> kept;
  for (size_t i = 0; i < files->size(); ++i) {
    if (last[(*files)[i]->dest] == i) kept.push_back((*files)[i]);
  }
  *files = std::move(kept);
}

Status PutSymlink(Volume& vol, const RequestContext& ctx, const PutItem& item) {
  auto made = vol.Symlink(ctx, item.dest, item.link_target);
  if (made.ok()) return OkStatus();
  if (made.status().code() != StatusCode::kAlreadyExists) return made.status();
  auto st = vol.Stat(ctx, item.dest);
  if (!st.ok() || st->type != FileType::kSymlink) return made.status();
  if (st->symlink_target == item.link_target) return OkStatus();
  WEFT_RETURN_IF_ERROR(vol.Unlink(ctx, item.dest));
  return vol.Symlink(ctx, item.dest, item.link_target).status();
}

}  // namespace

int RunPut(CommandEnv& env, const PutArgs& args) {
  if (args.paths.size() < 2) return env.UsageError("put", "put needs SRC... DEST");
  std::vector<std::string> srcs(args.paths.begin(), args.paths.end() - 1);
  const std::string& dest_arg = args.paths.back();
  std::string dest = ToVolumePath(dest_arg);
  bool has_stdin = std::find(srcs.begin(), srcs.end(), "-") != srcs.end();
  if (has_stdin && srcs.size() > 1) {
    return env.UsageError("put", "'-' (stdin) must be the only SRC");
  }
  if (has_stdin && HasTrailingSlash(dest_arg)) {
    return env.UsageError("put", "put - needs a file path as DEST, not a directory");
  }
  WEFT_CLI_VOLUME(vol, env);

  // Whether DEST names an existing directory decides where each SRC lands, as for `cp -r`.
  bool dest_is_dir = false;
  {
    auto st = vol.Stat(env.ctx(), dest);
    if (st.ok()) {
      dest_is_dir = st->type == FileType::kDirectory;
    } else if (st.status().code() != StatusCode::kNotFound) {
      return env.Fail("put " + dest_arg, st.status());
    }
  }
  if (has_stdin && dest_is_dir) {
    return env.Fail("put - " + dest_arg, IsADirectory(dest + " is a directory; name a file"));
  }
  if (srcs.size() > 1) dest_is_dir = true;  // created below if missing

  // Plan everything first: a missing or unreadable SRC fails before anything is written.
  std::vector<PutItem> plan;
  uint64_t total_bytes = 0;
  uint64_t total_files = 0;
  if (has_stdin) {
    plan.push_back({"-", dest, LocalKind::kFile, 0, 0644, ""});
    total_files = 1;
  } else {
    if (dest_is_dir) plan.push_back({"", dest, LocalKind::kDirectory, 0, 0755, ""});
    for (const std::string& src : srcs) {
      struct stat st;
      // Command-line symlinks are followed; the user named them.
      if (::stat(src.c_str(), &st) != 0) {
        return env.Fail("put " + src, ErrnoToStatus(errno, "stat " + src));
      }
      std::string base = BaseName(src);
      PutItem item;
      item.local = src;
      item.kind = KindOf(st.st_mode);
      item.mode = st.st_mode & 07777;
      if (item.kind == LocalKind::kDirectory) {
        item.dest = dest_is_dir && !IsContentsOnlyName(base) ? JoinVolumePath(dest, base) : dest;
        std::string sub_local = item.local;
        std::string sub_dest = item.dest;
        plan.push_back(std::move(item));
        Status s = WalkLocal(sub_local, sub_dest, &plan);
        if (!s.ok()) return env.Fail("put " + src, s);
      } else {
        if (IsContentsOnlyName(base))
          return env.Fail("put " + src, InvalidArgument("no file name"));
        item.dest = dest_is_dir || HasTrailingSlash(dest_arg) ? JoinVolumePath(dest, base) : dest;
        if (item.kind == LocalKind::kFile) item.size = static_cast<uint64_t>(st.st_size);
        if (item.kind == LocalKind::kOther) item.kind = LocalKind::kFile;  // a FIFO streams fine
        plan.push_back(std::move(item));
      }
    }
    for (const PutItem& item : plan) {
      if (item.kind == LocalKind::kFile) {
        total_bytes += item.size;
        ++total_files;
      }
    }
  }

  ProgressBar bar(env.err(), env.progress_allowed(), total_bytes, total_files);
  PutBatch batch(env, vol, args.verbose, bar);
  // `item`: what failed, if one item did.
  auto fail = [&](const PutItem* item, const Status& s) {
    (void)batch.Flush();  // files fully written before the failure are kept, as before it
    bar.Finish();
    std::string what = "put ";
    what += item == nullptr || item->local.empty() ? dest : item->local + " -> " + item->dest;
    return env.Fail(what, s);
  };
  // Directories (each before its contents), symlinks and what is skipped, in plan order.
  std::vector<const PutItem*> files;
  for (const PutItem& item : plan) {
    Status s;
    switch (item.kind) {
      case LocalKind::kDirectory:
        s = EnsureDir(vol, env.ctx(), item.dest, 0755);
        break;
      case LocalKind::kSymlink:
        s = PutSymlink(vol, env.ctx(), item);
        break;
      case LocalKind::kOther:
        env.Warn("skipping " + item.local + ": not a regular file, directory or symlink");
        break;
      case LocalKind::kFile:
        files.push_back(&item);
        break;
    }
    if (!s.ok()) return fail(&item, s);
  }

  // Then the files, by up to --jobs threads at once: reading, cutting and hashing one file
  // is one core's work (SHA-256 and the cut finder are sequential per stream), and while a
  // group of small files waits for its sync the other threads read on.
  DropOverwrittenFiles(&files);
  PutShared put{env, vol, args.md5_etag, batch, bar};
  std::atomic<size_t> next{0};
  std::mutex failure_mu;
  Status failure;                   // GUARDED_BY(failure_mu): the first
  const PutItem* failed = nullptr;  // GUARDED_BY(failure_mu): its file, if known
  auto fail_with = [&](const PutItem* item, Status s) {
    std::lock_guard lock(failure_mu);
    if (failure.ok()) {
      failed = item;
      failure = std::move(s);
    }
    put.stop = true;
  };
  auto put_files = [&] {
    const PutItem* item = nullptr;
    try {
      std::vector<uint8_t> buf(kPieceSize);
      while (!put.stop) {
        const size_t i = next.fetch_add(1);
        if (i >= files.size()) return;
        item = files[i];
        Status s = PutFile(put, *item, buf);
        // Files abandoned because another failed are not the failure.
        if (!s.ok() && !put.stop) fail_with(item, std::move(s));
      }
    } catch (const std::exception& e) {  // bad_alloc, say: on a helper thread, not fatal
      fail_with(item, Internal(e.what()));
    }
  };
  {
    std::vector<std::jthread> helpers;  // joined when this scope ends, whatever happens
    const size_t jobs = std::clamp<size_t>(files.size(), 1, args.jobs);
    for (size_t j = 1; j < jobs; ++j) helpers.emplace_back(put_files);
    put_files();
  }
  if (!failure.ok()) return fail(failed, failure);
  Status flushed = batch.Flush();
  bar.Finish();
  if (!flushed.ok()) return env.Fail("put " + dest, flushed);
  return kExitOk;
}

// ---- get / cat ----

namespace {

// Writes one Weft file to a local path through a temporary name, so an error never leaves a
// half-written file under the real name.
Status GetFile(Volume& vol, const RequestContext& ctx, const std::string& src,
               const ReadOptions& ro, const std::string& local) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, vol.OpenReader(ctx, src, ro));
  if (local == "-") return CopyOut(*reader, 0, reader->info().size, STDOUT_FILENO, "stdout");
  std::string tmp = local + ".weft-tmp-" + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return ErrnoToStatus(errno, "creating " + tmp);
  Status s = CopyOut(*reader, 0, reader->info().size, fd.get(), local);
  if (s.ok() && ::fchmod(fd.get(), reader->info().mode & 07777) != 0) {
    s = ErrnoToStatus(errno, "chmod " + tmp);
  }
  if (s.ok() && ::close(fd.release()) != 0) s = ErrnoToStatus(errno, "closing " + tmp);
  if (s.ok() && ::rename(tmp.c_str(), local.c_str()) != 0) {
    s = ErrnoToStatus(errno, "renaming " + tmp + " to " + local);
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status MakeLocalDir(const std::string& local, uint32_t mode) {
  if (::mkdir(local.c_str(), mode & 07777) == 0) return OkStatus();
  if (errno == EEXIST && IsLocalDir(local)) return OkStatus();
  return ErrnoToStatus(errno, "mkdir " + local);
}

Status GetTree(Volume& vol, const RequestContext& ctx, const std::string& src,
               const std::optional<std::string>& snapshot, const std::string& local) {
  ReadDirOptions ro;
  ro.snapshot = snapshot;
  ro.limit = kListPage;
  ro.with_info = true;
  for (;;) {
    WEFT_ASSIGN_OR_RETURN(ReadDirPage page, vol.ReadDir(ctx, src, ro));
    for (const DirEntry& e : page.entries) {
      std::string child_src = JoinVolumePath(src, e.name);
      std::string child_local = JoinLocal(local, e.name);
      switch (e.type) {
        case FileType::kDirectory:
          WEFT_RETURN_IF_ERROR(MakeLocalDir(child_local, e.info ? e.info->mode : 0755));
          WEFT_RETURN_IF_ERROR(GetTree(vol, ctx, child_src, snapshot, child_local));
          break;
        case FileType::kFile:
          WEFT_RETURN_IF_ERROR(GetFile(vol, ctx, child_src, SnapshotRead(snapshot), child_local)
                                   .WithContext(child_src));
          break;
        case FileType::kSymlink: {
          std::string target;
          if (e.info) {
            target = e.info->symlink_target;
          } else {
            WEFT_ASSIGN_OR_RETURN(FileInfo fi, vol.Stat(ctx, child_src, SnapshotRead(snapshot)));
            target = fi.symlink_target;
          }
          ::unlink(child_local.c_str());
          if (::symlink(target.c_str(), child_local.c_str()) != 0) {
            return ErrnoToStatus(errno, "symlink " + child_local);
          }
          break;
        }
        case FileType::kFifo:
        case FileType::kSocket:
        case FileType::kCharDevice:
        case FileType::kBlockDevice:
          break;  // no content to get, as rsync skips them without --specials
      }
    }
    if (!page.truncated || page.entries.empty()) break;
    ro.start_after = page.entries.back().name;
  }
  return OkStatus();
}

}  // namespace

int RunGet(CommandEnv& env, const GetArgs& args) {
  WEFT_CLI_VOLUME(vol, env);
  std::string src = ToVolumePath(args.src);
  std::string what = "get " + args.src;
  auto info = vol.Stat(env.ctx(), src, SnapshotRead(args.snapshot));
  if (!info.ok()) return env.Fail(what, info.status());
  std::string base = BaseName(src);
  bool into = IsLocalDir(args.dest);
  if (info->type == FileType::kDirectory) {
    if (args.dest == "-") return env.Fail(what, IsADirectory(src + " is a directory"));
    std::string local = into && !base.empty() ? JoinLocal(args.dest, base) : args.dest;
    Status s = MakeLocalDir(local, 0755);
    if (s.ok()) s = GetTree(vol, env.ctx(), src, args.snapshot, local);
    if (!s.ok()) return env.Fail(what, s);
    return kExitOk;
  }
  if (info->type == FileType::kSymlink) {
    return env.Fail(what, FailedPrecondition(src + " is a symlink to " + info->symlink_target));
  }
  std::string local = into ? JoinLocal(args.dest, base) : args.dest;
  Status s = GetFile(vol, env.ctx(), src, SnapshotRead(args.snapshot), local);
  if (!s.ok()) return env.Fail(what, s);
  return kExitOk;
}

int RunCat(CommandEnv& env, const CatArgs& args) {
  if (args.version && args.snapshot) {
    return env.UsageError("cat", "--version and --snapshot exclude each other");
  }
  WEFT_CLI_VOLUME(vol, env);
  std::string path = ToVolumePath(args.path);
  std::string what = "cat " + args.path;
  auto reader = args.version ? vol.OpenVersion(env.ctx(), path, *args.version)
                             : vol.OpenReader(env.ctx(), path, SnapshotRead(args.snapshot));
  if (!reader.ok()) return env.Fail(what, reader.status());
  std::fflush(env.out());
  Status s =
      CopyOut(**reader, args.offset, args.length.value_or(UINT64_MAX), STDOUT_FILENO, "stdout");
  if (!s.ok()) return env.Fail(what, s);
  return kExitOk;
}

// ---- ls / stat ----

namespace {

std::string LongLine(const DirEntry& e) {
  char size[32];
  std::string line;
  if (e.info) {
    std::snprintf(size, sizeof(size), "%12" PRIu64, e.info->size);
    line = FormatMode(e.type, e.info->mode) + " " + size + " " + FormatTimeUtc(e.info->mtime_ns);
  } else {
    line = FormatMode(e.type, 0) + " " + std::string(12, '?') + " ?";
  }
  line += " " + e.name;
  if (e.type == FileType::kDirectory) line += "/";
  if (e.type == FileType::kSymlink && e.info) line += " -> " + e.info->symlink_target;
  return line;
}

json EntryToJson(const DirEntry& e) {
  json j = e.info ? InfoToJson(*e.info) : json::object();
  j["name"] = e.name;
  j["type"] = FileTypeName(e.type);
  j["inode"] = e.inode;
  return j;
}

}  // namespace

int RunLs(CommandEnv& env, const LsArgs& args) {
  WEFT_CLI_VOLUME(vol, env);
  std::string path = ToVolumePath(args.path);
  std::string what = "ls " + args.path;
  bool json_out = env.options().json;
  auto info = vol.Stat(env.ctx(), path, SnapshotRead(args.snapshot));
  if (!info.ok()) return env.Fail(what, info.status());
  if (info->type != FileType::kDirectory) {
    DirEntry e{BaseName(path), info->type, info->inode, *info};
    if (json_out) {
      PrintLine(env.out(), "[" + Dump(EntryToJson(e)) + "]");
    } else {
      PrintLine(env.out(), args.long_format ? LongLine(e) : e.name);
    }
    return kExitOk;
  }
  ReadDirOptions ro;
  ro.snapshot = args.snapshot;
  ro.limit = kListPage;
  ro.with_info = args.long_format || json_out;
  // JSON arrays are written element by element, so a huge directory never sits in memory.
  if (json_out) std::fputs("[", env.out());
  bool first = true;
  for (;;) {
    auto page = vol.ReadDir(env.ctx(), path, ro);
    if (!page.ok()) {
      if (json_out && !first) std::fputs("\n", env.out());
      return env.Fail(what, page.status());
    }
    for (const DirEntry& e : page->entries) {
      if (json_out) {
        std::fputs(first ? "\n" : ",\n", env.out());
        std::fputs(Dump(EntryToJson(e)).c_str(), env.out());
      } else if (args.long_format) {
        PrintLine(env.out(), LongLine(e));
      } else {
        PrintLine(env.out(), e.type == FileType::kDirectory ? e.name + "/" : e.name);
      }
      first = false;
    }
    if (!page->truncated || page->entries.empty()) break;
    ro.start_after = page->entries.back().name;
  }
  if (json_out) std::fputs("\n]\n", env.out());
  return kExitOk;
}

int RunStat(CommandEnv& env, const StatArgs& args) {
  WEFT_CLI_VOLUME(vol, env);
  std::string path = ToVolumePath(args.path);
  auto info = vol.Stat(env.ctx(), path, SnapshotRead(args.snapshot));
  if (!info.ok()) return env.Fail("stat " + args.path, info.status());
  if (env.options().json) {
    PrintLine(env.out(), Dump(InfoToJson(*info)));
    return kExitOk;
  }
  char mode[16];
  std::snprintf(mode, sizeof(mode), "%04o", info->mode);
  auto row = [&](const char* key, const std::string& value) {
    std::fprintf(env.out(), "%-9s %s\n", key, value.c_str());
  };
  row("path:", info->path);
  row("type:", std::string(FileTypeName(info->type)));
  row("size:", std::to_string(info->size) + " (" + HumanBytes(info->size) + ")");
  row("mode:", std::string(mode) + " (" + FormatMode(info->type, info->mode) + ")");
  row("owner:", std::to_string(info->uid) + ":" + std::to_string(info->gid));
  row("mtime:", FormatTimeUtc(info->mtime_ns) + " UTC");
  row("ctime:", FormatTimeUtc(info->ctime_ns) + " UTC");
  row("inode:", std::to_string(info->inode));
  if (info->type == FileType::kFile) {
    row("etag:", info->etag);
    row("version:", info->version_id);
    row("chunks:", std::to_string(info->chunks));
  }
  if (info->type == FileType::kSymlink) row("target:", info->symlink_target);
  return kExitOk;
}

// ---- rm / mv / mkdir ----

namespace {

Status RemoveTree(Volume& vol, const RequestContext& ctx, const std::string& dir) {
  // Collect the names first: deleting while paging would move the page boundaries.
  std::vector<DirEntry> entries;
  ReadDirOptions ro;
  ro.limit = kListPage;
  for (;;) {
    WEFT_ASSIGN_OR_RETURN(ReadDirPage page, vol.ReadDir(ctx, dir, ro));
    for (DirEntry& e : page.entries) entries.push_back(std::move(e));
    if (!page.truncated || entries.empty()) break;
    ro.start_after = entries.back().name;
  }
  for (const DirEntry& e : entries) {
    std::string child = JoinVolumePath(dir, e.name);
    if (e.type == FileType::kDirectory) {
      WEFT_RETURN_IF_ERROR(RemoveTree(vol, ctx, child));
    } else {
      WEFT_RETURN_IF_ERROR(vol.Unlink(ctx, child));
    }
  }
  return vol.Rmdir(ctx, dir);
}

}  // namespace

int RunRm(CommandEnv& env, const RmArgs& args) {
  if (args.paths.empty()) return env.UsageError("rm", "rm needs a PATH");
  WEFT_CLI_VOLUME(vol, env);
  for (const std::string& arg : args.paths) {
    std::string path = ToVolumePath(arg);
    std::string what = "rm " + arg;
    auto info = vol.Stat(env.ctx(), path);
    if (!info.ok()) return env.Fail(what, info.status());
    Status s;
    if (info->type == FileType::kDirectory) {
      if (path == "/") return env.Fail(what, InvalidArgument("refusing to remove /"));
      if (!args.recursive) {
        return env.Fail(what, IsADirectory(path + " is a directory (use rm -r)"));
      }
      s = RemoveTree(vol, env.ctx(), path);
    } else {
      s = vol.Unlink(env.ctx(), path);
    }
    if (!s.ok()) return env.Fail(what, s);
  }
  return kExitOk;
}

int RunMv(CommandEnv& env, const MvArgs& args) {
  WEFT_CLI_VOLUME(vol, env);
  std::string from = ToVolumePath(args.src);
  std::string to = ToVolumePath(args.dest);
  std::string what = "mv " + args.src + " " + args.dest;
  // Like mv(1): a directory as the target means "into it".
  auto dest_info = vol.Stat(env.ctx(), to);
  if (dest_info.ok() && dest_info->type == FileType::kDirectory && to != from) {
    std::string base = BaseName(from);
    if (base.empty()) return env.Fail(what, InvalidArgument("cannot move /"));
    to = JoinVolumePath(to, base);
  } else if (!dest_info.ok() && dest_info.status().code() != StatusCode::kNotFound) {
    return env.Fail(what, dest_info.status());
  }
  Status s = vol.Rename(env.ctx(), from, to);
  if (!s.ok()) return env.Fail(what, s);
  return kExitOk;
}

int RunMkdir(CommandEnv& env, const MkdirArgs& args) {
  if (args.paths.empty()) return env.UsageError("mkdir", "mkdir needs a PATH");
  WEFT_CLI_VOLUME(vol, env);
  for (const std::string& arg : args.paths) {
    std::string path = ToVolumePath(arg);
    Status s = args.parents ? EnsureDir(vol, env.ctx(), path, 0755)
                            : vol.Mkdir(env.ctx(), path, 0755, false).status();
    if (!s.ok()) return env.Fail("mkdir " + arg, s);
  }
  return kExitOk;
}

// ---- snapshots, versions ----

int RunSnapshotCreate(CommandEnv& env, const SnapshotCreateArgs& args) {
  WEFT_CLI_VOLUME(vol, env);
  auto snap = vol.CreateSnapshot(env.ctx(), args.name, ToVolumePath(args.path));
  if (!snap.ok()) return env.Fail("snapshot create " + args.name, snap.status());
  if (env.options().json) {
    PrintLine(env.out(), Dump({{"name", snap->name},
                               {"path", snap->path},
                               {"sequence", snap->sequence},
                               {"created_ns", snap->created_ns}}));
  } else if (!env.options().quiet) {
    std::fprintf(env.out(), "created snapshot %s of %s at sequence %" PRIu64 "\n",
                 snap->name.c_str(), snap->path.c_str(), snap->sequence);
  }
  return kExitOk;
}

int RunSnapshotList(CommandEnv& env) {
  WEFT_CLI_VOLUME(vol, env);
  auto snaps = vol.ListSnapshots(env.ctx());
  if (!snaps.ok()) return env.Fail("snapshot list", snaps.status());
  if (env.options().json) {
    json arr = json::array();
    for (const SnapshotInfo& s : *snaps) {
      arr.push_back({{"name", s.name},
                     {"path", s.path},
                     {"sequence", s.sequence},
                     {"created_ns", s.created_ns}});
    }
    PrintLine(env.out(), Dump(arr));
    return kExitOk;
  }
  std::fprintf(env.out(), "%-24s %-10s %-20s %s\n", "NAME", "SEQUENCE", "CREATED (UTC)", "PATH");
  for (const SnapshotInfo& s : *snaps) {
    std::fprintf(env.out(), "%-24s %-10" PRIu64 " %-20s %s\n", s.name.c_str(), s.sequence,
                 FormatTimeUtc(s.created_ns).c_str(), s.path.c_str());
  }
  return kExitOk;
}

int RunSnapshotDelete(CommandEnv& env, const std::string& name) {
  WEFT_CLI_VOLUME(vol, env);
  Status s = vol.DeleteSnapshot(env.ctx(), name);
  if (!s.ok()) return env.Fail("snapshot delete " + name, s);
  return kExitOk;
}

int RunLog(CommandEnv& env, const std::string& arg) {
  WEFT_CLI_VOLUME(vol, env);
  auto versions = vol.ListVersions(env.ctx(), ToVolumePath(arg));
  if (!versions.ok()) return env.Fail("log " + arg, versions.status());
  if (env.options().json) {
    json arr = json::array();
    for (const VersionInfo& v : *versions) {
      arr.push_back({{"version_id", v.version_id},
                     {"size", v.size},
                     {"etag", v.etag},
                     {"mtime_ns", v.mtime_ns},
                     {"sequence", v.sequence},
                     {"is_current", v.is_current},
                     {"is_delete_marker", v.is_delete_marker}});
    }
    PrintLine(env.out(), Dump(arr));
    return kExitOk;
  }
  std::fprintf(env.out(), "%-20s %12s %-20s %-10s %s\n", "VERSION", "SIZE", "MTIME (UTC)",
               "SEQUENCE", "ETAG");
  for (const VersionInfo& v : *versions) {
    std::string line = v.etag;
    if (v.is_delete_marker) line += "  (deleted)";
    if (v.is_current) line += "  (current)";
    std::fprintf(env.out(), "%-20s %12" PRIu64 " %-20s %-10" PRIu64 " %s\n", v.version_id.c_str(),
                 v.size, FormatTimeUtc(v.mtime_ns).c_str(), v.sequence, line.c_str());
  }
  return kExitOk;
}

// ---- du / gc / fsck / changes ----

namespace {

double Ratio(uint64_t num, uint64_t den) {
  return den == 0 ? 1.0 : static_cast<double>(num) / static_cast<double>(den);
}

}  // namespace

int RunDu(CommandEnv& env) {
  WEFT_CLI_VOLUME(vol, env);
  auto u = vol.Usage(env.ctx());
  if (!u.ok()) return env.Fail("du", u.status());
  double dedup = Ratio(u->referenced_bytes, u->unique_bytes);
  double compression = Ratio(u->unique_bytes, u->stored_bytes);
  if (env.options().json) {
    PrintLine(env.out(), Dump({{"files", u->files},
                               {"directories", u->directories},
                               {"logical_bytes", u->logical_bytes},
                               {"referenced_bytes", u->referenced_bytes},
                               {"unique_bytes", u->unique_bytes},
                               {"stored_bytes", u->stored_bytes},
                               {"pack_bytes", u->pack_bytes},
                               {"metadata_bytes", u->metadata_bytes},
                               {"dedup_ratio", dedup},
                               {"compression_ratio", compression}}));
    return kExitOk;
  }
  auto bytes_row = [&](const char* key, uint64_t v) {
    std::fprintf(env.out(), "%-18s %12s  (%" PRIu64 " bytes)\n", key, HumanBytes(v).c_str(), v);
  };
  std::fprintf(env.out(), "%-18s %12" PRIu64 "\n", "files", u->files);
  std::fprintf(env.out(), "%-18s %12" PRIu64 "\n", "directories", u->directories);
  bytes_row("logical", u->logical_bytes);
  bytes_row("referenced", u->referenced_bytes);
  bytes_row("unique", u->unique_bytes);
  bytes_row("stored", u->stored_bytes);
  bytes_row("packs on disk", u->pack_bytes);
  bytes_row("metadata", u->metadata_bytes);
  std::fprintf(env.out(), "%-18s %11.2fx  (referenced / unique)\n", "dedup ratio", dedup);
  std::fprintf(env.out(), "%-18s %11.2fx  (unique / stored)\n", "compression", compression);
  return kExitOk;
}

int RunGc(CommandEnv& env, const GcArgs& args) {
  auto keep = ParseDuration(args.keep_noncurrent);
  if (!keep.ok()) return env.UsageError("gc", keep.status().message());
  WEFT_CLI_VOLUME(vol, env);
  GcOptions opts;
  opts.keep_noncurrent_ns = *keep;
  auto r = vol.CollectGarbage(env.ctx(), opts);
  if (!r.ok()) return env.Fail("gc", r.status());
  if (env.options().json) {
    PrintLine(env.out(), Dump({{"versions_pruned", r->versions_pruned},
                               {"chunks_removed", r->chunks_removed},
                               {"bytes_reclaimed", r->bytes_reclaimed},
                               {"packs_rewritten", r->packs_rewritten}}));
  } else if (!env.options().quiet) {
    std::fprintf(env.out(),
                 "pruned %" PRIu64 " versions, removed %" PRIu64
                 " chunks, reclaimed %s, "
                 "rewrote %" PRIu64 " packs\n",
                 r->versions_pruned, r->chunks_removed, HumanBytes(r->bytes_reclaimed).c_str(),
                 r->packs_rewritten);
  }
  return kExitOk;
}

int RunAuditVerify(CommandEnv& env, const std::string& file) {
  const std::string path = file.empty() ? env.options().data_dir + "/audit.log" : file;
  Result<access::AuditVerifyReport> r = access::VerifyAuditLog(path);
  if (!r.ok()) return env.Fail("audit verify", r.status());
  if (env.options().json) {
    PrintLine(env.out(), Dump({{"path", path},
                               {"records", r->records},
                               {"last_seq", r->last_seq},
                               {"problem", r->problem}}));
  } else if (!r->problem.empty()) {
    PrintLine(env.out(), path + ": " + r->problem);
  } else if (!env.options().quiet) {
    PrintLine(env.out(), path + ": " + std::to_string(r->records) +
                             " records, every one chained to the one before");
  }
  return r->problem.empty() ? kExitOk : kExitError;
}

int RunFsck(CommandEnv& env) {
  WEFT_CLI_VOLUME(vol, env);
  auto r = vol.Fsck(env.ctx());
  if (!r.ok()) return env.Fail("fsck", r.status());
  if (env.options().json) {
    PrintLine(env.out(), Dump({{"files_checked", r->files_checked},
                               {"chunks_checked", r->chunks_checked},
                               {"problems", r->problems}}));
  } else {
    for (const std::string& p : r->problems) PrintLine(env.out(), "problem: " + p);
    if (!env.options().quiet || !r->problems.empty()) {
      std::fprintf(env.out(), "checked %" PRIu64 " files and %" PRIu64 " chunks: %zu problem%s\n",
                   r->files_checked, r->chunks_checked, r->problems.size(),
                   r->problems.size() == 1 ? "" : "s");
    }
  }
  if (!r->problems.empty()) {
    return env.Fail("fsck", Corruption(std::to_string(r->problems.size()) +
                                       " problem(s) found; the first: " + r->problems.front()));
  }
  return kExitOk;
}

int RunChanges(CommandEnv& env, const ChangesArgs& args) {
  WEFT_CLI_VOLUME(vol, env);
  bool json_out = env.options().json;
  uint64_t after = args.after;
  uint64_t printed = 0;
  if (json_out) std::fputs("[", env.out());
  for (;;) {
    uint32_t want = kListPage;
    if (args.limit > 0)
      want = static_cast<uint32_t>(std::min<uint64_t>(want, args.limit - printed));
    if (want == 0) break;
    auto changes = vol.ReadChanges(env.ctx(), after, want);
    if (!changes.ok()) {
      if (json_out && printed > 0) std::fputs("\n", env.out());
      return env.Fail("changes", changes.status());
    }
    for (const Change& c : *changes) {
      if (json_out) {
        json j = {{"sequence", c.sequence},
                  {"time_ns", c.time_ns},
                  {"op", c.op},
                  {"path", c.path},
                  {"principal", c.principal}};
        if (!c.path2.empty()) j["path2"] = c.path2;
        std::fputs(printed == 0 ? "\n" : ",\n", env.out());
        std::fputs(Dump(j).c_str(), env.out());
      } else {
        std::string line = std::to_string(c.sequence) + "  " + FormatTimeUtc(c.time_ns) + "  " +
                           c.op + "  " + c.path;
        if (!c.path2.empty()) line += " -> " + c.path2;
        line += "  (" + c.principal + ")";
        PrintLine(env.out(), line);
      }
      ++printed;
      after = c.sequence;
    }
    if (changes->size() < want) break;
  }
  if (json_out) std::fputs("\n]\n", env.out());
  return kExitOk;
}

}  // namespace weft::cli
