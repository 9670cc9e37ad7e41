#include "fabric/coherent_volume.h"

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

// Hands the inner writer to the engine at commit, after revoking the parent's leases.
class CoherentWriter final : public FileWriter {
 public:
  CoherentWriter(std::unique_ptr<FileWriter> inner, LeaseTable* leases, Affected affected)
      : inner_(std::move(inner)), leases_(leases), affected_(std::move(affected)) {}

  Status Write(ByteSpan data) override { return inner_->Write(data); }
  Status AppendFrom(FileReader& source) override { return inner_->AppendFrom(source); }
  Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) override {
    return inner_->AppendChunk(chunk, data);
  }
  Result<FileInfo> Commit() override {
    LeaseTable::Revocation revocation = leases_->Revoke(affected_);
    return inner_->Commit();
  }
  void Abort() override { inner_->Abort(); }
  uint64_t bytes_written() const override { return inner_->bytes_written(); }

  const Affected& affected() const { return affected_; }
  std::unique_ptr<FileWriter> Release() { return std::move(inner_); }

 private:
  std::unique_ptr<FileWriter> inner_;
  LeaseTable* leases_;
  Affected affected_;
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
        std::move(inner), leases_, AffectedByWrite(Normalise(path), opts.create_parents)));
  }

  Result<std::vector<FileInfo>> CommitAll(
      const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) override {
    Affected all;
    std::vector<std::unique_ptr<FileWriter>> inner;
    for (auto& w : writers) {
      auto* coherent = dynamic_cast<CoherentWriter*>(w.get());
      if (coherent == nullptr) {
        return InvalidArgument("CommitAll: a writer of another volume");
      }
      all.dirs.insert(coherent->affected().dirs.begin(), coherent->affected().dirs.end());
      inner.push_back(coherent->Release());
    }
    LeaseTable::Revocation revocation = leases_->Revoke(all);
    return inner_->CommitAll(ctx, std::move(inner));
  }

  Result<FileInfo> Mkdir(const RequestContext& ctx, const std::string& path, uint32_t mode,
                         bool parents) override {
    auto revocation = leases_->Revoke(AffectedByWrite(Normalise(path), parents));
    return inner_->Mkdir(ctx, path, mode, parents);
  }
  Result<FileInfo> Symlink(const RequestContext& ctx, const std::string& path,
                           const std::string& target) override {
    auto revocation = leases_->Revoke(AffectedByWrite(Normalise(path), false));
    return inner_->Symlink(ctx, path, target);
  }
  Status Rename(const RequestContext& ctx, const std::string& from,
                const std::string& to) override {
    auto revocation = leases_->Revoke(AffectedByRename(Normalise(from), Normalise(to)));
    return inner_->Rename(ctx, from, to);
  }
  Status Unlink(const RequestContext& ctx, const std::string& path) override {
    auto revocation = leases_->Revoke(AffectedByWrite(Normalise(path), false));
    return inner_->Unlink(ctx, path);
  }
  Status Rmdir(const RequestContext& ctx, const std::string& path) override {
    auto revocation = leases_->Revoke(AffectedByRemoveDir(Normalise(path)));
    return inner_->Rmdir(ctx, path);
  }
  Result<FileInfo> SetAttr(const RequestContext& ctx, const std::string& path,
                           const SetAttrRequest& req) override {
    auto revocation = leases_->Revoke(AffectedBySetAttr(Normalise(path)));
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
