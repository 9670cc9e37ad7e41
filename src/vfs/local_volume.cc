#include "vfs/local_volume.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "chunk/caching_chunk_store.h"
#include "chunk/pack_chunk_store.h"
#include "chunk/zero_chunks.h"
#include "vfs/content_writer.h"
#include "vfs/internal/dir_cache.h"
#include "vfs/internal/namespace_view.h"
#include "vfs/internal/schema.h"
#include "vfs/path.h"

namespace weft {

bool ChunkRef::is_hole() const {
  return ZeroChunkLength(id).has_value();
}

std::string ChunksEtag(const std::vector<ChunkRef>& chunks) {
  std::string ids;
  ids.reserve(chunks.size() * 32);
  for (const ChunkRef& c : chunks) ids.append(c.id.raw());
  return ChunkId::Of(AsBytes(ids)).ToHex().substr(0, 32) + "-" + std::to_string(chunks.size());
}

namespace {

using schema::ChunkRef;
using schema::Dirent;
using schema::Inode;
using schema::Manifest;

// Reads through the writes a transaction has staged, so later steps of one mutation (mkdir -p,
// then create) see earlier ones.
class TxnReader {
 public:
  explicit TxnReader(KvStore* kv) : kv_(kv) {}

  Result<std::optional<std::string>> Get(const std::string& key) {
    auto it = staged_.find(key);
    if (it != staged_.end()) return it->second;
    return kv_->Get(key);
  }
  void Put(const std::string& key, std::string value) {
    staged_[key] = value;
    batch_.Put(key, value);
  }
  void Delete(const std::string& key) {
    staged_[key] = std::nullopt;
    batch_.Delete(key);
  }
  const WriteBatch& batch() const { return batch_; }

 private:
  KvStore* kv_;
  std::map<std::string, std::optional<std::string>> staged_;
  WriteBatch batch_;
};

bool IsUnderSnapshotsDir(const std::vector<std::string>& segments) {
  return !segments.empty() && segments[0] == kWeftDirName;
}

constexpr size_t kMaxAttributes = 64;
constexpr size_t kMaxAttributeName = 256;
constexpr size_t kMaxAttributeBytes = 8 * 1024;

// Attributes are copied into every inode state, so they stay small.
Status ValidateAttributes(const Attributes& attributes) {
  if (attributes.size() > kMaxAttributes) {
    return InvalidArgument("at most " + std::to_string(kMaxAttributes) + " attributes, not " +
                           std::to_string(attributes.size()));
  }
  size_t total = 0;
  for (const auto& [name, value] : attributes) {
    if (name.empty() || name.size() > kMaxAttributeName) {
      return InvalidArgument("attribute names must be 1.." + std::to_string(kMaxAttributeName) +
                             " bytes");
    }
    total += name.size() + value.size();
  }
  if (total > kMaxAttributeBytes) {
    return InvalidArgument("attribute names and values exceed " +
                           std::to_string(kMaxAttributeBytes) + " bytes in total");
  }
  return OkStatus();
}

// A caller's ETag ends up in HTTP headers and XML, always quoted.
Status ValidateEtag(const std::string& etag) {
  if (etag.empty() || etag.size() > 64) return InvalidArgument("an ETag must be 1..64 characters");
  for (char c : etag) {
    if (c < 0x20 || c > 0x7e || c == '"') {
      return InvalidArgument("an ETag must be printable ASCII without '\"'");
    }
  }
  return OkStatus();
}

// Every state of inode `ino`: the current one (seq_end = kLive) if any, then the history
// records, oldest first.
Result<std::vector<schema::History<Inode>>> LoadInodeStates(KvReader* reader, uint64_t ino) {
  std::vector<schema::History<Inode>> states;
  WEFT_ASSIGN_OR_RETURN(auto cur, reader->Get(schema::InodeKey(ino)));
  if (cur) {
    WEFT_ASSIGN_OR_RETURN(auto c, schema::DecodeInode(*cur));
    states.push_back({c.seq_begin, NamespaceView::kLive, 0, std::move(c.value)});
  }
  auto it = reader->NewIterator();
  const std::string prefix = schema::InodeHistoryPrefix(ino);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    WEFT_ASSIGN_OR_RETURN(auto h, schema::DecodeInodeHistory(it->value()));
    states.push_back(std::move(h));
  }
  WEFT_RETURN_IF_ERROR(it->status());
  return states;
}

}  // namespace

class LocalVolume;

// A written file whose chunks are stored, ready to commit.
struct PreparedFile {
  std::string path;
  WriteOptions opts;
  Manifest manifest;
};

// One mutation: staged records at sequence `seq`, applied by LocalVolume::Apply.
struct Txn {
  Txn(KvStore* kv, uint64_t s, int64_t now, uint64_t next)
      : reader(kv), seq(s), now_ns(now), next_ino(next) {}

  TxnReader reader;
  uint64_t seq;  // the sequence being written; a batch advances it once per file
  int64_t now_ns;
  uint64_t next_ino;
  std::vector<Change> changes;  // feed records; Mutate adds one if the body added none

  // Starts the next sub-operation of a batch at its own sequence. No reader can observe the
  // sequences in between: the whole batch is one atomic KV write.
  void AdvanceSequence() { ++seq; }

  Result<std::optional<schema::Current<Dirent>>> GetDirent(uint64_t parent, std::string_view name) {
    WEFT_ASSIGN_OR_RETURN(auto v, reader.Get(schema::DirentKey(parent, name)));
    if (!v) return std::optional<schema::Current<Dirent>>();
    WEFT_ASSIGN_OR_RETURN(auto d, schema::DecodeDirent(*v));
    return std::optional<schema::Current<Dirent>>(d);
  }
  Result<schema::Current<Inode>> GetInode(uint64_t ino) {
    WEFT_ASSIGN_OR_RETURN(auto v, reader.Get(schema::InodeKey(ino)));
    if (!v) return Corruption("inode " + std::to_string(ino) + " is missing");
    return schema::DecodeInode(*v);
  }

  // Replaces (or creates) the current dirent, moving the old one to history.
  Status PutDirent(uint64_t parent, std::string_view name, const Dirent& d) {
    WEFT_ASSIGN_OR_RETURN(bool was_dir, RetireDirent(parent, name));
    reader.Put(schema::DirentKey(parent, name), schema::EncodeDirent(seq, d));
    changed_dirs[parent] += int{d.type == FileType::kDirectory} - int{was_dir};
    return OkStatus();
  }
  Status DeleteDirent(uint64_t parent, std::string_view name) {
    WEFT_ASSIGN_OR_RETURN(bool was_dir, RetireDirent(parent, name));
    reader.Delete(schema::DirentKey(parent, name));
    changed_dirs[parent] -= int{was_dir};
    return OkStatus();
  }
  Status PutInode(uint64_t ino, const Inode& i) {
    WEFT_RETURN_IF_ERROR(RetireInode(ino));
    reader.Put(schema::InodeKey(ino), schema::EncodeInode(seq, i));
    return OkStatus();
  }
  Status DeleteInode(uint64_t ino) {
    WEFT_RETURN_IF_ERROR(RetireInode(ino));
    reader.Delete(schema::InodeKey(ino));
    return OkStatus();
  }
  uint64_t AllocateInode() { return next_ino++; }

  // Changes what namespace operations change of an inode beside its entries (times, link
  // counts) in place, keeping the record's sequence: these are not versioned, so a directory
  // that gains a million files gains no history, and a snapshot shows the latest of them.
  template <typename Change>
  Status TouchInode(uint64_t ino, Change change) {
    WEFT_ASSIGN_OR_RETURN(auto v, reader.Get(schema::InodeKey(ino)));
    if (!v) return OkStatus();  // removed by this transaction
    WEFT_ASSIGN_OR_RETURN(auto cur, schema::DecodeInode(*v));
    change(cur.value);
    reader.Put(schema::InodeKey(ino), schema::EncodeInode(cur.seq_begin, cur.value));
    return OkStatus();
  }

  // Takes one name away from inode `ino` (not a directory): the inode goes with its last name.
  Status DropName(uint64_t ino) {
    WEFT_ASSIGN_OR_RETURN(auto cur, GetInode(ino));
    if (cur.value.nlink <= 1) return DeleteInode(ino);
    return TouchInode(ino, [&](Inode& i) {
      // One name is the default, not kept.
      i.nlink = i.nlink == 2 ? 0 : i.nlink - 1;
      i.ctime_ns = now_ns;
    });
  }

  // For entries changed without PutDirent/DeleteDirent (a removal that leaves no history).
  void NoteEntriesChanged(uint64_t parent) { changed_dirs[parent] += 0; }

  // Every directory whose entries changed gets the commit's time as its mtime and ctime, and
  // the change in its number of subdirectories in its link count (where it keeps one).
  Status UpdateChangedDirectories() {
    for (const auto& changed : changed_dirs) {
      const int64_t subdirs = changed.second;  // a plain name: lambdas cannot capture bindings
      const uint64_t ino = changed.first;
      WEFT_RETURN_IF_ERROR(TouchInode(ino, [&](Inode& dir) {
        if (!dir.atime_ns) dir.atime_ns = dir.mtime_ns;  // it followed the mtime; it stays
        dir.mtime_ns = dir.ctime_ns = now_ns;
        if (dir.nlink != 0)
          dir.nlink = static_cast<uint32_t>(std::max<int64_t>(2, int64_t{dir.nlink} + subdirs));
      }));
    }
    changed_dirs.clear();
    return OkStatus();
  }

 private:
  // Directories whose entries this transaction changed, and by how many subdirectories.
  std::map<uint64_t, int64_t> changed_dirs;

  // A value made current earlier in this same transaction has an empty interval: no history.
  // Returns whether the retired entry (if any) was a directory.
  Result<bool> RetireDirent(uint64_t parent, std::string_view name) {
    WEFT_ASSIGN_OR_RETURN(auto old, GetDirent(parent, name));
    if (!old) return false;
    const bool was_dir = old->value.type == FileType::kDirectory;
    if (old->seq_begin == seq) return was_dir;
    schema::History<Dirent> h{old->seq_begin, seq, now_ns, old->value};
    reader.Put(schema::DirentHistoryKey(parent, name, seq), schema::EncodeDirentHistory(h));
    return was_dir;
  }
  Status RetireInode(uint64_t ino) {
    WEFT_ASSIGN_OR_RETURN(auto v, reader.Get(schema::InodeKey(ino)));
    if (!v) return OkStatus();
    WEFT_ASSIGN_OR_RETURN(auto old, schema::DecodeInode(*v));
    if (old.seq_begin == seq) return OkStatus();
    schema::History<Inode> h{old.seq_begin, seq, now_ns, old.value};
    reader.Put(schema::InodeHistoryKey(ino, seq), schema::EncodeInodeHistory(h));
    return OkStatus();
  }
};

class LocalVolume final : public Volume {
 public:
  LocalVolume(std::shared_ptr<KvStore> kv, std::shared_ptr<ChunkStore> chunks,
              const LocalVolumeOptions& options)
      // Holes are never stored or read from disk (chunk/zero_chunks.h).
      : kv_(std::move(kv)),
        chunks_(std::make_shared<ZeroChunkStore>(std::move(chunks))),
        options_(options) {}

  Status Init();

