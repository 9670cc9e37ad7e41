#include "fabric/portal_volume.h"

#include <algorithm>
#include <memory>
#include <set>

#include "fabric/coherent_volume.h"
#include "fabric/internal/portal_files.h"
#include "fabric/internal/portal_paths.h"
#include "fabric/internal/spoke_chunks.h"
#include "fabric/internal/spoke_metadata.h"
#include "vfs/residency.h"

namespace weft::fabric {
namespace {

// A spoke is four parts over one hub client: where local paths live (PortalPaths), the
// leased metadata and its loops (SpokeMetadata), the chunks and their fetching (SpokeChunks),
// and write-through commits (HubCommitter). This class serves the Volume API over them and is
// NeuralCache's DataStore.
class PortalVolumeImpl final : public PortalVolume, private DataStore {
 public:
  PortalVolumeImpl(std::unique_ptr<HubClient> hub, std::shared_ptr<ChunkStore> chunks,
                   PortalVolumeOptions options)
      : hub_(std::move(hub)),
        options_(std::move(options)),
        paths_(options_.portals),
        chunks_(hub_.get(), std::move(chunks), options_.cache_bytes, options_.batch_bytes),
        metadata_(hub_.get(), &chunks_, &paths_,
                  SpokeMetadataOptions{options_.stale_ok, options_.inline_read_bytes,
                                       options_.poll_wait, options_.clock}),
        committer_(hub_.get(), &chunks_,
                   HubCommitterOptions{options_.inline_commit_bytes, options_.batch_bytes},
                   [this](const Affected& a) { metadata_.Invalidate(a); }) {}

  ~PortalVolumeImpl() override {
    neural_.reset();  // its prefetch threads call into this volume
    metadata_.Stop();
  }

  Status Start() {
    AttachRequest req{options_.site, options_.tags, {}};
    for (const Portal& p : paths_.portals()) req.portals.push_back(p.hub_path);
    // A hub that forgot this spoke (it restarted) forgot its leases: nothing cached is safe.
    hub_->SetForgottenHandler([this] { metadata_.Clear(); });
    WEFT_RETURN_IF_ERROR(hub_->Attach(req).status());
    metadata_.Start();
    if (options_.neural_cache) {
      NeuralCacheOptions n = *options_.neural_cache;
      n.clock = options_.clock;
      // The policy's items and the staged prefetches are held; what is left (kTransitPercent)
      // stays free for chunks in transit (reads the policy bypassed, read-ahead), so the
      // store's own LRU can always get back under the limit without running an eviction round
      // per fetched chunk. Every byte not kept is fetched again next epoch: 70 % kept moved
      // 1.29x Belady's bytes in bench/train_mount.py, 80 % 1.20x, at the same utilisation.
      n.capacity_bytes = options_.cache_bytes / 100 * (100 - kStagingPercent - kTransitPercent);
      n.staging_bytes = options_.cache_bytes / 100 * kStagingPercent;
      n.prefetch_threads = std::max<size_t>(1, hub_->connections());
      WEFT_ASSIGN_OR_RETURN(neural_, NeuralCache::Create(std::move(n), this));
    }
    return OkStatus();
  }

  NeuralCache* neural_cache() override { return neural_.get(); }
  uint32_t JobOf(const RequestContext& ctx) const {
    return JobId(ctx.principal.empty() ? "anonymous" : ctx.principal);
  }

  void SetInvalidationHook(std::function<void(const Affected&)> hook) override {
    metadata_.SetInvalidationHook(std::move(hook));
  }

