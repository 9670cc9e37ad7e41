#include "io/fault_injection_file_system.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "io/internal/path.h"

namespace weft {

using io_internal::Dirname;
using io_internal::NormalizePath;

namespace {
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();
}  // namespace

// A WritableFile that reports appends and syncs to the owning FaultInjectionFileSystem. Every
// method runs under the owner's mutex, which also guards base_ and crashed_, because
// DropUnsyncedData closes the handle from whichever thread simulates the crash.
class FaultInjectionFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectionFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base,
       std::shared_ptr<FileState> state)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)), state_(std::move(state)) {}

  ~File() override {
    std::lock_guard lock(fs_->mu_);
    fs_->open_files_.erase(this);
    base_.reset();  // The base's destructor may flush, so keep it under the lock too.
  }

  Status Append(std::string_view data) override {
    std::lock_guard lock(fs_->mu_);
    WEFT_RETURN_IF_ERROR(CheckUsableLocked("append to"));
    WEFT_RETURN_IF_ERROR(fs_->MaybeFailLocked());
    if (fs_->capacity_ != kUnlimited && !fs_->FitsLocked(data.size())) {
      ++fs_->injected_failures_;
      return ResourceExhausted("no space left on device: appending " + std::to_string(data.size()) +
                               " bytes to " + path_ + " would exceed the simulated capacity of " +
                               std::to_string(fs_->capacity_) + " bytes");
    }
    WEFT_RETURN_IF_ERROR(base_->Append(data));
    state_->size += data.size();
    size_ += data.size();
    return OkStatus();
  }

  Status Sync() override {
    std::lock_guard lock(fs_->mu_);
    WEFT_RETURN_IF_ERROR(CheckUsableLocked("sync"));
    WEFT_RETURN_IF_ERROR(fs_->MaybeFailLocked());
    WEFT_RETURN_IF_ERROR(base_->Sync());
    state_->synced = state_->size;
    return OkStatus();
  }

  Status Close() override {
    std::lock_guard lock(fs_->mu_);
    if (crashed_) return CheckUsableLocked("close");
    if (base_ == nullptr) return OkStatus();
    Status injected = fs_->MaybeFailLocked();
    Status status = base_->Close();
    base_.reset();
    return injected.ok() ? status : injected;
  }

  uint64_t Size() const override { return size_; }

  // The process holding this handle "died": release the base file; later calls fail.
  void CrashLocked() {
    if (base_ != nullptr) (void)base_->Close();
    base_.reset();
    crashed_ = true;
  }

 private:
  Status CheckUsableLocked(std::string_view op) const {
    if (crashed_) {
      return FailedPrecondition(std::string(op) + " " + path_ +
                                ": handle was invalidated by a simulated crash");
    }
    if (base_ == nullptr) return FailedPrecondition(std::string(op) + " closed file " + path_);
    return OkStatus();
  }

  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  std::unique_ptr<WritableFile> base_;      // Guarded by fs_->mu_; null once closed.
  const std::shared_ptr<FileState> state_;  // Guarded by fs_->mu_.
  bool crashed_ = false;                    // Guarded by fs_->mu_.
  uint64_t size_ = 0;                       // Touched only by the handle's single user.
};

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base) : base_(base) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() {
  // A handle left open would later lock our destroyed mutex.
  assert(open_files_.empty() && "a file outlived its FaultInjectionFileSystem");
}

uint64_t FaultInjectionFileSystem::UsedLocked() const {
  // Summed on demand: files are few in tests, and renames, removals and crash recovery would
  // each have to keep a running total right.
  uint64_t used = 0;
  for (const auto& [path, state] : files_) used += state->size;
  return used;
}

bool FaultInjectionFileSystem::FitsLocked(uint64_t bytes) const {
  const uint64_t used = UsedLocked();
  return bytes <= capacity_ && used <= capacity_ - bytes;
}

Result<DiskSpace> FaultInjectionFileSystem::Space(const std::string& path) {
  std::lock_guard lock(mu_);
  if (capacity_ == kUnlimited) return base_->Space(path);
  const uint64_t used = UsedLocked();
  return DiskSpace{capacity_, used < capacity_ ? capacity_ - used : 0};
}

Status FaultInjectionFileSystem::MaybeFailLocked() {
  ++mutating_calls_;
  if (succeed_before_fault_ > 0) {
    --succeed_before_fault_;
    return OkStatus();
  }
  if (faults_left_ == 0) return OkStatus();
  --faults_left_;
  ++injected_failures_;
  return fault_;
}