  Result<FileInfo> Stat(const RequestContext& ctx, const std::string& path,
                        const ReadOptions& opts) override;
  Result<ReadDirPage> ReadDir(const RequestContext& ctx, const std::string& path,
                              const ReadDirOptions& opts) override;
  Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx, const std::string& path,
                                                 const ReadOptions& opts) override;
  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& version_id) override;
  Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext& ctx, const std::string& path,
                                                 const WriteOptions& opts) override;
  Result<FileInfo> Mkdir(const RequestContext& ctx, const std::string& path, uint32_t mode,
                         bool parents) override;
  Result<FileInfo> Symlink(const RequestContext& ctx, const std::string& path,
                           const std::string& target) override;
  Result<FileInfo> Mknod(const RequestContext& ctx, const std::string& path, FileType type,
                         uint32_t mode, uint64_t rdev) override;
  Status Rename(const RequestContext& ctx, const std::string& from, const std::string& to) override;
  Result<FileInfo> Link(const RequestContext& ctx, const std::string& existing,
                        const std::string& path) override;
  Status Unlink(const RequestContext& ctx, const std::string& path) override;
  Status Rmdir(const RequestContext& ctx, const std::string& path) override;
  Result<FileInfo> SetAttr(const RequestContext& ctx, const std::string& path,
                           const SetAttrRequest& req) override;
  Result<SnapshotInfo> CreateSnapshot(const RequestContext& ctx, const std::string& name,
                                      const std::string& path) override;
  Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext& ctx) override;
  Status DeleteSnapshot(const RequestContext& ctx, const std::string& name) override;
  Result<std::vector<VersionInfo>> ListVersions(const RequestContext& ctx,
                                                const std::string& path) override;
  Result<std::vector<Change>> ReadChanges(const RequestContext& ctx, uint64_t after,
                                          uint32_t limit) override;
  Result<std::vector<ChunkId>> MissingChunks(const RequestContext& ctx,
                                             const std::vector<ChunkId>& ids) override;
  Result<UsageInfo> Usage(const RequestContext& ctx) override;
  Result<GcReport> CollectGarbage(const RequestContext& ctx, const GcOptions& opts) override;
  Result<FsckReport> Fsck(const RequestContext& ctx) override;
  Status DeleteVersion(const RequestContext& ctx, const std::string& path,
                       const std::string& version_id) override;

  // Used by LocalFileWriter.
  const ChunkerOptions& chunker_options() const { return options_.chunker; }
  Status PutChunk(const ChunkId& id, ByteSpan data);
  void ReleaseChunks(const std::vector<ChunkRef>& chunks);
  // References stored chunks (another version's) as a writer's pending chunks, until
  // ReleaseChunks: the caller must keep them alive until this returns (an open reader's pin).
  void HoldChunks(const std::vector<ChunkRef>& chunks);
  // Holds a chunk already in the store like HoldChunks; FailedPrecondition if it is not.
  Status HoldStoredChunk(const ChunkId& id);
  Status FlushChunks() { return chunks_->Flush(); }
  Status CheckWritable(const std::string& path, const WriteOptions& opts);
  // Commits files whose chunks are flushed, in one transaction.
  Result<std::vector<FileInfo>> CommitFiles(const RequestContext& ctx,
                                            const std::vector<PreparedFile>& files);
  Result<std::vector<FileInfo>> CommitAll(
      const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) override;

 private:
  // Parses a read path, resolving the snapshot forms, into a view and segments.
  struct ReadTarget {
    std::unique_ptr<KvReader> snapshot;  // keeps the KV view alive
    std::unique_ptr<NamespaceView> view;
    std::vector<std::string> segments;  // inside the view
    std::string display;                // the path as the caller named it
    VirtualDir virtual_dir = VirtualDir::kNone;
    uint64_t dir_token = DirCache::kNoToken;  // live views: dir_cache_ may serve the parents
    bool live = false;                        // the current tree, not a snapshot's
  };
  Result<ReadTarget> ParseReadTarget(const std::string& path,
                                     const std::optional<std::string>& snapshot);
  Result<SnapshotInfo> FindSnapshot(KvReader* reader, const std::string& name);
  // Resolves t.segments in t.view, the parent directories through dir_cache_ when it can.
  Result<NamespaceView::Resolved> Resolve(ReadTarget& t);

  // Runs `body` as one transaction under the commit lock and applies it durably.
  template <typename Body>
  Status Mutate(const RequestContext& ctx, std::string op, std::string path, std::string path2,
                Body body);
  // A reader of one content version, pinned against garbage collection while it lives.
  Result<std::unique_ptr<FileReader>> NewReader(FileInfo info, uint64_t ino, uint64_t content_seq);
  Result<FileInfo> StageFile(Txn* t, const RequestContext& ctx, const std::string& path,
                             const WriteOptions& opts, Manifest manifest);
  Result<uint64_t> ResolveDirForWrite(Txn* txn, const std::vector<std::string>& segments,
                                      bool create_parents, const RequestContext& ctx);
  Result<FileInfo> InfoOfLive(const std::string& path);
  // Makes `version` (an older entry of ListVersions) the current content of parent/name
  // again, in place of the inode current_ino (0: the name is absent).
  Status RestoreVersion(Txn* t, KvReader* snap, uint64_t parent, const std::string& name,
                        const std::string& canonical, const VersionInfo& version,
                        uint64_t current_ino);
  // DeleteVersion of a delete marker ("delete.<seq>").
  Status DeleteMarker(const RequestContext& ctx, const ParentAndName& pn,
                      const std::string& canonical, const std::string& version_id);
  // Creates an entry without content (a symlink, a special file) for `inode`.
  Result<FileInfo> CreateEntry(const RequestContext& ctx, std::string op, const std::string& path,
                               std::string detail, Inode inode);

  std::shared_ptr<KvStore> kv_;
  std::shared_ptr<ChunkStore> chunks_;
  LocalVolumeOptions options_;
  DirCache dir_cache_;

  std::mutex commit_mu_;   // serialises mutations
  uint64_t seq_ = 0;       // GUARDED_BY(commit_mu_): last committed sequence
  uint64_t next_ino_ = 0;  // GUARDED_BY(commit_mu_)

  // Chunks written by FileWriters that have not committed yet; garbage collection treats them
  // as live. Writers hold gc_mu_ shared while they put a chunk; GC holds it exclusively.
  std::shared_mutex gc_mu_;
  std::mutex pending_mu_;
  std::unordered_map<ChunkId, int, ChunkIdHash> pending_;  // GUARDED_BY(pending_mu_)

  // Content versions (ino, content_seq) that open readers use; GC keeps them.
  std::mutex pinned_mu_;
  std::map<std::pair<uint64_t, uint64_t>, int> pinned_;  // GUARDED_BY(pinned_mu_)
};

namespace {

constexpr uint64_t kWeftRootIno = UINT64_MAX - 1;
constexpr uint64_t kSnapshotsRootIno = UINT64_MAX - 2;

// Calls fn(key, value) for every key starting with `prefix`, stopping at the first error.
template <typename Fn>
Status ForEachWithPrefix(KvReader* reader, const std::string& prefix, Fn fn) {
  auto it = reader->NewIterator();
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    WEFT_RETURN_IF_ERROR(fn(it->key(), it->value()));
  }
  return it->status();
}

// The directories in `marked` and every live directory and file below one of them. Versions of
// files in a removed directory cannot be listed any more (ListVersions resolves the live
// parent), so they age out as usual.
Result<std::unordered_set<uint64_t>> KeepAllSubtrees(KvReader* reader,
                                                     const std::unordered_set<uint64_t>& marked) {
  std::unordered_map<uint64_t, std::vector<uint64_t>> children;
  WEFT_RETURN_IF_ERROR(
      ForEachWithPrefix(reader, std::string(1, schema::kDirent),
                        [&](std::string_view key, std::string_view value) -> Status {
                          if (key.size() < 9) return Corruption("malformed directory entry key");
                          WEFT_ASSIGN_OR_RETURN(auto d, schema::DecodeDirent(value));
                          children[GetBigEndian64(key.data() + 1)].push_back(d.value.ino);
                          return OkStatus();
                        }));
  std::unordered_set<uint64_t> out(marked);
  std::vector<uint64_t> todo(marked.begin(), marked.end());
  while (!todo.empty()) {
    auto it = children.find(todo.back());
    todo.pop_back();
    if (it == children.end()) continue;
    for (uint64_t child : it->second) {
      if (out.insert(child).second) todo.push_back(child);
    }
  }
  return out;
}

Status RejectReserved(const std::vector<std::string>& segments, const std::string& path) {
  if (!segments.empty() && segments[0] == kWeftDirName) {
    return ReadOnly(path + ": /.weft holds read-only snapshots");
  }
  return OkStatus();
}

FileInfo VirtualDirInfo(const std::string& path, uint64_t ino) {
  FileInfo f;
  f.path = path;
  f.inode = ino;
  f.type = FileType::kDirectory;
  f.mode = 0555;
  return f;
}

// Reads one fixed version of a file. Keeps the most recently used chunk so sequential reads in
// small pieces fetch each chunk once.
class LocalFileReader final : public FileReader {
 public:
  // `pin` keeps the version from garbage collection for the reader's lifetime.
  LocalFileReader(const LocalVolume* owner, ChunkStore* chunks, FileInfo info, Manifest manifest,
                  std::shared_ptr<void> pin)
      : owner_(owner),
        chunks_(chunks),
        info_(std::move(info)),
        manifest_(std::move(manifest)),
        pin_(std::move(pin)) {
    offsets_.reserve(manifest_.chunks.size() + 1);
    uint64_t off = 0;
    for (const ChunkRef& c : manifest_.chunks) {
      offsets_.push_back(off);
      off += c.length;
    }
    offsets_.push_back(off);
  }

  const FileInfo& info() const override { return info_; }
  const LocalVolume* owner() const { return owner_; }
  const Manifest& manifest() const { return manifest_; }
  const std::vector<ChunkRef>& chunks() const override { return manifest_.chunks; }

  Result<std::shared_ptr<const std::string>> ReadChunk(size_t index) override {
    WEFT_RETURN_IF_ERROR(CheckChunksExist(index + 1));
    return LoadChunk(index);
  }

  Result<std::vector<std::shared_ptr<const std::string>>> ReadChunks(size_t first, size_t last,
                                                                     Reuse reuse) override {
    if (reuse == Reuse::kLikely) return FileReader::ReadChunks(first, last, reuse);
    if (first >= last) return std::vector<std::shared_ptr<const std::string>>();
    WEFT_RETURN_IF_ERROR(CheckChunksExist(last));
    std::vector<ChunkId> ids;
    ids.reserve(last - first);
    for (size_t i = first; i < last; ++i) ids.push_back(manifest_.chunks[i].id);
    // Together: a file's neighbouring records come off the disk in one read.
    Result<std::vector<std::shared_ptr<const std::string>>> data = chunks_->GetManyOnce(ids);
    if (!data.ok()) return data.status().WithContext(info_.path);
    for (size_t i = first; i < last; ++i) {
      WEFT_RETURN_IF_ERROR(CheckLength(i, (*data)[i - first]).status());
    }
    return data;
  }