  PortalStats Stats() const override {
    const SpokeMetadataStats m = metadata_.Stats();
    const SpokeChunkStats c = chunks_.Stats();
    PortalStats s;
    s.metadata_hits = m.hits;
    s.metadata_misses = m.misses;
    s.chunk_hits = c.chunk_hits;
    s.chunks_fetched = c.chunks_fetched;
    s.bytes_fetched = c.bytes_fetched;
    s.bytes_uploaded = committer_.bytes_uploaded();
    s.invalidations = m.invalidations;
    s.lease_renewals = m.renewals;
    s.stale_answers = m.stale_answers;
    s.dirs_whole = m.dirs_whole;
    s.dirs_changed = m.dirs_changed;
    s.evictions = c.evictions;
    s.evicted_bytes = c.evicted_bytes;
    s.uncached = c.uncached;
    return s;
  }
  const HubClient& hub() const override { return *hub_; }

  // --- UpstreamLeases, keyed by local directories. Snapshot keys get no lease downstream.

  uint64_t Epoch(const std::string& dir) override {
    auto key = paths_.HubKey(dir);
    return key ? metadata_.Epoch(*key) : 0;
  }

  std::chrono::milliseconds Remaining(const std::string& dir, uint64_t epoch) override {
    auto key = paths_.HubKey(dir);
    if (!key) return std::chrono::milliseconds(0);
    return metadata_.Remaining(*key, epoch);
  }

  // --- DataStore, for NeuralCache ---

  std::vector<Result<std::vector<ChunkId>>> FetchAndHold(
      const std::vector<ItemRef>& items) override {
    std::vector<Result<std::vector<ChunkId>>> out(items.size(), Internal("not fetched"));
    std::vector<std::string> paths;
    for (const ItemRef& item : items) paths.push_back(item.path);
    std::vector<Result<Resolved>> resolved = metadata_.ResolveAll(paths);
    // Then the chunks of every block asked for, in as few requests as the batch size allows.
    std::vector<FetchItem> fetch;
    std::vector<size_t> fetched_for;
    std::vector<std::vector<ChunkId>> ids(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!resolved[i].ok()) {
        out[i] = resolved[i].status();
        continue;
      }
      const CachedLookup& l = resolved[i]->lookup;
      if (!l.status.ok()) {
        out[i] = l.status;
        continue;
      }
      if (l.info.type != FileType::kFile || l.info.version_id != items[i].version) {
        out[i] = FailedPrecondition(items[i].path + ": changed since it was predicted");
        continue;
      }
      FetchItem f{resolved[i]->fetch_path, items[i].version, &l.chunks,
                  BlockChunkIndices(l.chunks, items[i].block)};
      for (size_t c : f.indices) ids[i].push_back(l.chunks[c].id);
      Hold(ids[i]);
      fetch.push_back(std::move(f));
      fetched_for.push_back(i);
    }
    Status fetched = chunks_.FetchMany(fetch);
    for (size_t i : fetched_for) {
      if (fetched.ok()) {
        out[i] = std::move(ids[i]);
      } else {
        Release(ids[i]);
        out[i] = fetched;
      }
    }
    return out;
  }
  void Revalidate(const std::vector<std::string>& paths) override {
    (void)metadata_.ResolveAll(paths);
  }
  void Hold(const std::vector<ChunkId>& ids) override {
    for (const ChunkId& id : ids) chunks_.Hold(id);
  }
  void Release(const std::vector<ChunkId>& ids) override { chunks_.Release(ids); }
  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    std::vector<FileInfo> out;
    ReadDirOptions opts;
    opts.with_info = true;
    opts.limit = 1000;
    for (bool more = true; more;) {
      WEFT_ASSIGN_OR_RETURN(ReadDirPage page, ReadDir(RequestContext{}, dir, opts));
      more = page.truncated;
      for (DirEntry& e : page.entries) {
        opts.start_after = e.name;
        if (e.info) out.push_back(std::move(*e.info));
      }
    }
    return out;
  }

  // --- Volume ---