void FaultInjectionFileSystem::FailNextCalls(int n, Status s) {
  std::lock_guard lock(mu_);
  succeed_before_fault_ = 0;
  faults_left_ = static_cast<uint64_t>(std::max(n, 0));
  fault_ = s.ok() ? IoError("injected fault") : std::move(s);
}

void FaultInjectionFileSystem::FailAfter(int n_calls, Status s) {
  std::lock_guard lock(mu_);
  succeed_before_fault_ = static_cast<uint64_t>(std::max(n_calls, 0));
  faults_left_ = kUnlimited;
  fault_ = s.ok() ? IoError("injected fault") : std::move(s);
}

void FaultInjectionFileSystem::SetCapacity(uint64_t bytes) {
  std::lock_guard lock(mu_);
  capacity_ = bytes;
}

void FaultInjectionFileSystem::ClearFaults() {
  std::lock_guard lock(mu_);
  succeed_before_fault_ = 0;
  faults_left_ = 0;
  fault_ = OkStatus();
  capacity_ = kUnlimited;
}

uint64_t FaultInjectionFileSystem::MutatingCalls() const {
  std::lock_guard lock(mu_);
  return mutating_calls_;
}

uint64_t FaultInjectionFileSystem::InjectedFailures() const {
  std::lock_guard lock(mu_);
  return injected_failures_;
}

Result<uint64_t> FaultInjectionFileSystem::SyncedSize(const std::string& path) const {
  std::lock_guard lock(mu_);
  if (auto it = files_.find(NormalizePath(path)); it != files_.end()) return it->second->synced;
  return base_->FileSize(path);
}

Result<std::string> FaultInjectionFileSystem::DurableBytesLocked(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string data, ReadFileToString(base_, path));
  if (auto it = files_.find(NormalizePath(path)); it != files_.end()) {
    data.resize(std::min<uint64_t>(data.size(), it->second->synced));
  }
  return data;
}

Status FaultInjectionFileSystem::WriteDurableLocked(const std::string& path,
                                                    std::string_view data) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewWritableFile(path));
  WEFT_RETURN_IF_ERROR(file->Append(data));
  WEFT_RETURN_IF_ERROR(file->Sync());
  WEFT_RETURN_IF_ERROR(file->Close());
  auto state = std::make_shared<FileState>();
  state->size = state->synced = data.size();
  files_[path] = std::move(state);
  return OkStatus();
}

bool FaultInjectionFileSystem::PendingCreateLocked(const std::string& path) const {
  return std::any_of(pending_.begin(), pending_.end(), [&](const PendingOp& op) {
    return op.kind == PendingOp::kCreate && op.path == path;
  });
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(
    const std::string& path) {
  const std::string p = NormalizePath(path);
  std::lock_guard lock(mu_);
  WEFT_RETURN_IF_ERROR(MaybeFailLocked());
  const bool existed = base_->Exists(path);
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> base_file, base_->NewWritableFile(path));
  std::shared_ptr<FileState>& state = files_[p];
  if (state == nullptr) state = std::make_shared<FileState>();
  // Truncating an existing file keeps its inode (and its open handles' view) but its old
  // bytes are no longer durable.
  state->size = state->synced = 0;
  if (!existed) pending_.push_back({PendingOp::kCreate, p, {}, false, {}, {Dirname(p)}});
  auto file = std::make_unique<File>(this, p, std::move(base_file), state);
  open_files_.insert(file.get());
  return std::unique_ptr<WritableFile>(std::move(file));
}

Result<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::NewRandomAccessFile(
    const std::string& path) {
  return base_->NewRandomAccessFile(path);
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& path) {
  std::lock_guard lock(mu_);
  WEFT_RETURN_IF_ERROR(MaybeFailLocked());
  return base_->CreateDirs(path);
}