  Status LendChunks(size_t first, size_t last, const ChunkUser& use) override {
    if (first >= last) return use({});
    WEFT_RETURN_IF_ERROR(CheckChunksExist(last));
    std::vector<ChunkId> ids;
    ids.reserve(last - first);
    for (size_t i = first; i < last; ++i) ids.push_back(manifest_.chunks[i].id);
    bool used = false;
    Status s = chunks_->LendMany(ids, [&](std::span<const std::string_view> views) -> Status {
      for (size_t i = 0; i < views.size(); ++i) {
        if (views[i].size() != manifest_.chunks[first + i].length) {
          return Corruption("chunk " + ids[i].ShortHex() + " has the wrong length");
        }
      }
      used = true;
      return use(views);
    });
    return used ? s : s.WithContext(info_.path);
  }

  void WillNeed(size_t first, size_t last) override {
    last = std::min(last, manifest_.chunks.size());
    if (first >= last) return;
    std::vector<ChunkId> ids;
    ids.reserve(last - first);
    for (size_t i = first; i < last; ++i) ids.push_back(manifest_.chunks[i].id);
    chunks_->WillNeed(ids);
  }

  Result<std::string> ReadAt(uint64_t offset, uint64_t length) override {
    std::string out;
    if (offset >= manifest_.size || length == 0) return out;
    length = std::min<uint64_t>(length, manifest_.size - offset);
    out.reserve(length);
    // The chunk containing `offset`: the last one starting at or before it.
    size_t idx = std::upper_bound(offsets_.begin(), offsets_.end(), offset) - offsets_.begin() - 1;
    const size_t last =
        std::upper_bound(offsets_.begin(), offsets_.end(), offset + length - 1) - offsets_.begin();
    // Several chunks: ask for all of them at once, so a cold read waits for the disk once.
    if (last - idx > 1) WillNeed(idx, last);
    while (out.size() < length && idx < manifest_.chunks.size()) {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> data, LoadChunk(idx));
      uint64_t in_chunk = offset + out.size() - offsets_[idx];
      uint64_t n = std::min<uint64_t>(data->size() - in_chunk, length - out.size());
      out.append(*data, in_chunk, n);
      ++idx;
    }
    return out;
  }

 private:
  // OK when the file has chunks [0, end); else the OutOfRange ReadChunk(end - 1) returns.
  Status CheckChunksExist(size_t end) const {
    if (end <= manifest_.chunks.size()) return OkStatus();
    return OutOfRange(info_.path + ": chunk " + std::to_string(end - 1) + " of " +
                      std::to_string(manifest_.chunks.size()));
  }

  Result<std::shared_ptr<const std::string>> LoadChunk(size_t idx) {
    {
      std::lock_guard lock(mu_);
      if (cached_ && cached_idx_ == idx) return cached_;
    }
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> shared,
                          CheckLength(idx, chunks_->GetShared(manifest_.chunks[idx].id)));
    std::lock_guard lock(mu_);
    cached_ = shared;
    cached_idx_ = idx;
    return shared;
  }

  Result<std::shared_ptr<const std::string>> CheckLength(
      size_t idx, Result<std::shared_ptr<const std::string>> data) const {
    if (!data.ok()) return data.status().WithContext(info_.path);
    if ((*data)->size() != manifest_.chunks[idx].length) {
      return Corruption(info_.path + ": chunk " + manifest_.chunks[idx].id.ShortHex() +
                        " has the wrong length");
    }
    return data;
  }

  const LocalVolume* owner_;
  ChunkStore* chunks_;
  FileInfo info_;
  Manifest manifest_;
  std::shared_ptr<void> pin_;
  std::vector<uint64_t> offsets_;  // offsets_[i] = start of chunk i; last = size
  std::mutex mu_;
  std::shared_ptr<const std::string> cached_;  // GUARDED_BY(mu_)
  size_t cached_idx_ = 0;                      // GUARDED_BY(mu_)
};

}  // namespace

// Streams one file into chunks; commits through LocalVolume::CommitFiles.
// A LocalVolume's writer: ContentWriter (vfs/content_writer.h) storing into this volume's
// chunks, held from garbage collection until the commit, then a manifest committed.
class LocalFileWriter final : public FileWriter, private ChunkHolder {
 public:
  LocalFileWriter(LocalVolume* volume, RequestContext ctx, std::string path, WriteOptions opts)
      : volume_(volume),
        ctx_(std::move(ctx)),
        content_(std::move(path), volume->chunker_options(), std::move(opts), this) {}

  ~LocalFileWriter() override { Abort(); }

  Status Write(ByteSpan data) override { return content_.Write(data); }
  Status AppendFrom(FileReader& source) override { return content_.AppendFrom(source); }
  Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) override {
    return content_.AppendChunk(chunk, data);
  }
  Status WriteZeros(uint64_t length) override { return content_.WriteZeros(length); }

  Result<FileInfo> Commit() override {
    WEFT_ASSIGN_OR_RETURN(PreparedFile file, Prepare());
    // Chunks must be durable before the manifest that names them.
    Status s = volume_->FlushChunks();
    Result<std::vector<FileInfo>> infos =
        s.ok() ? volume_->CommitFiles(ctx_, {std::move(file)}) : Result<std::vector<FileInfo>>(s);
    Abort();  // releases the pending chunk references either way
    if (!infos.ok()) return infos.status();
    return std::move(infos->front());
  }

  // Stores the last chunk and completes the manifest; the chunks stay referenced (safe from
  // GC) until Abort() or destruction.
  Result<PreparedFile> Prepare() {
    WEFT_ASSIGN_OR_RETURN(WrittenContent content, content_.Finish());
    Manifest manifest;
    manifest.size = content.size;
    manifest.etag = std::move(content.etag);
    manifest.chunks = std::move(content.chunks);
    return PreparedFile{content_.path(), content_.options(), std::move(manifest)};
  }

  bool BelongsTo(const LocalVolume* volume) const { return volume_ == volume; }
  const RequestContext& ctx() const { return ctx_; }

  void Abort() override { content_.Abort(); }

  uint64_t bytes_written() const override { return content_.size(); }

 private:
  // --- ChunkHolder: this volume's pending chunk references ---
  Status Put(const ChunkId& id, ByteSpan data) override { return volume_->PutChunk(id, data); }
  Status HoldStored(const ChunkId& id) override { return volume_->HoldStoredChunk(id); }
  const std::vector<ChunkRef>* SharedChunks(FileReader& source) override {
    auto* local = dynamic_cast<LocalFileReader*>(&source);
    return local != nullptr && local->owner() == volume_ ? &local->chunks() : nullptr;
  }
  void Hold(const std::vector<ChunkRef>& chunks) override { volume_->HoldChunks(chunks); }
  void Release(const std::vector<ChunkRef>& chunks) override { volume_->ReleaseChunks(chunks); }

  LocalVolume* volume_;
  RequestContext ctx_;
  ContentWriter content_;
};

Status LocalVolume::Init() {
  WEFT_ASSIGN_OR_RETURN(auto format, kv_->Get(schema::SystemKey("format")));
  if (format) {
    if (schema::DecodeU64(*format) != schema::kFormatVersion) {
      return FailedPrecondition("metadata format version " +
                                std::to_string(schema::DecodeU64(*format)) +
                                " is not supported by this weft (expects " +
                                std::to_string(schema::kFormatVersion) + ")");
    }
    WEFT_ASSIGN_OR_RETURN(auto seq, kv_->Get(schema::SystemKey("seq")));
    WEFT_ASSIGN_OR_RETURN(auto ino, kv_->Get(schema::SystemKey("next_ino")));
    if (!seq || !ino) return Corruption("metadata store lacks its sequence counters");
    seq_ = schema::DecodeU64(*seq);
    next_ino_ = schema::DecodeU64(*ino);
    return OkStatus();
  }
  // A new volume: the root directory at sequence 1.
  int64_t now = options_.clock->NowNanos();
  Inode root;
  root.type = FileType::kDirectory;
  root.mode = 0755;
  root.nlink = 2;
  root.mtime_ns = root.ctime_ns = now;
  WriteBatch batch;
  batch.Put(schema::InodeKey(schema::kRootInode), schema::EncodeInode(1, root));
  batch.Put(schema::SystemKey("seq"), schema::EncodeU64(1));
  batch.Put(schema::SystemKey("next_ino"), schema::EncodeU64(schema::kRootInode + 1));
  batch.Put(schema::SystemKey("format"), schema::EncodeU64(schema::kFormatVersion));
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  seq_ = 1;
  next_ino_ = schema::kRootInode + 1;
  return OkStatus();
}

Result<SnapshotInfo> LocalVolume::FindSnapshot(KvReader* reader, const std::string& name) {
  WEFT_RETURN_IF_ERROR(ValidateName(name).WithContext("snapshot name"));
  WEFT_ASSIGN_OR_RETURN(auto v, reader->Get(schema::SnapshotKey(name)));
  if (!v) return NotFound("snapshot '" + name + "' does not exist");
  return schema::DecodeSnapshot(name, *v);
}

Result<LocalVolume::ReadTarget> LocalVolume::ParseReadTarget(
    const std::string& path, const std::optional<std::string>& snapshot) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  ReadTarget t;
  t.display = JoinPath(segments);
  const uint64_t token = dir_cache_.Begin();
  t.snapshot = kv_->NewSnapshot();
  uint64_t seq = NamespaceView::kLive;
  if (IsUnderSnapshotsDir(segments)) {
    if (snapshot) return InvalidArgument(path + ": a /.weft path already names a snapshot");
    if (segments.size() == 1) {
      t.virtual_dir = VirtualDir::kWeftRoot;
    } else if (segments[1] != kSnapshotsDirName) {
      return NotFound(path + ": no such file or directory");
    } else if (segments.size() == 2) {
      t.virtual_dir = VirtualDir::kSnapshotsRoot;
    } else {
      WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, FindSnapshot(t.snapshot.get(), segments[2]));
      seq = snap.sequence;
      WEFT_ASSIGN_OR_RETURN(t.segments, SplitPath(snap.path));
      t.segments.insert(t.segments.end(), segments.begin() + 3, segments.end());
    }
  } else if (snapshot) {
    WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, FindSnapshot(t.snapshot.get(), *snapshot));
    seq = snap.sequence;
    WEFT_ASSIGN_OR_RETURN(std::vector<std::string> base, SplitPath(snap.path));
    if (segments.size() < base.size() || !std::equal(base.begin(), base.end(), segments.begin())) {
      return NotFound(path + ": outside snapshot '" + *snapshot + "', which covers " + snap.path);
    }
    t.segments = std::move(segments);
  } else {
    t.segments = std::move(segments);
    t.dir_token = dir_cache_.Confirm(token);
    t.live = true;
  }
  t.view = std::make_unique<NamespaceView>(t.snapshot.get(), seq);
  return t;
}

Result<NamespaceView::Resolved> LocalVolume::Resolve(ReadTarget& t) {
  if (t.dir_token == DirCache::kNoToken || t.segments.empty()) {
    return t.view->Resolve(t.segments, t.display);
  }
  const std::vector<std::string> parent(t.segments.begin(), t.segments.end() - 1);
  const std::string parent_path = JoinPath(parent);
  std::optional<NamespaceView::Resolved> dir = dir_cache_.Find(t.dir_token, parent_path);
  if (!dir) {
    WEFT_ASSIGN_OR_RETURN(dir, t.view->Resolve(parent, t.display));
    if (dir->inode.type == FileType::kDirectory) dir_cache_.Insert(t.dir_token, parent_path, *dir);
  }
  return t.view->Step(*dir, t.segments.back(), t.display);
}

