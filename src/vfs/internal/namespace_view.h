// NamespaceView: reads the MVCC namespace as of one commit sequence (or live), over one
// consistent KvReader. Live reads touch only current records; reads at an older sequence also
// consult history records (see docs/formats/metadata.md). Used by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "meta/kv_store.h"
#include "vfs/internal/schema.h"
#include "vfs/path.h"
#include "vfs/volume.h"

namespace weft {

// The reserved top-level directory that exposes snapshots: /.weft/snapshots/<name>/...
inline constexpr const char* kWeftDirName = ".weft";
inline constexpr const char* kSnapshotsDirName = "snapshots";
enum class VirtualDir { kNone, kWeftRoot, kSnapshotsRoot };

class NamespaceView {
 public:
  static constexpr uint64_t kLive = UINT64_MAX;

  NamespaceView(KvReader* reader, uint64_t seq) : reader_(reader), seq_(seq) {}

  uint64_t seq() const { return seq_; }
  bool live() const { return seq_ == kLive; }

  Result<std::optional<schema::Dirent>> GetDirent(uint64_t parent, std::string_view name);
  Result<std::optional<schema::Inode>> GetInode(uint64_t ino);
  Result<schema::Manifest> GetManifest(uint64_t ino, uint64_t content_seq);

  struct Resolved {
    uint64_t ino = 0;
    schema::Inode inode;
  };
  // Walks `segments` from the root. Errors name `display`, the path as the caller wrote it.
  Result<Resolved> Resolve(const std::vector<std::string>& segments, const std::string& display);
  // One component further: `name` inside the directory `dir`.
  Result<Resolved> Step(const Resolved& dir, const std::string& name, const std::string& display);

  // One page of the directory `dir`, sorted by name.
  Result<ReadDirPage> List(uint64_t dir, const std::string& dir_path, const ReadDirOptions& opts);

 private:
  static std::optional<schema::Inode> AsOfSnapshot(schema::Inode inode);

  KvReader* reader_;
  uint64_t seq_;
};

FileInfo MakeFileInfo(const std::string& path, uint64_t ino, const schema::Inode& inode);

}  // namespace weft
