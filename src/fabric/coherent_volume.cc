#include "fabric/coherent_volume.h"

#include <mutex>
#include <shared_mutex>

#include "vfs/path.h"

namespace weft::fabric {
namespace {

// The normalised form of `path`, or "" when it is invalid (the engine then rejects the call
// with the precise error, and nothing needs revoking).
std::string Normalise(const std::string& path) {
  auto segments = SplitPath(path);
  return segments.ok() ? JoinPath(*segments) : std::string();
}

void AddAncestors(const std::string& path, Affected* affected) {
  for (std::string p = ParentDir(path);; p = ParentDir(p)) {
    affected->dirs.insert(p);
    if (p == "/") break;
  }
}

// The inodes of `path`'s ancestors (0 = missing), top down, excluding the root.
using AncestorInodes = std::vector<std::pair<std::string, uint64_t>>;

AncestorInodes ReadAncestors(Volume* volume, const std::string& path) {
  AncestorInodes out;
  std::vector<std::string> chain;
  for (std::string p = ParentDir(path); p != "/"; p = ParentDir(p)) chain.push_back(p);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    Result<FileInfo> info = volume->Stat(RequestContext{}, *it);
    out.emplace_back(*it, info.ok() ? info->inode : 0);
  }
  return out;
}

// A mutation that creates missing parents changes the listing of each created directory's
// parent, and only those: revoking every ancestor on every S3 PUT would drop every spoke's
// cache of the bucket and the root on every write. What was missing is read before the
// commit and revoked then; what changed between that read and the commit (a concurrent rmdir
// or rename of an ancestor) is found by reading again afterwards and revoked before the
// mutation returns.
class ParentCreation {
 public:
  ParentCreation(Volume* volume, LeaseTable* leases, std::string path, Affected base)
      : volume_(volume), leases_(leases), path_(std::move(path)), affected_(std::move(base)) {
    before_ = ReadAncestors(volume_, path_);
    for (const auto& [dir, inode] : before_) {
      if (inode == 0) {
        affected_.dirs.insert(ParentDir(dir));
        affected_.dirs.insert(dir);
      }
    }
  }
  const Affected& affected() const { return affected_; }

  // After the commit: revokes what changed meanwhile.
  void Finish() {
    Affected late;
    AncestorInodes after = ReadAncestors(volume_, path_);
    for (size_t i = 0; i < after.size() && i < before_.size(); ++i) {
      const std::string& dir = after[i].first;
      if (after[i].second != before_[i].second && !affected_.dirs.contains(dir)) {
        late.dirs.insert(ParentDir(dir));
        late.dirs.insert(dir);
      }
    }
    if (!late.dirs.empty()) leases_->Revoke(late);
  }

 private:
  Volume* volume_;
  LeaseTable* leases_;
  std::string path_;
  Affected affected_;
  AncestorInodes before_;
};

// A file with several names (hard links) changes under all of them, and the hub does not
// know where the others are: a change to one revokes every lease. Link takes `links`
// exclusively and changes to existing names share it, so no name appears between the check and
// the change it guards.
Affected WithOtherNames(Volume* volume, const std::string& path, Affected affected) {
  Result<FileInfo> info = volume->Stat(RequestContext{}, path, {});
  if (info.ok() && info->type != FileType::kDirectory && info->nlink > 1) {
    affected.subtrees.insert("/");
  }
  return affected;
}

class OtherNames {
 public:
  OtherNames(Volume* volume, std::shared_mutex* links) : volume_(volume), lock_(*links) {}

  Affected Add(const std::string& path, Affected affected) const {
    return WithOtherNames(volume_, path, std::move(affected));
  }

 private:
  Volume* volume_;
  std::shared_lock<std::shared_mutex> lock_;
};

// Hands the inner writer to the engine at commit, after revoking the parent's leases.
class CoherentWriter final : public FileWriter {
 public:
  CoherentWriter(std::unique_ptr<FileWriter> inner, Volume* volume, LeaseTable* leases,
                 std::shared_mutex* links, std::string path, bool create_parents)
      : inner_(std::move(inner)),
        volume_(volume),
        leases_(leases),
        links_(links),
        path_(std::move(path)),
        create_parents_(create_parents) {}

  Status Write(ByteSpan data) override { return inner_->Write(data); }
  Status AppendFrom(FileReader& source) override { return inner_->AppendFrom(source); }
  Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) override {
    return inner_->AppendChunk(chunk, data);
  }
  Status WriteZeros(uint64_t length) override { return inner_->WriteZeros(length); }
  Result<FileInfo> Commit() override {
    OtherNames names(volume_, links_);
    if (!create_parents_) {
      LeaseTable::Revocation revocation =
          leases_->Revoke(names.Add(path_, AffectedByWrite(path_, false)));
      return inner_->Commit();
    }
    ParentCreation creation(volume_, leases_, path_,
                            names.Add(path_, AffectedByWrite(path_, false)));
    Result<FileInfo> info = [&] {
      LeaseTable::Revocation revocation = leases_->Revoke(creation.affected());
      return inner_->Commit();
    }();
    creation.Finish();
    return info;
  }
  void Abort() override { inner_->Abort(); }
  uint64_t bytes_written() const override { return inner_->bytes_written(); }