Result<FileInfo> LocalVolume::Stat(const RequestContext&, const std::string& path,
                                   const ReadOptions& opts) {
  WEFT_ASSIGN_OR_RETURN(ReadTarget t, ParseReadTarget(path, opts.snapshot));
  if (t.virtual_dir == VirtualDir::kWeftRoot) return VirtualDirInfo(t.display, kWeftRootIno);
  if (t.virtual_dir == VirtualDir::kSnapshotsRoot) {
    return VirtualDirInfo(t.display, kSnapshotsRootIno);
  }
  WEFT_ASSIGN_OR_RETURN(auto r, Resolve(t));
  return MakeFileInfo(t.display, r.ino, r.inode);
}

Result<ReadDirPage> LocalVolume::ReadDir(const RequestContext& ctx, const std::string& path,
                                         const ReadDirOptions& opts) {
  if (opts.limit == 0 || opts.limit > 100000) {
    return InvalidArgument("readdir limit must be between 1 and 100000");
  }
  WEFT_ASSIGN_OR_RETURN(ReadTarget t, ParseReadTarget(path, opts.snapshot));
  ReadDirPage page;
  if (t.virtual_dir == VirtualDir::kWeftRoot) {
    if (opts.start_after < kSnapshotsDirName) {
      DirEntry e{kSnapshotsDirName, FileType::kDirectory, kSnapshotsRootIno, std::nullopt};
      if (opts.with_info) e.info = VirtualDirInfo(ChildPath(t.display, e.name), e.inode);
      page.entries.push_back(std::move(e));
    }
    return page;
  }
  if (t.virtual_dir == VirtualDir::kSnapshotsRoot) {
    WEFT_ASSIGN_OR_RETURN(auto snaps, ListSnapshots(ctx));
    for (const SnapshotInfo& s : snaps) {
      if (s.name <= opts.start_after && !opts.start_after.empty()) continue;
      if (page.entries.size() == opts.limit) {
        page.truncated = true;
        break;
      }
      std::string child = ChildPath(t.display, s.name);
      WEFT_ASSIGN_OR_RETURN(FileInfo info, Stat(ctx, child, {}));
      DirEntry e{s.name, FileType::kDirectory, info.inode, std::nullopt};
      if (opts.with_info) e.info = info;
      page.entries.push_back(std::move(e));
    }
    return page;
  }
  WEFT_ASSIGN_OR_RETURN(auto r, Resolve(t));
  if (r.inode.type != FileType::kDirectory) {
    return NotADirectory(t.display + ": not a directory");
  }
  WEFT_ASSIGN_OR_RETURN(page, t.view->List(r.ino, t.display, opts));
  if (t.live) {
    // Read from the same KV snapshot as the entries: the last commit they reflect.
    WEFT_ASSIGN_OR_RETURN(std::optional<std::string> seq,
                          t.snapshot->Get(schema::SystemKey("seq")));
    if (seq) page.sequence = schema::DecodeU64(*seq);
  }
  return page;
}

Result<std::unique_ptr<FileReader>> LocalVolume::OpenReader(const RequestContext&,
                                                            const std::string& path,
                                                            const ReadOptions& opts) {
  WEFT_ASSIGN_OR_RETURN(ReadTarget t, ParseReadTarget(path, opts.snapshot));
  if (t.virtual_dir != VirtualDir::kNone) return IsADirectory(t.display + ": is a directory");
  WEFT_ASSIGN_OR_RETURN(auto r, Resolve(t));
  if (r.inode.type == FileType::kDirectory) return IsADirectory(t.display + ": is a directory");
  if (r.inode.type != FileType::kFile) {
    return InvalidArgument(t.display + ": is a " + std::string(FileTypeName(r.inode.type)) +
                           ", not a file");
  }
  return NewReader(MakeFileInfo(t.display, r.ino, r.inode), r.ino, r.inode.content_seq);
}

Result<std::unique_ptr<FileReader>> LocalVolume::NewReader(FileInfo info, uint64_t ino,
                                                           uint64_t content_seq) {
  // Pin, then read the manifest, with garbage collection excluded: either GC ran before (and
  // the manifest read below sees what it left) or it will run after and respect the pin.
  std::shared_lock gc_lock(gc_mu_);
  const std::pair<uint64_t, uint64_t> key{ino, content_seq};
  {
    std::lock_guard lock(pinned_mu_);
    ++pinned_[key];
  }
  std::shared_ptr<void> pin(nullptr, [this, key](void*) {
    std::lock_guard lock(pinned_mu_);
    if (--pinned_[key] == 0) pinned_.erase(key);
  });
  WEFT_ASSIGN_OR_RETURN(auto v, kv_->Get(schema::ManifestKey(ino, content_seq)));
  if (!v) {
    return NotFound(info.path + ": version " + schema::MakeVersionId(ino, content_seq) +
                    " is no longer retained");
  }
  WEFT_ASSIGN_OR_RETURN(Manifest m, schema::DecodeManifest(*v));
  info.chunks = m.chunks.size();
  // `info` carries the inode state's attributes: a version described anew (SetAttr) says so
  // from then on, while snapshots and history keep what they had; the manifest keeps the ones
  // it was written with.
  return std::unique_ptr<FileReader>(
      new LocalFileReader(this, chunks_.get(), std::move(info), std::move(m), std::move(pin)));
}

Result<std::unique_ptr<FileReader>> LocalVolume::OpenVersion(const RequestContext& ctx,
                                                             const std::string& path,
                                                             const std::string& version_id) {
  uint64_t ino = 0, content_seq = 0;
  if (!schema::ParseVersionId(version_id, &ino, &content_seq)) {
    return InvalidArgument("'" + version_id + "' is not a version id");
  }
  // The version must belong to this path: authorisation is decided on the path.
  WEFT_ASSIGN_OR_RETURN(auto versions, ListVersions(ctx, path));
  auto it = std::find_if(versions.begin(), versions.end(), [&](const VersionInfo& v) {
    return v.version_id == version_id && !v.is_delete_marker;
  });
  if (it == versions.end()) {
    return NotFound(path + ": no version " + version_id);
  }
  FileInfo info;
  info.path = path;
  info.inode = ino;
  info.type = FileType::kFile;
  info.size = it->size;
  info.etag = it->etag;
  info.mtime_ns = it->mtime_ns;
  info.version_id = version_id;
  // The version's description as last set (its newest inode state with this content).
  auto snap = kv_->NewSnapshot();
  WEFT_ASSIGN_OR_RETURN(auto states, LoadInodeStates(snap.get(), ino));
  const schema::History<Inode>* newest = nullptr;
  for (const schema::History<Inode>& st : states) {
    if (st.value.type != FileType::kFile || st.value.content_seq != content_seq) continue;
    if (newest == nullptr || st.seq_end > newest->seq_end) newest = &st;
  }
  if (newest != nullptr) info.attributes = newest->value.attributes;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileReader> reader, NewReader(info, ino, content_seq));
  return reader;
}

Status LocalVolume::CheckWritable(const std::string& path, const WriteOptions& opts) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  const std::vector<std::string> segments = pn.Segments();
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  auto snap = kv_->NewSnapshot();
  NamespaceView view(snap.get(), NamespaceView::kLive);
  // Fail early on the common mistakes; CommitFile checks again under the lock.
  auto parent = view.Resolve(pn.parent, JoinPath(pn.parent));
  if (!parent.ok()) {
    if (parent.status().code() == StatusCode::kNotFound && opts.create_parents) return OkStatus();
    return parent.status().WithContext(path);
  }
  if (parent->inode.type != FileType::kDirectory) {
    return NotADirectory(path + ": parent is not a directory");
  }
  WEFT_ASSIGN_OR_RETURN(auto d, view.GetDirent(parent->ino, pn.name));
  if (d && d->type == FileType::kDirectory) return IsADirectory(path + ": is a directory");
  return OkStatus();
}

Result<std::unique_ptr<FileWriter>> LocalVolume::OpenWriter(const RequestContext& ctx,
                                                            const std::string& path,
                                                            const WriteOptions& opts) {
  WEFT_RETURN_IF_ERROR(ValidateAttributes(opts.attributes).WithContext(path));
  if (opts.etag) WEFT_RETURN_IF_ERROR(ValidateEtag(*opts.etag).WithContext(path));
  WEFT_RETURN_IF_ERROR(CheckWritable(path, opts));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  return std::unique_ptr<FileWriter>(new LocalFileWriter(this, ctx, JoinPath(segments), opts));
}

Status LocalVolume::PutChunk(const ChunkId& id, ByteSpan data) {
  std::shared_lock gc_lock(gc_mu_);
  {
    std::lock_guard lock(pending_mu_);
    ++pending_[id];
  }
  return chunks_->Put(id, data).status();
}

void LocalVolume::HoldChunks(const std::vector<ChunkRef>& chunks) {
  // Excludes a running collection, exactly like PutChunk.
  std::shared_lock gc_lock(gc_mu_);
  std::lock_guard lock(pending_mu_);
  for (const ChunkRef& c : chunks) ++pending_[c.id];
}

Status LocalVolume::HoldStoredChunk(const ChunkId& id) {
  // Under the GC lock, so a collection cannot remove it between the check and the hold.
  std::shared_lock gc_lock(gc_mu_);
  if (!chunks_->Contains(id)) {
    return FailedPrecondition("chunk " + id.ShortHex() + " is not stored here; send its bytes");
  }
  std::lock_guard lock(pending_mu_);
  ++pending_[id];
  return OkStatus();
}

Result<std::vector<ChunkId>> LocalVolume::MissingChunks(const RequestContext&,
                                                        const std::vector<ChunkId>& ids) {
  std::vector<ChunkId> missing;
  for (const ChunkId& id : ids) {
    if (!chunks_->Contains(id)) missing.push_back(id);
  }
  return missing;
}

void LocalVolume::ReleaseChunks(const std::vector<ChunkRef>& chunks) {
  std::lock_guard lock(pending_mu_);
  for (const ChunkRef& c : chunks) {
    auto it = pending_.find(c.id);
    if (it != pending_.end() && --it->second == 0) pending_.erase(it);
  }
}

template <typename Body>
Status LocalVolume::Mutate(const RequestContext& ctx, std::string op, std::string path,
                           std::string path2, Body body) {
  std::lock_guard lock(commit_mu_);
  Txn txn(kv_.get(), seq_ + 1, options_.clock->NowNanos(), next_ino_);
  WEFT_RETURN_IF_ERROR(body(&txn));
  // A body that staged nothing (mkdir -p of an existing directory) commits nothing and takes
  // no sequence number.
  if (txn.reader.batch().empty()) return OkStatus();
  WEFT_RETURN_IF_ERROR(txn.UpdateChangedDirectories());
  if (txn.changes.empty()) {
    txn.changes.push_back(Change{txn.seq, txn.now_ns, std::move(op), std::move(path),
                                 std::move(path2), ctx.principal});
  }
  for (const Change& change : txn.changes) {
    txn.reader.Put(schema::FeedKey(change.sequence), schema::EncodeChange(change));
  }
  txn.reader.Put(schema::SystemKey("seq"), schema::EncodeU64(txn.seq));
  txn.reader.Put(schema::SystemKey("next_ino"), schema::EncodeU64(txn.next_ino));
  dir_cache_.StartWrite();
  Status written = kv_->Write(txn.reader.batch());
  dir_cache_.EndWrite();
  WEFT_RETURN_IF_ERROR(written);
  seq_ = txn.seq;
  next_ino_ = txn.next_ino;
  return OkStatus();
}