  Result<FileInfo> Stat(const RequestContext&, const std::string& path,
                        const ReadOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return PortalPaths::VirtualInfo(m.local);
    std::optional<CachedLookup> listed;
    if (!opts.snapshot) {
      WEFT_ASSIGN_OR_RETURN(listed, metadata_.StatFromListing(m.hub));
    }
    Resolved r;
    if (listed) {
      r.lookup = std::move(*listed);
    } else {
      WEFT_ASSIGN_OR_RETURN(r, metadata_.Resolve(m, opts.snapshot));
    }
    const CachedLookup& l = r.lookup;
    if (!l.status.ok()) return Status(l.status.code(), m.local + ": " + StripPath(l.status));
    WEFT_RETURN_IF_ERROR(CheckResident(m.local, l.info));
    return Localise(l.info, m.local);
  }

  // The hub refuses a spoke what is resident elsewhere; the spoke refuses it as well, should
  // a restricted directory's info reach it anyway (a hub of an older version, a bug).
  Status CheckResident(const std::string& local, const FileInfo& info) const {
    auto it = info.attributes.find(kResidencyAttribute);
    if (info.type != FileType::kDirectory || it == info.attributes.end() ||
        SiteMayHold(options_.tags, SplitSiteTags(it->second))) {
      return OkStatus();
    }
    return PermissionDenied(Reason::kAccessDenied, local + " is resident to sites tagged '" +
                                                       it->second + "'; this site is not");
  }