Result<std::vector<std::string>> FaultInjectionFileSystem::ListDir(const std::string& dir) {
  return base_->ListDir(dir);
}

Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  const std::string p = NormalizePath(path);
  std::lock_guard lock(mu_);
  WEFT_RETURN_IF_ERROR(MaybeFailLocked());
  if (!base_->Exists(path)) return base_->RemoveFile(path);  // The base's own error.
  // A file whose creation is still undoable needs no copy: the crash removes it anyway.
  PendingOp op{PendingOp::kRemove, p, {}, !PendingCreateLocked(p), {}, {Dirname(p)}};
  if (op.replaced) {
    Result<std::string> data = DurableBytesLocked(path);
    if (!data.ok()) {
      // Not a readable file (a directory, say): let the base report it, track nothing.
      return base_->RemoveFile(path);
    }
    op.replaced_data = std::move(*data);
  }
  WEFT_RETURN_IF_ERROR(base_->RemoveFile(path));
  files_.erase(p);
  pending_.push_back(std::move(op));
  return OkStatus();
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  const std::string f = NormalizePath(from);
  const std::string t = NormalizePath(to);
  std::lock_guard lock(mu_);
  WEFT_RETURN_IF_ERROR(MaybeFailLocked());
  Result<uint64_t> from_size = base_->FileSize(from);
  if (!from_size.ok() || f == t) return base_->Rename(from, to);  // Directory, missing, no-op.
  PendingOp op{PendingOp::kRename, f, t, base_->Exists(to), {}, {Dirname(f), Dirname(t)}};
  // The replaced file needs no copy if its own creation is undone by the same directory sync.
  if (op.replaced && Dirname(f) == Dirname(t) && PendingCreateLocked(t)) op.replaced = false;
  if (op.replaced) {
    Result<std::string> data = DurableBytesLocked(to);
    if (!data.ok()) return base_->Rename(from, to);  // E.g. `to` is a directory: base fails.
    op.replaced_data = std::move(*data);
  }
  WEFT_RETURN_IF_ERROR(base_->Rename(from, to));
  if (auto it = files_.find(f); it != files_.end()) {
    files_[t] = it->second;
    files_.erase(f);
  } else {
    files_.erase(t);  // An untracked file, fully durable, replaced it.
  }
  pending_.push_back(std::move(op));
  return OkStatus();
}

Result<uint64_t> FaultInjectionFileSystem::FileSize(const std::string& path) {
  return base_->FileSize(path);
}

bool FaultInjectionFileSystem::Exists(const std::string& path) {
  return base_->Exists(path);
}

Status FaultInjectionFileSystem::SyncDir(const std::string& dir) {
  const std::string d = NormalizePath(dir);
  std::lock_guard lock(mu_);
  WEFT_RETURN_IF_ERROR(MaybeFailLocked());
  WEFT_RETURN_IF_ERROR(base_->SyncDir(dir));
  for (PendingOp& op : pending_) op.unsynced_dirs.erase(d);
  std::erase_if(pending_, [](const PendingOp& op) { return op.unsynced_dirs.empty(); });
  return OkStatus();
}

Status FaultInjectionFileSystem::DropUnsyncedData() {
  std::lock_guard lock(mu_);
  // Closing flushes any bytes the base still buffers, so the truncation below sees them all.
  for (File* file : open_files_) file->CrashLocked();
  open_files_.clear();

  Status first_error;
  auto note = [&first_error](Status s) {
    if (first_error.ok() && !s.ok()) first_error = std::move(s);
  };

  // File data first, at the files' current names; namespace undo below moves whole files.
  for (auto& [path, state] : files_) {
    Result<uint64_t> size = base_->FileSize(path);
    if (!size.ok() || *size <= state->synced) continue;
    Result<std::string> data = ReadFileToString(base_, path);
    if (!data.ok()) {
      note(data.status());
      continue;
    }
    data->resize(state->synced);
    Result<std::unique_ptr<WritableFile>> file = base_->NewWritableFile(path);
    if (!file.ok()) {
      note(file.status());
      continue;
    }
    note((*file)->Append(*data));
    note((*file)->Sync());
    note((*file)->Close());
    state->size = state->synced;
  }

  // Undo directory changes newest first; each step is best effort, since a later change that
  // was made durable may have moved or removed the name it touches.
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    PendingOp& op = *it;
    switch (op.kind) {
      case PendingOp::kCreate:
        if (base_->Exists(op.path)) note(base_->RemoveFile(op.path));
        files_.erase(op.path);
        break;
      case PendingOp::kRemove:
        if (op.replaced) note(WriteDurableLocked(op.path, op.replaced_data));
        break;
      case PendingOp::kRename:
        if (base_->Exists(op.to)) {
          note(base_->Rename(op.to, op.path));
          if (auto state = files_.find(op.to); state != files_.end()) {
            files_[op.path] = state->second;
            files_.erase(op.to);
          } else {
            files_.erase(op.path);
          }
        }
        if (op.replaced) note(WriteDurableLocked(op.to, op.replaced_data));
        break;
    }
  }
  pending_.clear();
  return first_error;
}

}  // namespace weft