  const std::string& path() const { return path_; }
  bool create_parents() const { return create_parents_; }
  std::unique_ptr<FileWriter> Release() { return std::move(inner_); }

 private:
  std::unique_ptr<FileWriter> inner_;
  Volume* volume_;
  LeaseTable* leases_;
  std::shared_mutex* links_;
  std::string path_;
  bool create_parents_;
};

class CoherentVolume final : public Volume {
 public:
  CoherentVolume(Volume* inner, LeaseTable* leases) : inner_(inner), leases_(leases) {}

  Result<FileInfo> Stat(const RequestContext& ctx, const std::string& path,
                        const ReadOptions& opts) override {
    return inner_->Stat(ctx, path, opts);
  }
  Result<ReadDirPage> ReadDir(const RequestContext& ctx, const std::string& path,
                              const ReadDirOptions& opts) override {
    return inner_->ReadDir(ctx, path, opts);
  }
  Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx, const std::string& path,
                                                 const ReadOptions& opts) override {
    return inner_->OpenReader(ctx, path, opts);
  }
  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& version_id) override {
    return inner_->OpenVersion(ctx, path, version_id);
  }

  Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext& ctx, const std::string& path,
                                                 const WriteOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(auto inner, inner_->OpenWriter(ctx, path, opts));
    return std::unique_ptr<FileWriter>(new CoherentWriter(
        std::move(inner), inner_, leases_, &links_mu_, Normalise(path), opts.create_parents));
  }

  Result<std::vector<FileInfo>> CommitAll(
      const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) override {
    Affected all;
    OtherNames names(inner_, &links_mu_);
    std::vector<std::unique_ptr<FileWriter>> inner;
    std::vector<ParentCreation> creations;
    for (auto& w : writers) {
      auto* coherent = dynamic_cast<CoherentWriter*>(w.get());
      if (coherent == nullptr) {
        return InvalidArgument("CommitAll: a writer of another volume");
      }
      Affected one = names.Add(coherent->path(), AffectedByWrite(coherent->path(), false));
      if (coherent->create_parents()) {
        creations.emplace_back(inner_, leases_, coherent->path(), one);
        one = creations.back().affected();
      }
      all.dirs.insert(one.dirs.begin(), one.dirs.end());
      all.subtrees.insert(one.subtrees.begin(), one.subtrees.end());
      inner.push_back(coherent->Release());
    }
    Result<std::vector<FileInfo>> infos = [&] {
      LeaseTable::Revocation revocation = leases_->Revoke(all);
      return inner_->CommitAll(ctx, std::move(inner));
    }();
    for (ParentCreation& c : creations) c.Finish();
    return infos;
  }

  Result<FileInfo> Mkdir(const RequestContext& ctx, const std::string& path, uint32_t mode,
                         bool parents) override {
    const std::string normal = Normalise(path);
    if (!parents) {
      auto revocation = leases_->Revoke(AffectedByWrite(normal, false));
      return inner_->Mkdir(ctx, path, mode, parents);
    }
    ParentCreation creation(inner_, leases_, normal, AffectedByWrite(normal, false));
    Result<FileInfo> info = [&] {
      auto revocation = leases_->Revoke(creation.affected());
      return inner_->Mkdir(ctx, path, mode, parents);
    }();
    creation.Finish();
    return info;
  }
  Result<FileInfo> Symlink(const RequestContext& ctx, const std::string& path,
                           const std::string& target) override {
    auto revocation = leases_->Revoke(AffectedByWrite(Normalise(path), false));
    return inner_->Symlink(ctx, path, target);
  }
  Result<FileInfo> Mknod(const RequestContext& ctx, const std::string& path, FileType type,
                         uint32_t mode, uint64_t rdev) override {
    auto revocation = leases_->Revoke(AffectedByWrite(Normalise(path), false));
    return inner_->Mknod(ctx, path, type, mode, rdev);
  }
  Status Rename(const RequestContext& ctx, const std::string& from,
                const std::string& to) override {
    auto affected = [&] {
      return WithOtherNames(
          inner_, to,
          WithOtherNames(inner_, from, AffectedByRename(Normalise(from), Normalise(to))));
    };
    {
      std::shared_lock lock(links_mu_);
      Affected plain = affected();
      if (!plain.subtrees.contains("/")) {
        auto revocation = leases_->Revoke(plain);
        return inner_->Rename(ctx, from, to);
      }
    }
    // A file with several names moved onto a path: a commit to that path would then write
    // a file whose other names it did not check. Exclusive, as a link is.
    std::unique_lock lock(links_mu_);
    auto revocation = leases_->Revoke(affected());
    return inner_->Rename(ctx, from, to);
  }
  Result<FileInfo> Link(const RequestContext& ctx, const std::string& existing,
                        const std::string& path) override {
    std::unique_lock lock(links_mu_);
    // The new name's directory, and the existing names' (their link count and ctime change).
    Affected affected = AffectedByWrite(Normalise(path), false);
    affected.dirs.insert(ParentDir(Normalise(existing)));
    auto revocation = leases_->Revoke(WithOtherNames(inner_, existing, std::move(affected)));
    return inner_->Link(ctx, existing, path);
  }
  Status Unlink(const RequestContext& ctx, const std::string& path) override {
    OtherNames names(inner_, &links_mu_);
    auto revocation = leases_->Revoke(names.Add(path, AffectedByWrite(Normalise(path), false)));
    return inner_->Unlink(ctx, path);
  }
  Status Rmdir(const RequestContext& ctx, const std::string& path) override {
    auto revocation = leases_->Revoke(AffectedByRemoveDir(Normalise(path)));
    return inner_->Rmdir(ctx, path);
  }
  Result<FileInfo> SetAttr(const RequestContext& ctx, const std::string& path,
                           const SetAttrRequest& req) override {
    OtherNames names(inner_, &links_mu_);
    auto revocation = leases_->Revoke(names.Add(path, AffectedBySetAttr(Normalise(path))));
    return inner_->SetAttr(ctx, path, req);
  }
  Result<SnapshotInfo> CreateSnapshot(const RequestContext& ctx, const std::string& name,
                                      const std::string& path) override {
    auto revocation = leases_->Revoke(AffectedBySnapshot(name));
    return inner_->CreateSnapshot(ctx, name, path);
  }
  Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext& ctx) override {
    return inner_->ListSnapshots(ctx);
  }
  Status DeleteSnapshot(const RequestContext& ctx, const std::string& name) override {
    auto revocation = leases_->Revoke(AffectedBySnapshot(name));
    return inner_->DeleteSnapshot(ctx, name);
  }
  Result<std::vector<VersionInfo>> ListVersions(const RequestContext& ctx,
                                                const std::string& path) override {
    return inner_->ListVersions(ctx, path);
  }
  Status DeleteVersion(const RequestContext& ctx, const std::string& path,
                       const std::string& version_id) override {
    // Removing the current version changes the path's entry.
    auto revocation = leases_->Revoke(AffectedByWrite(Normalise(path), false));
    return inner_->DeleteVersion(ctx, path, version_id);
  }
  Result<std::vector<ChunkId>> MissingChunks(const RequestContext& ctx,
                                             const std::vector<ChunkId>& ids) override {
    return inner_->MissingChunks(ctx, ids);
  }
  Result<std::vector<Change>> ReadChanges(const RequestContext& ctx, uint64_t after,
                                          uint32_t limit) override {
    return inner_->ReadChanges(ctx, after, limit);
  }
  Result<UsageInfo> Usage(const RequestContext& ctx) override { return inner_->Usage(ctx); }
  Result<GcReport> CollectGarbage(const RequestContext& ctx, const GcOptions& opts) override {
    // Collection changes no visible content: history it prunes is not what spokes cache.
    return inner_->CollectGarbage(ctx, opts);
  }
  Result<FsckReport> Fsck(const RequestContext& ctx) override { return inner_->Fsck(ctx); }

 private:
  Volume* inner_;
  LeaseTable* leases_;
  std::shared_mutex links_mu_;  // see OtherNames
};

}  // namespace

