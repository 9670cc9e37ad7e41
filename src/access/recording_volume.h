// RecordingVolume: a Volume for tests that forwards every call to a real one and records the
// calls made as anyone but root, which is how AuthorizedVolume's own lookups run. Put under an
// AuthorizedVolume, it shows that a refused request reached nothing beneath it.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "vfs/volume.h"

namespace weft::access {

class RecordingVolume : public Volume {
 public:
  explicit RecordingVolume(Volume* inner) : inner_(inner) {}
  // The calls made so far (by name), and who made them.
  std::multiset<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::set<std::string> callers() {
    std::lock_guard lock(mu_);
    return callers_;
  }

  Result<FileInfo> Stat(const RequestContext& ctx, const std::string& p,
                        const ReadOptions& o) override {
    Record(ctx, "Stat");
    return inner_->Stat(ctx, p, o);
  }
  Result<ReadDirPage> ReadDir(const RequestContext& ctx, const std::string& p,
                              const ReadDirOptions& o) override {
    Record(ctx, "ReadDir");
    return inner_->ReadDir(ctx, p, o);
  }
  Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx, const std::string& p,
                                                 const ReadOptions& o) override {
    Record(ctx, "OpenReader");
    return inner_->OpenReader(ctx, p, o);
  }
  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx, const std::string& p,
                                                  const std::string& v) override {
    Record(ctx, "OpenVersion");
    return inner_->OpenVersion(ctx, p, v);
  }
  Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext& ctx, const std::string& p,
                                                 const WriteOptions& o) override {
    Record(ctx, "OpenWriter");
    return inner_->OpenWriter(ctx, p, o);
  }
  Result<std::vector<FileInfo>> CommitAll(const RequestContext& ctx,
                                          std::vector<std::unique_ptr<FileWriter>> w) override {
    Record(ctx, "CommitAll");
    return inner_->CommitAll(ctx, std::move(w));
  }
  Result<FileInfo> Mkdir(const RequestContext& ctx, const std::string& p, uint32_t m,
                         bool parents) override {
    Record(ctx, "Mkdir");
    return inner_->Mkdir(ctx, p, m, parents);
  }
  Result<FileInfo> Symlink(const RequestContext& ctx, const std::string& p,
                           const std::string& t) override {
    Record(ctx, "Symlink");
    return inner_->Symlink(ctx, p, t);
  }
  Result<FileInfo> Mknod(const RequestContext& ctx, const std::string& p, FileType t, uint32_t m,
                         uint64_t r) override {
    Record(ctx, "Mknod");
    return inner_->Mknod(ctx, p, t, m, r);
  }
  Status Rename(const RequestContext& ctx, const std::string& a, const std::string& b) override {
    Record(ctx, "Rename");
    return inner_->Rename(ctx, a, b);
  }
  Result<FileInfo> Link(const RequestContext& ctx, const std::string& a,
                        const std::string& b) override {
    Record(ctx, "Link");
    return inner_->Link(ctx, a, b);
  }
  Status Unlink(const RequestContext& ctx, const std::string& p) override {
    Record(ctx, "Unlink");
    return inner_->Unlink(ctx, p);
  }
  Status Rmdir(const RequestContext& ctx, const std::string& p) override {
    Record(ctx, "Rmdir");
    return inner_->Rmdir(ctx, p);
  }
  Result<FileInfo> SetAttr(const RequestContext& ctx, const std::string& p,
                           const SetAttrRequest& r) override {
    Record(ctx, "SetAttr");
    return inner_->SetAttr(ctx, p, r);
  }
  Result<SnapshotInfo> CreateSnapshot(const RequestContext& ctx, const std::string& n,
                                      const std::string& p) override {
    Record(ctx, "CreateSnapshot");
    return inner_->CreateSnapshot(ctx, n, p);
  }
  Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext& ctx) override {
    Record(ctx, "ListSnapshots");
    return inner_->ListSnapshots(ctx);
  }
  Status DeleteSnapshot(const RequestContext& ctx, const std::string& n) override {
    Record(ctx, "DeleteSnapshot");
    return inner_->DeleteSnapshot(ctx, n);
  }
  Result<std::vector<VersionInfo>> ListVersions(const RequestContext& ctx,
                                                const std::string& p) override {
    Record(ctx, "ListVersions");
    return inner_->ListVersions(ctx, p);
  }
  Status DeleteVersion(const RequestContext& ctx, const std::string& p,
                       const std::string& v) override {
    Record(ctx, "DeleteVersion");
    return inner_->DeleteVersion(ctx, p, v);
  }
  Result<std::vector<ChunkId>> MissingChunks(const RequestContext& ctx,
                                             const std::vector<ChunkId>& ids) override {
    Record(ctx, "MissingChunks");
    return inner_->MissingChunks(ctx, ids);
  }
  Result<std::vector<Change>> ReadChanges(const RequestContext& ctx, uint64_t after,
                                          uint32_t limit) override {
    Record(ctx, "ReadChanges");
    return inner_->ReadChanges(ctx, after, limit);
  }
  Result<UsageInfo> Usage(const RequestContext& ctx) override {
    Record(ctx, "Usage");
    return inner_->Usage(ctx);
  }
  Result<GcReport> CollectGarbage(const RequestContext& ctx, const GcOptions& o) override {
    Record(ctx, "CollectGarbage");
    return inner_->CollectGarbage(ctx, o);
  }
  Result<FsckReport> Fsck(const RequestContext& ctx) override {
    Record(ctx, "Fsck");
    return inner_->Fsck(ctx);
  }

 private:
  void Record(const RequestContext& ctx, const char* name) {
    if (ctx.principal == "root") return;
    std::lock_guard lock(mu_);
    calls_.insert(name);
    callers_.insert(ctx.principal);
  }
  Volume* inner_;
  std::mutex mu_;
  std::multiset<std::string> calls_;
  std::set<std::string> callers_;
};

}  // namespace weft::access