Result<uint64_t> LocalVolume::ResolveDirForWrite(Txn* txn, const std::vector<std::string>& segments,
                                                 bool create_parents, const RequestContext& ctx) {
  uint64_t ino = schema::kRootInode;
  std::vector<std::string> walked;
  for (const std::string& seg : segments) {
    walked.push_back(seg);
    WEFT_ASSIGN_OR_RETURN(auto d, txn->GetDirent(ino, seg));
    if (!d) {
      if (!create_parents) return NotFound(JoinPath(walked) + ": no such directory");
      Inode dir;
      dir.type = FileType::kDirectory;
      dir.mode = 0755;
      dir.uid = ctx.uid;
      dir.gid = ctx.gid;
      dir.nlink = 2;
      dir.mtime_ns = dir.ctime_ns = txn->now_ns;
      uint64_t child = txn->AllocateInode();
      WEFT_RETURN_IF_ERROR(txn->PutInode(child, dir));
      WEFT_RETURN_IF_ERROR(txn->PutDirent(ino, seg, Dirent{child, FileType::kDirectory}));
      ino = child;
      continue;
    }
    if (d->value.type != FileType::kDirectory) {
      return NotADirectory(JoinPath(walked) + ": not a directory");
    }
    ino = d->value.ino;
  }
  return ino;
}

Result<FileInfo> LocalVolume::StageFile(Txn* t, const RequestContext& ctx, const std::string& path,
                                        const WriteOptions& opts, Manifest manifest) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  WEFT_ASSIGN_OR_RETURN(uint64_t parent,
                        ResolveDirForWrite(t, pn.parent, opts.create_parents, ctx));
  WEFT_ASSIGN_OR_RETURN(auto existing, t->GetDirent(parent, pn.name));
  if (existing && existing->value.type == FileType::kDirectory) {
    return IsADirectory(path + ": is a directory");
  }
  std::optional<schema::Current<Inode>> current;
  if (existing && existing->value.type == FileType::kFile) {
    WEFT_ASSIGN_OR_RETURN(current, t->GetInode(existing->value.ino));
  }
  if (opts.if_version) {
    // "" means "must not exist": a symlink at the path is something too.
    std::string have = current
                           ? schema::MakeVersionId(existing->value.ino, current->value.content_seq)
                       : existing ? "(a symbolic link)"
                                  : "";
    if (have != *opts.if_version) {
      return FailedPrecondition(path + ": current version is '" + have + "', expected '" +
                                *opts.if_version + "'");
    }
  }
  uint64_t ino;
  Inode inode;
  if (current) {
    ino = existing->value.ino;
    inode = current->value;
  } else {
    // A symlink or a special file.
    if (existing) WEFT_RETURN_IF_ERROR(t->DropName(existing->value.ino));
    ino = t->AllocateInode();
    inode.type = FileType::kFile;
    inode.mode = opts.mode & 07777;
    inode.uid = ctx.uid;
    inode.gid = ctx.gid;
    WEFT_RETURN_IF_ERROR(t->PutDirent(parent, pn.name, Dirent{ino, FileType::kFile}));
  }
  // An atime that followed the old content's mtime stays where it was: writes do not access.
  if (current && !inode.atime_ns) inode.atime_ns = inode.mtime_ns;
  inode.size = manifest.size;
  inode.mtime_ns = opts.mtime_ns.value_or(t->now_ns);
  inode.ctime_ns = t->now_ns;
  inode.content_seq = t->seq;
  inode.etag = manifest.etag;
  inode.chunks = manifest.chunks.size();
  inode.attributes = opts.attributes;
  manifest.mtime_ns = inode.mtime_ns;
  manifest.attributes = opts.attributes;
  WEFT_RETURN_IF_ERROR(t->PutInode(ino, inode));
  t->reader.Put(schema::ManifestKey(ino, t->seq), schema::EncodeManifest(manifest));
  t->changes.push_back(Change{t->seq, t->now_ns, "write", path, "", ctx.principal});
  return MakeFileInfo(path, ino, inode);
}

Result<std::vector<FileInfo>> LocalVolume::CommitFiles(const RequestContext& ctx,
                                                       const std::vector<PreparedFile>& files) {
  std::vector<FileInfo> out;
  if (files.empty()) return out;
  Status s = Mutate(ctx, "write", files[0].path, "", [&](Txn* t) -> Status {
    for (size_t i = 0; i < files.size(); ++i) {
      if (i > 0) t->AdvanceSequence();
      WEFT_ASSIGN_OR_RETURN(FileInfo info,
                            StageFile(t, ctx, files[i].path, files[i].opts, files[i].manifest));
      out.push_back(std::move(info));
    }
    return OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<FileInfo>> LocalVolume::CommitAll(
    const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) {
  std::vector<PreparedFile> files;
  files.reserve(writers.size());
  for (const auto& w : writers) {
    auto* local = dynamic_cast<LocalFileWriter*>(w.get());
    if (local == nullptr || !local->BelongsTo(this)) {
      return InvalidArgument("CommitAll takes writers opened on this volume");
    }
    WEFT_ASSIGN_OR_RETURN(PreparedFile file, local->Prepare());
    files.push_back(std::move(file));
  }
  WEFT_RETURN_IF_ERROR(FlushChunks());
  // `writers` keep their chunks referenced until they are destroyed, after the commit.
  return CommitFiles(ctx, files);
}

Result<FileInfo> LocalVolume::InfoOfLive(const std::string& path) {
  return Stat(RequestContext{}, path, {});
}

Result<FileInfo> LocalVolume::Mkdir(const RequestContext& ctx, const std::string& path,
                                    uint32_t mode, bool parents) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  if (segments.empty()) {
    if (parents) return InfoOfLive("/");
    return AlreadyExists("/: the root directory exists");
  }
  std::string name = segments.back();
  std::vector<std::string> parent_segments(segments.begin(), segments.end() - 1);
  Status s = Mutate(ctx, "mkdir", JoinPath(segments), "", [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, parent_segments, parents, ctx));
    WEFT_ASSIGN_OR_RETURN(auto existing, t->GetDirent(parent, name));
    if (existing) {
      if (parents && existing->value.type == FileType::kDirectory) return OkStatus();
      return AlreadyExists(path + ": already exists");
    }
    Inode dir;
    dir.type = FileType::kDirectory;
    dir.mode = mode & 07777;
    dir.uid = ctx.uid;
    dir.gid = ctx.gid;
    dir.nlink = 2;
    dir.mtime_ns = dir.ctime_ns = t->now_ns;
    uint64_t ino = t->AllocateInode();
    WEFT_RETURN_IF_ERROR(t->PutInode(ino, dir));
    return t->PutDirent(parent, name, Dirent{ino, FileType::kDirectory});
  });
  if (!s.ok()) return s;
  return InfoOfLive(JoinPath(segments));
}

Result<FileInfo> LocalVolume::Symlink(const RequestContext& ctx, const std::string& path,
                                      const std::string& target) {
  if (target.empty() || target.size() > kMaxSymlinkTargetBytes ||
      target.find('\0') != std::string::npos) {
    return InvalidArgument(path + ": symlink target must be 1..4096 bytes without NUL");
  }
  Inode link;
  link.type = FileType::kSymlink;
  link.mode = 0777;
  link.size = target.size();
  link.symlink_target = target;
  return CreateEntry(ctx, "symlink", path, target, std::move(link));
}

Result<FileInfo> LocalVolume::Mknod(const RequestContext& ctx, const std::string& path,
                                    FileType type, uint32_t mode, uint64_t rdev) {
  if (!IsSpecialFile(type)) {
    return InvalidArgument(path + ": mknod makes FIFOs, sockets and devices, not a " +
                           std::string(FileTypeName(type)));
  }
  Inode node;
  node.type = type;
  node.mode = mode & 07777;
  if (type == FileType::kCharDevice || type == FileType::kBlockDevice) node.rdev = rdev;
  return CreateEntry(ctx, "mknod", path, std::string(FileTypeName(type)), std::move(node));
}

Result<FileInfo> LocalVolume::CreateEntry(const RequestContext& ctx, std::string op,
                                          const std::string& path, std::string detail,
                                          Inode inode) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  const std::vector<std::string> segments = pn.Segments();
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  const std::string canonical = JoinPath(segments);
  inode.uid = ctx.uid;
  inode.gid = ctx.gid;
  Status s = Mutate(ctx, std::move(op), canonical, std::move(detail), [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, pn.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto existing, t->GetDirent(parent, pn.name));
    if (existing) return AlreadyExists(path + ": already exists");
    inode.mtime_ns = inode.ctime_ns = t->now_ns;
    uint64_t ino = t->AllocateInode();
    WEFT_RETURN_IF_ERROR(t->PutInode(ino, inode));
    return t->PutDirent(parent, pn.name, Dirent{ino, inode.type});
  });
  if (!s.ok()) return s;
  return InfoOfLive(canonical);
}