  Result<ReadDirPage> ReadDir(const RequestContext&, const std::string& path,
                              const ReadDirOptions& opts) override {
    if (opts.include_removed) {
      return Unimplemented("a spoke lists current names only; removed ones are listed at the hub");
    }
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return paths_.VirtualListing(m.local, opts);
    ReadDirPage page;
    WEFT_ASSIGN_OR_RETURN(Resolved r, metadata_.Resolve(m, opts.snapshot));
    if (r.view) {
      if (!r.lookup.status.ok()) {
        return Status(r.lookup.status.code(), m.local + ": " + StripPath(r.lookup.status));
      }
      if (r.lookup.info.type != FileType::kDirectory) {
        return NotADirectory(m.local + ": not a directory");
      }
      page = SpokeMetadata::ListPinned(*r.view, r.rel, opts);
    } else {
      WEFT_ASSIGN_OR_RETURN(page, metadata_.List(m.hub, opts));
    }
    std::erase_if(page.entries, [&](const DirEntry& e) {
      return e.info && !CheckResident(m.local, *e.info).ok();
    });
    std::vector<FileInfo> files;
    for (DirEntry& e : page.entries) {
      if (!e.info) continue;
      e.info->path = ConcatPath(m.local, "/" + e.name);
      if (neural_ && !opts.snapshot && e.type == FileType::kFile) files.push_back(*e.info);
    }
    if (!files.empty()) neural_->OnListing(m.local, files);
    return page;
  }

  Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx, const std::string& path,
                                                 const ReadOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return IsADirectory(m.local + ": is a directory");
    // A small file's bytes come with its lookup, unless a prefetch is bringing them already
    // (the read then waits for it).
    const bool with_bytes = !neural_ || opts.snapshot || !neural_->Prefetching(m.local);
    WEFT_ASSIGN_OR_RETURN(Resolved r, metadata_.Resolve(m, opts.snapshot, with_bytes));
    CachedLookup& l = r.lookup;
    if (!l.status.ok()) return Status(l.status.code(), m.local + ": " + StripPath(l.status));
    if (l.info.type == FileType::kDirectory) return IsADirectory(m.local + ": is a directory");
    return std::unique_ptr<FileReader>(
        new PortalFileReader(&chunks_, neural_.get(), ReadaheadBytes(), Localise(l.info, m.local),
                             r.fetch_path, std::move(l.chunks), JobOf(ctx)));
  }

  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& version_id) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return IsADirectory(m.local + ": is a directory");
    // A version is immutable: no lease, no cache of its metadata needed beyond the reader.
    WEFT_ASSIGN_OR_RETURN(json reply,
                          hub_->Call("lookup", {{"path", m.hub}, {"version", version_id}}));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    WEFT_ASSIGN_OR_RETURN(std::vector<ChunkRef> chunks, ChunksFromJson(reply.at("chunks")));
    return std::unique_ptr<FileReader>(
        new PortalFileReader(&chunks_, neural_.get(), ReadaheadBytes(), Localise(info, m.local),
                             m.hub, std::move(chunks), JobOf(ctx)));
  }

  Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext&, const std::string& path,
                                                 const WriteOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir || IsAtOrUnder(m.local, "/.weft")) return NotWritable(m);
    return std::unique_ptr<FileWriter>(
        new PortalFileWriter(&committer_, &chunks_, options_.chunker, m.local, m.hub, opts));
  }

  Result<std::vector<FileInfo>> CommitAll(
      const RequestContext&, std::vector<std::unique_ptr<FileWriter>> writers) override {
    if (writers.size() == 1) {
      WEFT_ASSIGN_OR_RETURN(FileInfo info, writers[0]->Commit());
      return std::vector<FileInfo>{info};
    }
    // A hub commit is one file; committing several atomically needs a batch call.
    return Unimplemented("a spoke commits one file at a time; commit each writer");
  }

  Result<FileInfo> Mkdir(const RequestContext&, const std::string& path, uint32_t mode,
                         bool parents) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) {
      if (parents) return PortalPaths::VirtualInfo(m.local);
      return AlreadyExists(m.local + ": exists");
    }
    WEFT_ASSIGN_OR_RETURN(
        json reply,
        Forward({{"op", "mkdir"}, {"path", m.hub}, {"mode", mode}, {"parents", parents}},
                AffectedByWrite(m.hub, parents)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Result<FileInfo> Symlink(const RequestContext&, const std::string& path,
                           const std::string& target) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    WEFT_ASSIGN_OR_RETURN(json reply,
                          Forward({{"op", "symlink"}, {"path", m.hub}, {"target", target}},
                                  AffectedByWrite(m.hub, false)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Result<FileInfo> Mknod(const RequestContext&, const std::string& path, FileType type,
                         uint32_t mode, uint64_t rdev) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    WEFT_ASSIGN_OR_RETURN(
        json reply,
        Forward(
            {{"op", "mknod"}, {"path", m.hub}, {"type", int(type)}, {"mode", mode}, {"rdev", rdev}},
            AffectedByWrite(m.hub, false)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Status Rename(const RequestContext&, const std::string& from, const std::string& to) override {
    WEFT_ASSIGN_OR_RETURN(Mapped f, paths_.Map(from));
    WEFT_ASSIGN_OR_RETURN(Mapped t, paths_.Map(to));
    if (f.virtual_dir) return NotWritable(f);
    if (t.virtual_dir) return NotWritable(t);
    return Forward({{"op", "rename"}, {"from", f.hub}, {"to", t.hub}},
                   AffectedByRename(f.hub, t.hub))
        .status();
  }

  Result<FileInfo> Link(const RequestContext&, const std::string& existing,
                        const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped e, paths_.Map(existing));
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (e.virtual_dir) return NotWritable(e);
    if (m.virtual_dir) return NotWritable(m);
    Affected affected = AffectedByWrite(m.hub, false);
    affected.dirs.insert(ParentDir(e.hub));
    WEFT_ASSIGN_OR_RETURN(
        json reply, Forward({{"op", "link"}, {"existing", e.hub}, {"path", m.hub}}, affected));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Status Unlink(const RequestContext&, const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    return Forward({{"op", "unlink"}, {"path", m.hub}}, AffectedByWrite(m.hub, false)).status();
  }

  Status Rmdir(const RequestContext&, const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    return Forward({{"op", "rmdir"}, {"path", m.hub}}, AffectedByRemoveDir(m.hub)).status();
  }

  Result<FileInfo> SetAttr(const RequestContext&, const std::string& path,
                           const SetAttrRequest& req) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    json args = {{"op", "setattr"}, {"path", m.hub}};
    if (req.mode) args["mode"] = *req.mode;
    if (req.uid) args["uid"] = *req.uid;
    if (req.gid) args["gid"] = *req.gid;
    if (req.mtime_ns) args["mtime_ns"] = *req.mtime_ns;
    if (req.atime_ns) args["atime_ns"] = *req.atime_ns;
    if (req.attributes) args["attributes"] = *req.attributes;
    if (req.if_version) args["if_version"] = *req.if_version;
    WEFT_ASSIGN_OR_RETURN(json reply, Forward(args, AffectedBySetAttr(m.hub)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Result<SnapshotInfo> CreateSnapshot(const RequestContext&, const std::string& name,
                                      const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    WEFT_ASSIGN_OR_RETURN(json reply,
                          Forward({{"op", "snapshot_create"}, {"name", name}, {"path", m.hub}},
                                  AffectedBySnapshot(name)));
    WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, SnapshotFromJson(reply.at("snapshot")));
    snap.path = paths_.ToLocal(snap.path);
    return snap;
  }

  Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext&) override {
    WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("call", {{"op", "snapshot_list"}}));
    std::vector<SnapshotInfo> out;
    for (const json& j : reply.at("snapshots")) {
      WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, SnapshotFromJson(j));
      snap.path = paths_.ToLocal(snap.path);
      if (!snap.path.empty()) out.push_back(std::move(snap));
    }
    return out;
  }

  Status DeleteSnapshot(const RequestContext&, const std::string& name) override {
    return Forward({{"op", "snapshot_delete"}, {"name", name}}, AffectedBySnapshot(name)).status();
  }

  Result<std::vector<VersionInfo>> ListVersions(const RequestContext&,
                                                const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return IsADirectory(m.local + ": is a directory");
    WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("call", {{"op", "versions"}, {"path", m.hub}}));
    std::vector<VersionInfo> out;
    for (const json& j : reply.at("versions")) {
      WEFT_ASSIGN_OR_RETURN(VersionInfo v, VersionFromJson(j));
      out.push_back(std::move(v));
    }
    return out;
  }

  Status DeleteVersion(const RequestContext&, const std::string& path,
                       const std::string& version_id) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, paths_.Map(path));
    if (m.virtual_dir) return NotWritable(m);
    return Forward({{"op", "delete_version"}, {"path", m.hub}, {"version", version_id}},
                   AffectedByWrite(m.hub, false))
        .status();
  }

  Result<std::vector<ChunkId>> MissingChunks(const RequestContext&,
                                             const std::vector<ChunkId>& ids) override {
    // What matters is what the hub holds: this spoke's commits land there.
    WEFT_ASSIGN_OR_RETURN(std::string raw,
                          hub_->CallFramed("missing", json::object(), EncodeIds(ids)));
    return DecodeIds(raw);
  }

  Result<std::vector<Change>> ReadChanges(const RequestContext&, uint64_t after,
                                          uint32_t limit) override {
    WEFT_ASSIGN_OR_RETURN(
        json reply, hub_->Call("call", {{"op", "changes"}, {"after", after}, {"limit", limit}}));
    std::vector<Change> out;
    for (const json& j : reply.at("changes")) {
      WEFT_ASSIGN_OR_RETURN(Change c, ChangeFromJson(j));
      out.push_back(std::move(c));
    }
    return out;
  }

  Result<UsageInfo> Usage(const RequestContext&) override {
    WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("call", {{"op", "usage"}}));
    return UsageFromJson(reply.at("usage"));
  }

  Result<GcReport> CollectGarbage(const RequestContext&, const GcOptions&) override {
    return Unimplemented("garbage collection runs at the hub: run `weft gc` there");
  }

  Result<FsckReport> Fsck(const RequestContext&) override {
    // A spoke checks what it holds: every cached chunk against its id.
    FsckReport report;
    std::vector<ChunkProblem> problems;
    WEFT_RETURN_IF_ERROR(chunks_.store().Verify(&problems));
    report.chunks_checked = chunks_.store().Stats().chunks;
    for (const ChunkProblem& p : problems)
      report.problems.push_back(p.where + ": " + p.status.message());
    return report;
  }

 private:
  FileInfo Localise(FileInfo info, const std::string& local_path) const {
    info.path = local_path;
    return info;
  }

  // Read-ahead lands in the transit share, unheld: more than half of it would evict itself
  // before it is read.
  uint64_t ReadaheadBytes() const {
    if (options_.cache_bytes == 0) return options_.readahead_bytes;
    return std::min(options_.readahead_bytes, options_.cache_bytes / 100 * kTransitPercent / 2);
  }

  Status NotWritable(const Mapped& m) const {
    return ReadOnly(m.local + ": above this spoke's portals; write inside a portal");
  }

  Result<json> Forward(const json& args, const Affected& affected) {
    Result<json> reply = hub_->Call("call", args);
    // Whatever the outcome, what this spoke knew about these directories may be stale now.
    metadata_.Invalidate(affected);
    return reply;
  }

  static std::string StripPath(const Status& s) {
    // Hub messages name the hub path; keep the reason only ("...: no such file").
    std::string_view m = s.message();
    size_t colon = m.find(": ");
    return std::string(colon == std::string_view::npos ? m : m.substr(colon + 2));
  }

  static constexpr uint64_t kStagingPercent = 15;
  static constexpr uint64_t kTransitPercent = 5;

  std::unique_ptr<HubClient> hub_;
  PortalVolumeOptions options_;
  PortalPaths paths_;
  SpokeChunks chunks_;
  SpokeMetadata metadata_;
  HubCommitter committer_;
  // Set once by Start, before any reader exists; destroyed first (its threads call in here).
  std::unique_ptr<NeuralCache> neural_;
};

}  // namespace

