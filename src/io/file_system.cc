// ReadFileToString and WriteFileAtomically, written only against the FileSystem interface so
// they behave the same on disk, in memory and under fault injection.
#include "io/file_system.h"

#include <atomic>

#include "io/internal/path.h"

namespace weft {

Result<std::string> ReadFileToString(FileSystem* fs, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->NewRandomAccessFile(path));
  WEFT_ASSIGN_OR_RETURN(uint64_t size_hint, file->Size());
  std::string out;
  out.reserve(size_hint);
  // Read until a short read rather than trusting the size: the file may grow meanwhile.
  constexpr size_t kChunk = 64 * 1024;
  std::string scratch(kChunk, '\0');
  while (true) {
    WEFT_ASSIGN_OR_RETURN(std::string_view got, file->ReadAt(out.size(), kChunk, scratch.data()));
    out.append(got);
    if (got.size() < kChunk) break;
  }
  return out;
}

Status WriteFileAtomically(FileSystem* fs, const std::string& path, std::string_view data) {
  // A per-process counter keeps concurrent writers of the same path off each other's temp
  // file. A crash can leave "<path>.weft-tmp-<n>" behind; owners may delete such names.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".weft-tmp-" + std::to_string(counter.fetch_add(1));
  Status status = [&]() -> Status {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(tmp));
    WEFT_RETURN_IF_ERROR(file->Append(data));
    WEFT_RETURN_IF_ERROR(file->Sync());
    WEFT_RETURN_IF_ERROR(file->Close());
    return fs->Rename(tmp, path);
  }();
  if (!status.ok()) {
    if (fs->Exists(tmp)) (void)fs->RemoveFile(tmp);
    return status.WithContext("writing " + path);
  }
  return fs->SyncDir(io_internal::Dirname(path)).WithContext("writing " + path);
}

}  // namespace weft