Status LocalVolume::Rename(const RequestContext& ctx, const std::string& from,
                           const std::string& to) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName src, SplitParent(from));
  WEFT_ASSIGN_OR_RETURN(ParentAndName dst, SplitParent(to));
  const std::vector<std::string> from_segs = src.Segments();
  const std::vector<std::string> to_segs = dst.Segments();
  WEFT_RETURN_IF_ERROR(RejectReserved(from_segs, from));
  WEFT_RETURN_IF_ERROR(RejectReserved(to_segs, to));
  if (from_segs == to_segs) {
    // Nothing moves, but like rename(2) it still fails if the source does not exist.
    return Stat(ctx, from, {}).status();
  }
  if (to_segs.size() > from_segs.size() &&
      std::equal(from_segs.begin(), from_segs.end(), to_segs.begin())) {
    return InvalidArgument("cannot move " + from + " into itself (" + to + ")");
  }
  return Mutate(ctx, "rename", JoinPath(from_segs), JoinPath(to_segs), [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(uint64_t src_parent, ResolveDirForWrite(t, src.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto moving, t->GetDirent(src_parent, src.name));
    if (!moving) return NotFound(from + ": no such file or directory");
    WEFT_ASSIGN_OR_RETURN(uint64_t dst_parent, ResolveDirForWrite(t, dst.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto replaced, t->GetDirent(dst_parent, dst.name));
    // Two names of one file: rename(2) does nothing and succeeds.
    if (replaced && replaced->value.ino == moving->value.ino) return OkStatus();
    if (replaced) {
      bool src_dir = moving->value.type == FileType::kDirectory;
      bool dst_dir = replaced->value.type == FileType::kDirectory;
      if (src_dir && !dst_dir) return NotADirectory(to + ": not a directory");
      if (!src_dir && dst_dir) return IsADirectory(to + ": is a directory");
      if (dst_dir) {
        auto it = kv_->NewIterator();
        std::string prefix = schema::DirentPrefix(replaced->value.ino);
        it->Seek(prefix);
        if (it->Valid() && it->key().starts_with(prefix)) {
          return NotEmpty(to + ": directory not empty");
        }
        WEFT_RETURN_IF_ERROR(it->status());
        WEFT_RETURN_IF_ERROR(t->DeleteInode(replaced->value.ino));
      } else {
        WEFT_RETURN_IF_ERROR(t->DropName(replaced->value.ino));
      }
    }
    WEFT_RETURN_IF_ERROR(t->DeleteDirent(src_parent, src.name));
    WEFT_RETURN_IF_ERROR(t->PutDirent(dst_parent, dst.name, moving->value));
    // As Linux file systems do: a rename changes the moved inode's ctime.
    return t->TouchInode(moving->value.ino, [&](Inode& i) { i.ctime_ns = t->now_ns; });
  });
}

Result<FileInfo> LocalVolume::Link(const RequestContext& ctx, const std::string& existing,
                                   const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName src, SplitParent(existing));
  WEFT_ASSIGN_OR_RETURN(ParentAndName dst, SplitParent(path));
  const std::vector<std::string> src_segs = src.Segments();
  const std::vector<std::string> dst_segs = dst.Segments();
  WEFT_RETURN_IF_ERROR(RejectReserved(src_segs, existing));
  WEFT_RETURN_IF_ERROR(RejectReserved(dst_segs, path));
  const std::string canonical = JoinPath(dst_segs);
  Status s = Mutate(ctx, "link", canonical, JoinPath(src_segs), [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(uint64_t src_parent, ResolveDirForWrite(t, src.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto named, t->GetDirent(src_parent, src.name));
    if (!named) return NotFound(existing + ": no such file or directory");
    if (named->value.type == FileType::kDirectory) {
      return IsADirectory(existing + ": a directory cannot have another name");
    }
    WEFT_ASSIGN_OR_RETURN(uint64_t dst_parent, ResolveDirForWrite(t, dst.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto taken, t->GetDirent(dst_parent, dst.name));
    if (taken) return AlreadyExists(path + ": already exists");
    WEFT_ASSIGN_OR_RETURN(auto inode, t->GetInode(named->value.ino));
    if (inode.value.nlink >= kMaxLinks) {
      return ResourceExhausted(existing + ": already has " + std::to_string(kMaxLinks) + " names");
    }
    WEFT_RETURN_IF_ERROR(t->PutDirent(dst_parent, dst.name, named->value));
    return t->TouchInode(named->value.ino, [&](Inode& i) {
      i.nlink = std::max<uint32_t>(i.nlink, 1) + 1;
      i.ctime_ns = t->now_ns;
    });
  });
  if (!s.ok()) return s;
  return InfoOfLive(canonical);
}

Status LocalVolume::Unlink(const RequestContext& ctx, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  const std::vector<std::string> segments = pn.Segments();
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  return Mutate(ctx, "unlink", JoinPath(segments), "", [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, pn.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto d, t->GetDirent(parent, pn.name));
    if (!d) return NotFound(path + ": no such file or directory");
    if (d->value.type == FileType::kDirectory) return IsADirectory(path + ": is a directory");
    WEFT_RETURN_IF_ERROR(t->DeleteDirent(parent, pn.name));
    return t->DropName(d->value.ino);
  });
}

Status LocalVolume::Rmdir(const RequestContext& ctx, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  if (segments.empty()) return InvalidArgument("cannot remove the root directory");
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  return Mutate(ctx, "rmdir", JoinPath(segments), "", [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, pn.parent, false, ctx));
    WEFT_ASSIGN_OR_RETURN(auto d, t->GetDirent(parent, pn.name));
    if (!d) return NotFound(path + ": no such file or directory");
    if (d->value.type != FileType::kDirectory) return NotADirectory(path + ": not a directory");
    auto it = kv_->NewIterator();
    std::string prefix = schema::DirentPrefix(d->value.ino);
    it->Seek(prefix);
    if (it->Valid() && it->key().starts_with(prefix))
      return NotEmpty(path + ": directory not empty");
    WEFT_RETURN_IF_ERROR(it->status());
    WEFT_RETURN_IF_ERROR(t->DeleteDirent(parent, pn.name));
    return t->DeleteInode(d->value.ino);
  });
}

Result<FileInfo> LocalVolume::SetAttr(const RequestContext& ctx, const std::string& path,
                                      const SetAttrRequest& req) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  if (req.attributes) WEFT_RETURN_IF_ERROR(ValidateAttributes(*req.attributes).WithContext(path));
  std::string canonical = JoinPath(segments);
  FileInfo out;
  Status s = Mutate(ctx, "setattr", canonical, "", [&](Txn* t) -> Status {
    uint64_t ino = schema::kRootInode;
    if (!segments.empty()) {
      std::vector<std::string> parent_segs(segments.begin(), segments.end() - 1);
      WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, parent_segs, false, ctx));
      WEFT_ASSIGN_OR_RETURN(auto d, t->GetDirent(parent, segments.back()));
      if (!d) return NotFound(path + ": no such file or directory");
      ino = d->value.ino;
    }
    WEFT_ASSIGN_OR_RETURN(auto cur, t->GetInode(ino));
    Inode inode = cur.value;
    if (req.if_version && (inode.type != FileType::kFile ||
                           schema::MakeVersionId(ino, inode.content_seq) != *req.if_version)) {
      return FailedPrecondition(path + ": the current version is not " + *req.if_version);
    }
    if (req.attributes) {
      if (inode.type != FileType::kDirectory && inode.type != FileType::kFile) {
        return InvalidArgument(path + ": only directories and file versions have attributes");
      }
      // A file's current version keeps its id: the same content, described anew in a new
      // inode state (snapshots and history keep the old description).
      inode.attributes = *req.attributes;
    }
    if (req.mode) inode.mode = *req.mode & 07777;
    if (req.uid) inode.uid = *req.uid;
    if (req.gid) inode.gid = *req.gid;
    // An atime that followed the mtime stays where it was when only the mtime is set.
    if (req.mtime_ns && !inode.atime_ns) inode.atime_ns = inode.mtime_ns;
    if (req.mtime_ns) inode.mtime_ns = *req.mtime_ns;
    if (req.atime_ns) inode.atime_ns = *req.atime_ns;
    inode.ctime_ns = t->now_ns;
    WEFT_RETURN_IF_ERROR(t->PutInode(ino, inode));
    out = MakeFileInfo(canonical, ino, inode);
    return OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

Result<SnapshotInfo> LocalVolume::CreateSnapshot(const RequestContext& ctx, const std::string& name,
                                                 const std::string& path) {
  WEFT_RETURN_IF_ERROR(ValidateName(name).WithContext("snapshot name"));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  SnapshotInfo info;
  info.name = name;
  info.path = JoinPath(segments);
  Status s = Mutate(ctx, "snapshot", info.path, name, [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(auto existing, t->reader.Get(schema::SnapshotKey(name)));
    if (existing) return AlreadyExists("snapshot '" + name + "' already exists");
    WEFT_ASSIGN_OR_RETURN(uint64_t ino, ResolveDirForWrite(t, segments, false, ctx));
    (void)ino;
    // The snapshot names this transaction's sequence, which changes nothing in the namespace.
    info.sequence = t->seq;
    info.created_ns = t->now_ns;
    t->reader.Put(schema::SnapshotKey(name), schema::EncodeSnapshot(info));
    return OkStatus();
  });
  if (!s.ok()) return s;
  return info;
}

Result<std::vector<SnapshotInfo>> LocalVolume::ListSnapshots(const RequestContext&) {
  auto snap = kv_->NewSnapshot();
  std::vector<SnapshotInfo> out;
  const std::string prefix(1, schema::kSnapshot);
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), prefix, [&](std::string_view key, std::string_view value) -> Status {
        WEFT_ASSIGN_OR_RETURN(SnapshotInfo s,
                              schema::DecodeSnapshot(key.substr(prefix.size()), value));
        out.push_back(std::move(s));
        return OkStatus();
      }));
  return out;
}

Status LocalVolume::DeleteSnapshot(const RequestContext& ctx, const std::string& name) {
  WEFT_RETURN_IF_ERROR(ValidateName(name).WithContext("snapshot name"));
  return Mutate(ctx, "snapshot-delete", "", name, [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(auto existing, t->reader.Get(schema::SnapshotKey(name)));
    if (!existing) return NotFound("snapshot '" + name + "' does not exist");
    t->reader.Delete(schema::SnapshotKey(name));
    return OkStatus();
  });
}

Result<std::vector<VersionInfo>> LocalVolume::ListVersions(const RequestContext&,
                                                           const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  auto snap = kv_->NewSnapshot();
  NamespaceView view(snap.get(), NamespaceView::kLive);
  WEFT_ASSIGN_OR_RETURN(auto parent, view.Resolve(pn.parent, JoinPath(pn.parent)));
  if (parent.inode.type != FileType::kDirectory) {
    return NotADirectory(path + ": parent is not a directory");
  }
  // Which inodes this name pointed to, and when.
  struct Interval {
    uint64_t begin, end;
    Dirent dirent;
    int64_t end_time_ns = 0;
    bool marker_removed = false;  // DeleteVersion removed the delete marker at `end`
  };
  std::vector<Interval> names;
  WEFT_ASSIGN_OR_RETURN(auto cur, snap->Get(schema::DirentKey(parent.ino, pn.name)));
  if (cur) {
    WEFT_ASSIGN_OR_RETURN(auto d, schema::DecodeDirent(*cur));
    names.push_back({d.seq_begin, NamespaceView::kLive, d.value});
  }
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), schema::DirentHistoryNamePrefix(parent.ino, pn.name),
      [&](std::string_view key, std::string_view value) -> Status {
        WEFT_ASSIGN_OR_RETURN(auto h, schema::DecodeDirentHistory(value));
        WEFT_ASSIGN_OR_RETURN(auto removed, snap->Get(schema::RemovedMarkerKeyOf(key)));
        names.push_back({h.seq_begin, h.seq_end, h.value, h.end_time_ns, removed.has_value()});
        return OkStatus();
      }));
  if (names.empty()) return NotFound(path + ": no such file and no retained versions");

  // A version is ordered by when it became this path's content: the later of the name
  // pointing at its inode and the inode holding that content (a file renamed onto the path
  // brings content older than what it replaces).
  std::vector<VersionInfo> out;
  std::map<std::pair<uint64_t, uint64_t>, size_t> index;  // (ino, content_seq) -> out[i]
  std::set<uint64_t> interval_begins;
  for (const Interval& n : names) interval_begins.insert(n.begin);
  for (const Interval& n : names) {
    if (n.end != NamespaceView::kLive && !interval_begins.count(n.end) && !n.marker_removed) {
      VersionInfo marker;
      marker.sequence = n.end;
      marker.mtime_ns = n.end_time_ns;
      marker.is_delete_marker = true;
      marker.version_id = "delete." + std::to_string(n.end);
      out.push_back(marker);
    }
    if (n.dirent.type != FileType::kFile) continue;
    // The inode's states overlapping [n.begin, n.end).
    WEFT_ASSIGN_OR_RETURN(auto states, LoadInodeStates(snap.get(), n.dirent.ino));
    for (const schema::History<Inode>& st : states) {
      if (st.seq_begin >= n.end || st.seq_end <= n.begin) continue;
      if (st.value.type != FileType::kFile) continue;
      const uint64_t appeared = std::max(n.begin, st.seq_begin);
      const bool is_current = n.end == NamespaceView::kLive && st.seq_end == NamespaceView::kLive;
      auto [it, inserted] = index.try_emplace({n.dirent.ino, st.value.content_seq}, out.size());
      if (!inserted) {
        // setattr splits one content version into several inode states, and a file can leave
        // the path and come back: one entry, at its latest appearance.
        VersionInfo& v = out[it->second];
        v.sequence = std::max(v.sequence, appeared);
        v.is_current = v.is_current || is_current;
        continue;
      }
      VersionInfo v;
      v.version_id = schema::MakeVersionId(n.dirent.ino, st.value.content_seq);
      v.size = st.value.size;
      v.etag = st.value.etag;
      v.mtime_ns = st.value.mtime_ns;
      v.sequence = appeared;
      v.is_current = is_current;
      out.push_back(v);
    }
  }
  std::sort(out.begin(), out.end(), [](const VersionInfo& a, const VersionInfo& b) {
    if (a.sequence != b.sequence) return a.sequence > b.sequence;
    return a.is_current && !b.is_current;
  });
  return out;
}