Result<Portal> ParsePortal(const std::string& text) {
  size_t colon = text.find(':');
  Portal p;
  WEFT_ASSIGN_OR_RETURN(p.hub_path, NormalisePath(text.substr(0, colon)));
  if (colon == std::string::npos) {
    p.local_path = p.hub_path;
  } else {
    WEFT_ASSIGN_OR_RETURN(p.local_path, NormalisePath(text.substr(colon + 1)));
  }
  if (IsAtOrUnder(p.local_path, "/.weft")) {
    return InvalidArgument("portal " + text + ": /.weft is reserved for snapshots");
  }
  return p;
}

Result<std::unique_ptr<PortalVolume>> PortalVolume::Open(std::unique_ptr<HubClient> hub,
                                                         std::shared_ptr<ChunkStore> chunks,
                                                         PortalVolumeOptions options) {
  if (options.portals.empty()) return InvalidArgument("a spoke needs at least one --portal");
  for (size_t i = 0; i < options.portals.size(); ++i) {
    for (size_t j = 0; j < options.portals.size(); ++j) {
      if (i != j && IsAtOrUnder(options.portals[i].local_path, options.portals[j].local_path)) {
        return InvalidArgument("portals " + options.portals[i].local_path + " and " +
                               options.portals[j].local_path + " overlap");
      }
      // One hub directory shown at two places would need every invalidation mapped to both.
      if (i != j && IsAtOrUnder(options.portals[i].hub_path, options.portals[j].hub_path)) {
        return InvalidArgument("portals of hub " + options.portals[i].hub_path + " and " +
                               options.portals[j].hub_path + " overlap");
      }
    }
  }
  auto volume = std::make_unique<PortalVolumeImpl>(std::move(hub), std::move(chunks), options);
  WEFT_RETURN_IF_ERROR(volume->Start());
  return std::unique_ptr<PortalVolume>(std::move(volume));
}

}  // namespace weft::fabric