Affected AffectedByWrite(const std::string& path, bool create_parents) {
  Affected a;
  if (path.empty() || path == "/") return a;
  if (create_parents) {
    AddAncestors(path, &a);
  } else {
    a.dirs.insert(ParentDir(path));
  }
  // The path as a key too: a spoke that looked below it while it was a file (NotADirectory)
  // or absent cached that answer under it.
  a.dirs.insert(path);
  return a;
}

Affected AffectedByRename(const std::string& from, const std::string& to) {
  Affected a;
  for (const std::string& p : {from, to}) {
    if (p.empty() || p == "/") continue;
    a.dirs.insert(ParentDir(p));
    a.subtrees.insert(p);
  }
  return a;
}

Affected AffectedByRemoveDir(const std::string& path) {
  Affected a = AffectedByWrite(path, false);
  if (!path.empty() && path != "/") a.subtrees.insert(path);
  return a;
}

Affected AffectedBySetAttr(const std::string& path) {
  Affected a;
  if (path.empty()) return a;
  a.dirs.insert(ParentDir(path));
  a.dirs.insert(path);
  // A directory's attributes (residency) govern everything below it.
  a.subtrees.insert(path);
  return a;
}

Affected AffectedBySnapshot(const std::string& name) {
  Affected a;
  a.dirs.insert("/.weft/snapshots");
  if (ValidateName(name).ok()) a.subtrees.insert("/.weft/snapshots/" + name);
  return a;
}

std::unique_ptr<Volume> NewCoherentVolume(Volume* inner, LeaseTable* leases) {
  return std::make_unique<CoherentVolume>(inner, leases);
}

}  // namespace weft::fabric