// The records of the removed version go without a trace (no history record for them): a read
// as of a sequence inside its lifetime would find nothing, so none may exist, and none can be
// created later since snapshots name only new sequences.
Status LocalVolume::DeleteVersion(const RequestContext& ctx, const std::string& path,
                                  const std::string& version_id) {
  WEFT_ASSIGN_OR_RETURN(ParentAndName pn, SplitParent(path));
  const std::vector<std::string> segments = pn.Segments();
  WEFT_RETURN_IF_ERROR(RejectReserved(segments, path));
  const std::string canonical = JoinPath(segments);
  if (version_id.starts_with("delete.")) return DeleteMarker(ctx, pn, canonical, version_id);
  uint64_t ino = 0, content_seq = 0;
  if (!schema::ParseVersionId(version_id, &ino, &content_seq)) {
    return InvalidArgument("'" + version_id + "' is not a version id");
  }
  return Mutate(ctx, "delete-version", canonical, version_id, [&](Txn* t) -> Status {
    // Under the commit lock nothing else changes the store, so these reads see exactly what
    // this transaction starts from.
    WEFT_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions, ListVersions(ctx, canonical));
    auto it = std::find_if(versions.begin(), versions.end(), [&](const VersionInfo& v) {
      return v.version_id == version_id && !v.is_delete_marker;
    });
    if (it == versions.end()) return NotFound(canonical + ": no version " + version_id);
    auto kv_snap = kv_->NewSnapshot();
    WEFT_ASSIGN_OR_RETURN(auto states, LoadInodeStates(kv_snap.get(), ino));
    if (!states.empty() && states.front().seq_end == NamespaceView::kLive &&
        states.front().value.nlink > 1) {
      return FailedPrecondition(canonical + ": the file has other names (hard links); its " +
                                "versions belong to all of them");
    }
    std::erase_if(states, [&](const schema::History<Inode>& st) {
      return st.value.type != FileType::kFile || st.value.content_seq != content_seq;
    });
    WEFT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> snapshots, ListSnapshots(ctx));
    bool live_elsewhere = false;
    for (const schema::History<Inode>& st : states) {
      for (const SnapshotInfo& snap : snapshots) {
        if (st.seq_begin <= snap.sequence && snap.sequence < st.seq_end) {
          return FailedPrecondition(canonical + ": version " + version_id +
                                    " is held by snapshot " + snap.name);
        }
      }
      if (st.seq_end == NamespaceView::kLive) {
        live_elsewhere = !it->is_current;
      } else {
        t->reader.Delete(schema::InodeHistoryKey(ino, st.seq_end));
      }
    }
    if (live_elsewhere) {
      return FailedPrecondition(canonical + ": version " + version_id +
                                " is the current content of this file at another path");
    }
    // A non-current version is gone with its history records; GC collects its manifest once
    // no reader pins it.
    if (!it->is_current) return OkStatus();

    // The current version: the next older entry decides what the path becomes. It always
    // follows the current one, which is the newest.
    WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, pn.parent, false, ctx));
    auto next = it + 1;
    if (next == versions.end() || next->is_delete_marker) {
      // Since its entry began the path held only the removed version (or versions already
      // gone), so the entry leaves no history either, and no delete marker appears.
      t->reader.Delete(schema::DirentKey(parent, pn.name));
      t->reader.Delete(schema::InodeKey(ino));
      t->NoteEntriesChanged(parent);
      return OkStatus();
    }
    return RestoreVersion(t, kv_snap.get(), parent, pn.name, canonical, *next, ino);
  });
}

Status LocalVolume::RestoreVersion(Txn* t, KvReader* snap, uint64_t parent, const std::string& name,
                                   const std::string& canonical, const VersionInfo& version,
                                   uint64_t current_ino) {
  uint64_t prev_ino = 0, prev_seq = 0;
  if (!schema::ParseVersionId(version.version_id, &prev_ino, &prev_seq)) {
    return Internal("ListVersions returned a malformed version id " + version.version_id);
  }
  WEFT_ASSIGN_OR_RETURN(auto prev_states, LoadInodeStates(snap, prev_ino));
  const schema::History<Inode>* latest = nullptr;
  bool prev_live = false;
  for (const schema::History<Inode>& st : prev_states) {
    if (st.seq_end == NamespaceView::kLive) {
      prev_live = true;
      continue;
    }
    if (st.value.type != FileType::kFile || st.value.content_seq != prev_seq) continue;
    if (latest == nullptr || st.seq_end > latest->seq_end) latest = &st;
  }
  if (latest == nullptr) {
    return Corruption(canonical + ": version " + version.version_id + " has no inode state");
  }
  // The version becomes current as it was, under its own version id, with the names the file
  // has now: one (it was not live elsewhere), or this inode's (a file with several names is
  // refused before).
  Inode restored = latest->value;
  restored.ctime_ns = t->now_ns;
  restored.nlink = 0;
  if (prev_ino == current_ino) {
    t->reader.Put(schema::InodeKey(prev_ino), schema::EncodeInode(t->seq, restored));
    return OkStatus();
  }
  // It belonged to a file that was replaced by a rename onto this path, or removed from it.
  if (prev_live) {
    return FailedPrecondition(canonical + ": the previous version " + version.version_id +
                              " belongs to a file that now lives at another path");
  }
  if (current_ino != 0) t->reader.Delete(schema::InodeKey(current_ino));
  t->reader.Put(schema::InodeKey(prev_ino), schema::EncodeInode(t->seq, restored));
  // A retired entry names an inode without states; keeping it keeps the list free of a
  // delete marker where none was.
  return t->PutDirent(parent, name, Dirent{prev_ino, FileType::kFile});
}

// A delete marker is the end of one of the name's history records. Removing it hides the
// marker (the record stays: it holds the version before it, and what snapshots read); if it
// was the newest entry, the path was absent, and the version before it is current again.
Status LocalVolume::DeleteMarker(const RequestContext& ctx, const ParentAndName& pn,
                                 const std::string& canonical, const std::string& version_id) {
  return Mutate(ctx, "delete-version", canonical, version_id, [&](Txn* t) -> Status {
    WEFT_ASSIGN_OR_RETURN(std::vector<VersionInfo> versions, ListVersions(ctx, canonical));
    auto it = std::find_if(versions.begin(), versions.end(), [&](const VersionInfo& v) {
      return v.version_id == version_id && v.is_delete_marker;
    });
    if (it == versions.end()) return NotFound(canonical + ": no delete marker " + version_id);
    WEFT_ASSIGN_OR_RETURN(uint64_t parent, ResolveDirForWrite(t, pn.parent, false, ctx));
    t->reader.Put(schema::RemovedMarkerKey(parent, pn.name, it->sequence), "");
    if (it != versions.begin()) return OkStatus();
    auto next = it + 1;
    if (next == versions.end() || next->is_delete_marker) return OkStatus();
    WEFT_ASSIGN_OR_RETURN(auto current, t->GetDirent(parent, pn.name));
    if (current) return OkStatus();  // not absent after all (a directory or symlink)
    auto kv_snap = kv_->NewSnapshot();
    return RestoreVersion(t, kv_snap.get(), parent, pn.name, canonical, *next, 0);
  });
}

Result<std::vector<Change>> LocalVolume::ReadChanges(const RequestContext&, uint64_t after,
                                                     uint32_t limit) {
  auto snap = kv_->NewSnapshot();
  std::vector<Change> out;
  const std::string prefix(1, schema::kFeed);
  auto it = snap->NewIterator();
  for (it->Seek(schema::FeedKey(after + 1));
       it->Valid() && it->key().starts_with(prefix) && out.size() < limit; it->Next()) {
    std::string_view key = it->key();
    if (key.size() != 9) return Corruption("malformed change feed key");
    WEFT_ASSIGN_OR_RETURN(Change c,
                          schema::DecodeChange(GetBigEndian64(key.data() + 1), it->value()));
    out.push_back(std::move(c));
  }
  WEFT_RETURN_IF_ERROR(it->status());
  return out;
}

Result<UsageInfo> LocalVolume::Usage(const RequestContext&) {
  auto snap = kv_->NewSnapshot();
  UsageInfo u;
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(snap.get(), std::string(1, schema::kInode),
                                         [&](std::string_view, std::string_view value) -> Status {
                                           WEFT_ASSIGN_OR_RETURN(auto c,
                                                                 schema::DecodeInode(value));
                                           if (c.value.type == FileType::kFile) {
                                             ++u.files;
                                             u.logical_bytes += c.value.size;
                                           } else if (c.value.type == FileType::kDirectory) {
                                             ++u.directories;
                                           }
                                           return OkStatus();
                                         }));
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(snap.get(), std::string(1, schema::kManifest),
                                         [&](std::string_view, std::string_view value) -> Status {
                                           // The size is the first field after the codec byte; no
                                           // need to decode the chunk list.
                                           ByteReader r(value);
                                           uint8_t version = 0;
                                           uint64_t size = 0;
                                           if (!r.GetByte(&version) || !r.GetVarint64(&size)) {
                                             return Corruption(
                                                 "malformed manifest record in the metadata store");
                                           }
                                           u.referenced_bytes += size;
                                           return OkStatus();
                                         }));
  ChunkStoreStats cs = chunks_->Stats();
  u.unique_bytes = cs.raw_bytes;
  u.stored_bytes = cs.stored_bytes;
  u.pack_bytes = cs.pack_bytes;
  u.metadata_bytes = kv_->ApproximateDiskBytes();
  return u;
}

Result<GcReport> LocalVolume::CollectGarbage(const RequestContext&, const GcOptions& opts) {
  // No commits and no chunk puts while collecting: a chunk becomes reachable only through a
  // commit or a pending writer, and both are frozen here.
  std::lock_guard commit_lock(commit_mu_);
  std::unique_lock gc_lock(gc_mu_);
  GcReport report;
  auto snap = kv_->NewSnapshot();

  std::vector<uint64_t> snapshot_seqs;
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), std::string(1, schema::kSnapshot),
      [&](std::string_view key, std::string_view value) -> Status {
        WEFT_ASSIGN_OR_RETURN(SnapshotInfo s, schema::DecodeSnapshot(key.substr(1), value));
        snapshot_seqs.push_back(s.sequence);
        return OkStatus();
      }));
  std::sort(snapshot_seqs.begin(), snapshot_seqs.end());
  auto held_by_snapshot = [&](uint64_t begin, uint64_t end) {
    auto it = std::lower_bound(snapshot_seqs.begin(), snapshot_seqs.end(), begin);
    return it != snapshot_seqs.end() && *it < end;
  };
  const int64_t cutoff = options_.clock->NowNanos() - opts.keep_noncurrent_ns;
  auto retained = [&](uint64_t begin, uint64_t end, int64_t end_time) {
    return held_by_snapshot(begin, end) || end_time > cutoff;
  };

  WriteBatch batch;
  std::set<std::pair<uint64_t, uint64_t>> live_manifests;  // (ino, content_seq)
  std::unordered_set<uint64_t> keep_all_dirs;              // carry kKeepVersionsAttribute = "all"
  WEFT_RETURN_IF_ERROR(
      ForEachWithPrefix(snap.get(), std::string(1, schema::kInode),
                        [&](std::string_view key, std::string_view value) -> Status {
                          WEFT_ASSIGN_OR_RETURN(auto c, schema::DecodeInode(value));
                          const uint64_t ino = GetBigEndian64(key.data() + 1);
                          if (c.value.type == FileType::kFile) {
                            live_manifests.insert({ino, c.value.content_seq});
                          } else if (c.value.type == FileType::kDirectory) {
                            auto attr = c.value.attributes.find(kKeepVersionsAttribute);
                            if (attr != c.value.attributes.end() && attr->second == "all") {
                              keep_all_dirs.insert(ino);
                            }
                          }
                          return OkStatus();
                        }));
  // Directories below a keep-all directory, and every file that is or was in one of them:
  // their history stays whatever its age. Only volumes that use the attribute pay the scan.
  // Inode numbers are never reused, so one set holds the directories and the files.
  std::unordered_set<uint64_t> keep_all;
  if (!keep_all_dirs.empty()) {
    WEFT_ASSIGN_OR_RETURN(keep_all, KeepAllSubtrees(snap.get(), keep_all_dirs));
  }
  {
    std::lock_guard lock(pinned_mu_);
    for (const auto& [version, readers] : pinned_) live_manifests.insert(version);
  }
  const std::string dirent_history(std::string(1, schema::kHistory) + schema::kDirent);
  const std::string inode_history(std::string(1, schema::kHistory) + schema::kInode);
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), dirent_history, [&](std::string_view key, std::string_view value) -> Status {
        WEFT_ASSIGN_OR_RETURN(auto h, schema::DecodeDirentHistory(value));
        if (key.size() < 10) return Corruption("malformed directory entry history key");
        if (keep_all.count(GetBigEndian64(key.data() + 2))) {
          // A file removed from a keep-all directory keeps its versions as well.
          if (h.value.type == FileType::kFile) keep_all.insert(h.value.ino);
        } else if (!retained(h.seq_begin, h.seq_end, h.end_time_ns)) {
          batch.Delete(key);
          batch.Delete(schema::RemovedMarkerKeyOf(key));  // if its marker was removed
        }
        return OkStatus();
      }));
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), inode_history, [&](std::string_view key, std::string_view value) -> Status {
        WEFT_ASSIGN_OR_RETURN(auto h, schema::DecodeInodeHistory(value));
        if (key.size() < 10) return Corruption("malformed inode history key");
        uint64_t ino = GetBigEndian64(key.data() + 2);
        if (keep_all.count(ino) || retained(h.seq_begin, h.seq_end, h.end_time_ns)) {
          if (h.value.type == FileType::kFile) live_manifests.insert({ino, h.value.content_seq});
        } else {
          batch.Delete(key);
        }
        return OkStatus();
      }));
  std::unordered_set<ChunkId, ChunkIdHash> live_chunks;
  WEFT_RETURN_IF_ERROR(
      ForEachWithPrefix(snap.get(), std::string(1, schema::kManifest),
                        [&](std::string_view key, std::string_view value) -> Status {
                          if (key.size() != 17) return Corruption("malformed manifest key");
                          std::pair<uint64_t, uint64_t> id{GetBigEndian64(key.data() + 1),
                                                           GetBigEndian64(key.data() + 9)};
                          if (!live_manifests.count(id)) {
                            batch.Delete(key);
                            ++report.versions_pruned;
                            return OkStatus();
                          }
                          WEFT_ASSIGN_OR_RETURN(Manifest m, schema::DecodeManifest(value));
                          for (const ChunkRef& c : m.chunks) live_chunks.insert(c.id);
                          return OkStatus();
                        }));
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), std::string(1, schema::kFeed),
      [&](std::string_view key, std::string_view value) -> Status {
        if (key.size() != 9) return Corruption("malformed change feed key");
        WEFT_ASSIGN_OR_RETURN(Change c,
                              schema::DecodeChange(GetBigEndian64(key.data() + 1), value));
        if (c.time_ns <= cutoff) batch.Delete(key);
        return OkStatus();
      }));
  // Metadata first: if we crash after it, unreferenced chunks are merely collected next time.
  if (!batch.empty()) WEFT_RETURN_IF_ERROR(kv_->Write(batch));

  WEFT_ASSIGN_OR_RETURN(SweepStats sweep, chunks_->Sweep([&](const ChunkId& id) {
    if (live_chunks.count(id)) return true;
    std::lock_guard lock(pending_mu_);
    return pending_.count(id) > 0;
  }));
  report.chunks_removed = sweep.chunks_removed;
  report.bytes_reclaimed = sweep.bytes_reclaimed;
  report.packs_rewritten = sweep.packs_rewritten;
  return report;
}

Result<FsckReport> LocalVolume::Fsck(const RequestContext&) {
  auto snap = kv_->NewSnapshot();
  FsckReport report;
  auto problem = [&](std::string p) { report.problems.push_back(std::move(p)); };
  // Inode -> (link count it keeps, link count its entries make).
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> kept_links;

  auto check_manifest = [&](uint64_t ino, uint64_t content_seq, uint64_t size,
                            const std::string& what) -> Status {
    WEFT_ASSIGN_OR_RETURN(auto v, snap->Get(schema::ManifestKey(ino, content_seq)));
    if (!v) {
      problem(what + ": manifest " + schema::MakeVersionId(ino, content_seq) + " is missing");
      return OkStatus();
    }
    auto m = schema::DecodeManifest(*v);
    if (!m.ok()) {
      problem(what + ": " + m.status().ToString());
    } else if (m->size != size) {
      problem(what + ": manifest size " + std::to_string(m->size) + " != inode size " +
              std::to_string(size));
    }
    return OkStatus();
  };
  WEFT_RETURN_IF_ERROR(
      ForEachWithPrefix(snap.get(), std::string(1, schema::kInode),
                        [&](std::string_view key, std::string_view value) -> Status {
                          uint64_t ino = GetBigEndian64(key.data() + 1);
                          auto c = schema::DecodeInode(value);
                          if (!c.ok()) {
                            problem("inode " + std::to_string(ino) + ": " + c.status().ToString());
                            return OkStatus();
                          }
                          if (c->value.type == FileType::kDirectory && c->value.nlink != 0) {
                            kept_links[ino] = {c->value.nlink, 2};
                          } else if (c->value.nlink > 1) {
                            kept_links[ino] = {c->value.nlink, 0};
                          }
                          if (c->value.type != FileType::kFile) return OkStatus();
                          ++report.files_checked;
                          return check_manifest(ino, c->value.content_seq, c->value.size,
                                                "inode " + std::to_string(ino));
                        }));
  // Link counts the volume keeps (directories, files with several names), checked against the
  // entries that name them.
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), std::string(1, schema::kDirent),
      [&](std::string_view key, std::string_view value) -> Status {
        auto d = schema::DecodeDirent(value);
        if (!d.ok()) {
          problem("directory entry " + ToHex(AsBytes(key)) + ": " + d.status().ToString());
          return OkStatus();
        }
        WEFT_ASSIGN_OR_RETURN(auto inode, snap->Get(schema::InodeKey(d->value.ino)));
        if (!inode) {
          problem("directory entry '" + std::string(key.substr(9)) + "' points to missing inode " +
                  std::to_string(d->value.ino));
        }
        if (d->value.type == FileType::kDirectory) {
          auto parent = kept_links.find(GetBigEndian64(key.data() + 1));
          if (parent != kept_links.end()) ++parent->second.second;
        } else if (auto named = kept_links.find(d->value.ino); named != kept_links.end()) {
          ++named->second.second;
        }
        return OkStatus();
      }));
  for (const auto& [ino, links] : kept_links) {
    if (links.first != links.second) {
      problem("inode " + std::to_string(ino) + ": link count " + std::to_string(links.first) +
              ", but " + std::to_string(links.second) + " found");
    }
  }
  WEFT_RETURN_IF_ERROR(ForEachWithPrefix(
      snap.get(), std::string(1, schema::kManifest),
      [&](std::string_view key, std::string_view value) -> Status {
        std::string what = "manifest " + schema::MakeVersionId(GetBigEndian64(key.data() + 1),
                                                               GetBigEndian64(key.data() + 9));
        auto m = schema::DecodeManifest(value);
        if (!m.ok()) {
          problem(what + ": " + m.status().ToString());
          return OkStatus();
        }
        for (const ChunkRef& c : m->chunks) {
          ++report.chunks_checked;
          if (!chunks_->Contains(c.id)) {
            problem(what + ": chunk " + c.id.ToHex() + " is missing from the chunk store");
          }
        }
        return OkStatus();
      }));
  std::vector<ChunkProblem> chunk_problems;
  WEFT_RETURN_IF_ERROR(chunks_->Verify(&chunk_problems));
  for (const ChunkProblem& p : chunk_problems) problem(p.where + ": " + p.status.ToString());
  return report;
}

Result<std::unique_ptr<Volume>> NewLocalVolume(std::shared_ptr<KvStore> kv,
                                               std::shared_ptr<ChunkStore> chunks,
                                               const LocalVolumeOptions& options) {
  WEFT_RETURN_IF_ERROR(options.chunker.Validate());
  auto volume = std::make_unique<LocalVolume>(std::move(kv), std::move(chunks), options);
  WEFT_RETURN_IF_ERROR(volume->Init());
  return std::unique_ptr<Volume>(std::move(volume));
}

Result<std::unique_ptr<Volume>> OpenLocalVolume(const std::string& data_dir,
                                                const LocalVolumeOptions& options) {
  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(data_dir).WithContext("creating data directory"));
  // The metadata store takes the directory's lock first, so a second process stops here.
  RocksKvStoreOptions meta;
  meta.cache_bytes = options.metadata_cache_bytes;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<KvStore> kv, OpenRocksKvStore(data_dir + "/meta", meta));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<ChunkStore> packs,
                        OpenPackChunkStore(fs, data_dir + "/packs", PackStoreOptions{}));
  auto chunks = std::make_shared<CachingChunkStore>(std::move(packs), options.chunk_cache_bytes);
  return NewLocalVolume(std::move(kv), std::move(chunks), options);
}

}  // namespace weft
