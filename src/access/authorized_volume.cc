#include "access/authorized_volume.h"

#include <utility>

#include "vfs/path.h"
#include "vfs/residency.h"

namespace weft::access {

namespace {

using auth::kAdmin;
using auth::kList;
using auth::kRead;
using auth::kWrite;

// "/a/b" -> "/a/b/": how a rule names a directory itself.
std::string DirForm(const std::string& path) {
  return path == "/" ? path : path + "/";
}

// The directory holding `path` ("/" for "/" and for a top-level name).
std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// Root at this site: every rule allows it and no residency applies, so nothing to work out
// (the common case of a single-user hub: its calls pay no path parsing here).
bool Unrestricted(const RequestContext& ctx) {
  return ctx.principal == auth::kRootUser && !ctx.site_tags;
}

Status Denied(const RequestContext& ctx, std::string_view what, const std::string& path) {
  std::string m(std::string_view(ctx.principal).substr(0, 80));
  m += " may not ";
  m += what;
  m += ' ';
  m += std::string_view(path).substr(0, 4096);
  return PermissionDenied(Reason::kAccessDenied, std::move(m));
}

}  // namespace

AuthorizedVolume::AuthorizedVolume(Volume* inner, auth::IdentityStore* identities)
    : inner_(inner), identities_(identities) {}

// ---- Decisions -------------------------------------------------------------------------------

Result<std::vector<SnapshotInfo>> AuthorizedVolume::Snapshots(const RequestContext& ctx) {
  RequestContext system;
  if (ctx.memo == nullptr) return inner_->ListSnapshots(system);
  std::lock_guard lock(ctx.memo->mu);
  if (!ctx.memo->snapshots) {
    WEFT_ASSIGN_OR_RETURN(ctx.memo->snapshots, inner_->ListSnapshots(system));
  }
  return *ctx.memo->snapshots;
}

Result<std::string> AuthorizedVolume::RulePath(const RequestContext& ctx, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  std::string normal = JoinPath(parts);
  if (parts.size() < 3 || parts[0] != ".weft" || parts[1] != "snapshots") return normal;
  // Rules are written for live paths: a snapshot path is judged by the live path it shows.
  WEFT_ASSIGN_OR_RETURN(auto snapshots, Snapshots(ctx));
  for (const SnapshotInfo& snap : snapshots) {
    if (snap.name != parts[2]) continue;
    std::string live = snap.path;
    for (size_t i = 3; i < parts.size(); ++i) live = ChildPath(live, parts[i]);
    return live;
  }
  return NotFound(path + ": no such snapshot");
}

bool AuthorizedVolume::MaySee(const RequestContext& ctx, const std::string& rule_path) {
  if (identities_->Granted(ctx.principal, rule_path) != 0) return true;
  if (rule_path != "/" && identities_->Granted(ctx.principal, DirForm(rule_path)) != 0) return true;
  if ((identities_->Granted(ctx.principal, DirForm(ParentOf(rule_path))) & kList) != 0) {
    return true;
  }
  return identities_->MayTraverse(ctx.principal, rule_path);
}

Status AuthorizedVolume::CheckResidency(const RequestContext& ctx, const std::string& path,
                                        const ReadOptions& opts) {
  if (!ctx.site_tags) return OkStatus();
  // The path as read, and its live counterpart: a snapshot keeps the attributes of the
  // directories it covers, but a restriction set on an ancestor above it lives only in the
  // live tree.
  std::vector<std::pair<std::string, ReadOptions>> views = {{path, opts}};
  WEFT_ASSIGN_OR_RETURN(std::string live, RulePath(ctx, path));
  if (live != path || opts.snapshot) views.push_back({live, ReadOptions{}});
  RequestContext system;
  for (const auto& [view, view_opts] : views) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(view));
    std::string prefix = "/";
    for (size_t i = 0;; ++i) {
      const std::pair<std::optional<std::string>, std::string> memo_key{view_opts.snapshot, prefix};
      bool known_ok = false;
      if (ctx.memo != nullptr) {
        std::lock_guard lock(ctx.memo->mu);
        known_ok = ctx.memo->resident_ok.contains(memo_key);
      }
      if (!known_ok) {
        Result<FileInfo> info = inner_->Stat(system, prefix, view_opts);
        if (!info.ok() || info->type != FileType::kDirectory) break;
        if (std::optional<std::string> tags = ResidentElsewhere(ctx, *info)) {
          return PermissionDenied(Reason::kAccessDenied, prefix + " is resident to sites tagged '" +
                                                             *tags + "'; site '" + ctx.site +
                                                             "' is not");
        }
        if (ctx.memo != nullptr) {
          std::lock_guard lock(ctx.memo->mu);
          ctx.memo->resident_ok.insert(memo_key);
        }
      }
      if (i == parts.size()) break;
      prefix = ChildPath(prefix, parts[i]);
    }
  }
  return OkStatus();
}

std::optional<std::string> AuthorizedVolume::ResidentElsewhere(const RequestContext& ctx,
                                                               const FileInfo& dir) {
  if (!ctx.site_tags || dir.type != FileType::kDirectory) return std::nullopt;
  auto it = dir.attributes.find(kResidencyAttribute);
  if (it == dir.attributes.end() || SiteMayHold(*ctx.site_tags, SplitSiteTags(it->second))) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<Status> AuthorizedVolume::StagingDecision(const RequestContext& ctx,
                                                        const std::string& path, bool write) {
  if (ctx.staging_for.empty()) return std::nullopt;
  Result<std::vector<std::string>> parts = SplitPath(path);
  if (!parts.ok() || parts->size() < 2 || (*parts)[1] != kStagingDirName) return std::nullopt;
  const std::string top = "/" + (*parts)[0] + "/";
  if (!ctx.staging_for.starts_with(top)) return Denied(ctx, "stage in", path);
  const uint8_t granted = identities_->Granted(ctx.principal, ctx.staging_for);
  const uint8_t enough = write ? kWrite : kWrite | kList;
  if ((granted & enough) == 0) return Denied(ctx, write ? "write" : "read", ctx.staging_for);
  return CheckResidency(ctx, path, {});
}

Status AuthorizedVolume::Require(const RequestContext& ctx, uint8_t needed, const std::string& path,
                                 bool node, const ReadOptions& opts) {
  if (Unrestricted(ctx)) return OkStatus();
  if (auto staged = StagingDecision(ctx, path, (needed & ~(kRead | kList)) != 0)) return *staged;
  WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
  Status allowed = identities_->Authorize(ctx.principal, needed, rule_path);
  if (!allowed.ok() && node && rule_path != "/") {
    allowed = identities_->Authorize(ctx.principal, needed, DirForm(rule_path));
  }
  WEFT_RETURN_IF_ERROR(allowed);
  return CheckResidency(ctx, path, opts);
}

Status AuthorizedVolume::Check(const RequestContext& ctx, uint8_t needed,
                               const std::string& rule_path) {
  if (Unrestricted(ctx)) return OkStatus();
  WEFT_RETURN_IF_ERROR(identities_->Authorize(ctx.principal, needed, rule_path));
  if (!ctx.site_tags) return OkStatus();
  const bool dir = rule_path.size() > 1 && rule_path.ends_with('/');
  return CheckResidency(ctx, dir ? rule_path.substr(0, rule_path.size() - 1) : rule_path, {});
}

Status AuthorizedVolume::CheckNode(const RequestContext& ctx, uint8_t needed,
                                   const std::string& path, const ReadOptions& opts) {
  return Require(ctx, needed, path, /*node=*/true, opts);
}

bool AuthorizedVolume::Allows(const RequestContext& ctx, uint8_t needed,
                              const std::string& rule_path) {
  return (identities_->Granted(ctx.principal, rule_path) & needed) == needed;
}

Result<FileInfo> AuthorizedVolume::StatForProtocol(const std::string& path,
                                                   std::string_view /*purpose*/) {
  RequestContext system;
  system.protocol = "protocol";
  return inner_->Stat(system, path);
}

Result<FileInfo> AuthorizedVolume::ClaimDirectory(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& attribute) {
  if (attribute.empty() || attribute.starts_with("weft.")) {
    return InvalidArgument("a directory is claimed under a protocol's own attribute, not '" +
                           attribute.substr(0, 64) + "'");
  }
  WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
  WEFT_RETURN_IF_ERROR(Check(ctx, kWrite, DirForm(rule_path)));
  RequestContext system;
  WEFT_ASSIGN_OR_RETURN(FileInfo dir, inner_->Stat(system, path));
  if (dir.type != FileType::kDirectory) return FailedPrecondition(path + " is not a directory");
  if (dir.attributes.contains(attribute)) {
    return FailedPrecondition(path + " is claimed already");
  }
  SetAttrRequest claim;
  claim.attributes = dir.attributes;
  (*claim.attributes)[attribute] = ctx.principal;
  return inner_->SetAttr(ctx, path, claim);
}

// ---- Reads -----------------------------------------------------------------------------------

Result<FileInfo> AuthorizedVolume::Stat(const RequestContext& ctx, const std::string& path,
                                        const ReadOptions& opts) {
  if (Unrestricted(ctx)) return inner_->Stat(ctx, path, opts);
  if (auto staged = StagingDecision(ctx, path, /*write=*/false)) {
    WEFT_RETURN_IF_ERROR(*staged);
    return inner_->Stat(ctx, path, opts);
  }
  WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
  if (!MaySee(ctx, rule_path)) return Denied(ctx, "see", path);
  WEFT_RETURN_IF_ERROR(CheckResidency(ctx, path, opts));
  return inner_->Stat(ctx, path, opts);
}

Result<ReadDirPage> AuthorizedVolume::ReadDir(const RequestContext& ctx, const std::string& path,
                                              const ReadDirOptions& opts) {
  if (Unrestricted(ctx)) return inner_->ReadDir(ctx, path, opts);
  if (auto staged = StagingDecision(ctx, path, /*write=*/false)) {
    WEFT_RETURN_IF_ERROR(*staged);
    return inner_->ReadDir(ctx, path, opts);
  }
  WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
  WEFT_RETURN_IF_ERROR(CheckResidency(ctx, path, ReadOptions{opts.snapshot}));
  if ((identities_->Granted(ctx.principal, DirForm(rule_path)) & kList) != 0) {
    return inner_->ReadDir(ctx, path, opts);
  }
  if (!identities_->MayTraverse(ctx.principal, rule_path)) return Denied(ctx, "list", path);
  // Only the entries on the way to what the caller may reach. Pages are read until one shows
  // something (or the directory ends): an empty page that says "more follows" would leave the
  // caller nowhere to continue from.
  ReadDirOptions page_opts = opts;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(ReadDirPage page, inner_->ReadDir(ctx, path, page_opts));
    std::string last = page.entries.empty() ? std::string() : page.entries.back().name;
    std::erase_if(page.entries,
                  [&](const DirEntry& e) { return !MaySee(ctx, ChildPath(rule_path, e.name)); });
    if (!page.entries.empty() || !page.truncated) return page;
    page_opts.start_after = std::move(last);
  }
}

Result<std::unique_ptr<FileReader>> AuthorizedVolume::OpenReader(const RequestContext& ctx,
                                                                 const std::string& path,
                                                                 const ReadOptions& opts) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kRead, path, /*node=*/true, opts));
  return inner_->OpenReader(ctx, path, opts);
}

Result<std::unique_ptr<FileReader>> AuthorizedVolume::OpenVersion(const RequestContext& ctx,
                                                                  const std::string& path,
                                                                  const std::string& version_id) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kRead, path, /*node=*/true));
  return inner_->OpenVersion(ctx, path, version_id);
}

Result<std::vector<VersionInfo>> AuthorizedVolume::ListVersions(const RequestContext& ctx,
                                                                const std::string& path) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kRead, path, /*node=*/true));
  return inner_->ListVersions(ctx, path);
}

Result<std::vector<SnapshotInfo>> AuthorizedVolume::ListSnapshots(const RequestContext& ctx) {
  WEFT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> all, inner_->ListSnapshots(ctx));
  std::erase_if(all, [&](const SnapshotInfo& s) { return !Allows(ctx, kList, DirForm(s.path)); });
  return all;
}

Result<std::vector<Change>> AuthorizedVolume::ReadChanges(const RequestContext& ctx, uint64_t after,
                                                          uint32_t limit) {
  if (Unrestricted(ctx)) return inner_->ReadChanges(ctx, after, limit);
  WEFT_ASSIGN_OR_RETURN(std::vector<Change> changes, inner_->ReadChanges(ctx, after, limit));
  for (Change& c : changes) {
    // A record keeps its place in the sequence (a reader must be able to read on past it)
    // but not what it names.
    const bool two_paths = c.op == "rename" || c.op == "link";
    bool visible = MaySee(ctx, c.path) && CheckResidency(ctx, c.path, {}).ok();
    if (visible && two_paths)
      visible = MaySee(ctx, c.path2) && CheckResidency(ctx, c.path2, {}).ok();
    if (!visible) c = Change{c.sequence, c.time_ns, "hidden", {}, {}, {}};
  }
  return changes;
}

// ---- Writes ----------------------------------------------------------------------------------

Result<std::unique_ptr<FileWriter>> AuthorizedVolume::OpenWriter(const RequestContext& ctx,
                                                                 const std::string& path,
                                                                 const WriteOptions& opts) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  return inner_->OpenWriter(ctx, path, opts);
}

Result<std::vector<FileInfo>> AuthorizedVolume::CommitAll(
    const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) {
  // Each writer was authorised when OpenWriter made it; only this volume's writers exist here.
  return inner_->CommitAll(ctx, std::move(writers));
}

Result<FileInfo> AuthorizedVolume::Mkdir(const RequestContext& ctx, const std::string& path,
                                         uint32_t mode, bool parents) {
  if (auto staged = StagingDecision(ctx, path, /*write=*/true)) {
    WEFT_RETURN_IF_ERROR(*staged);
    return inner_->Mkdir(ctx, path, mode, parents);
  }
  WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
  WEFT_RETURN_IF_ERROR(Check(ctx, kWrite, DirForm(rule_path)));
  return inner_->Mkdir(ctx, path, mode, parents);
}

Result<FileInfo> AuthorizedVolume::Symlink(const RequestContext& ctx, const std::string& path,
                                           const std::string& target) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  return inner_->Symlink(ctx, path, target);
}

Result<FileInfo> AuthorizedVolume::Mknod(const RequestContext& ctx, const std::string& path,
                                         FileType type, uint32_t mode, uint64_t rdev) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  return inner_->Mknod(ctx, path, type, mode, rdev);
}

Status AuthorizedVolume::Rename(const RequestContext& ctx, const std::string& from,
                                const std::string& to) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, from, /*node=*/true));
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, to, /*node=*/true));
  return inner_->Rename(ctx, from, to);
}

Result<FileInfo> AuthorizedVolume::Link(const RequestContext& ctx, const std::string& existing,
                                        const std::string& path) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, existing, /*node=*/false));
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  return inner_->Link(ctx, existing, path);
}

Status AuthorizedVolume::Unlink(const RequestContext& ctx, const std::string& path) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  return inner_->Unlink(ctx, path);
}

Status AuthorizedVolume::Rmdir(const RequestContext& ctx, const std::string& path) {
  if (auto staged = StagingDecision(ctx, path, /*write=*/true)) {
    WEFT_RETURN_IF_ERROR(*staged);
    return inner_->Rmdir(ctx, path);
  }
  WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
  WEFT_RETURN_IF_ERROR(Check(ctx, kWrite, DirForm(rule_path)));
  return inner_->Rmdir(ctx, path);
}

Result<FileInfo> AuthorizedVolume::SetAttr(const RequestContext& ctx, const std::string& path,
                                           const SetAttrRequest& req) {
  if (Unrestricted(ctx)) return inner_->SetAttr(ctx, path, req);
  if (auto staged = StagingDecision(ctx, path, /*write=*/true)) {
    WEFT_RETURN_IF_ERROR(*staged);
    return inner_->SetAttr(ctx, path, req);
  }
  if (!req.attributes) {
    WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/true));
    return inner_->SetAttr(ctx, path, req);
  }
  // A directory's attributes are its settings (S3 bucket settings, residency): admin. A
  // file's describe its current version (S3 tags): write, and only on the version checked, so
  // that a directory made there meanwhile still needs admin.
  RequestContext system;
  Result<FileInfo> target = inner_->Stat(system, path);
  if (!target.ok() || target->type != FileType::kFile) {
    WEFT_ASSIGN_OR_RETURN(std::string rule_path, RulePath(ctx, path));
    WEFT_RETURN_IF_ERROR(Check(ctx, kAdmin, DirForm(rule_path)));
    return inner_->SetAttr(ctx, path, req);
  }
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  SetAttrRequest pinned = req;
  if (pinned.if_version && *pinned.if_version != target->version_id) {
    return FailedPrecondition(path + ": the current version is not " + *pinned.if_version);
  }
  pinned.if_version = target->version_id;
  return inner_->SetAttr(ctx, path, pinned);
}

Status AuthorizedVolume::DeleteVersion(const RequestContext& ctx, const std::string& path,
                                       const std::string& version_id) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kWrite, path, /*node=*/false));
  return inner_->DeleteVersion(ctx, path, version_id);
}

Result<SnapshotInfo> AuthorizedVolume::CreateSnapshot(const RequestContext& ctx,
                                                      const std::string& name,
                                                      const std::string& path) {
  WEFT_RETURN_IF_ERROR(Require(ctx, kAdmin, path, /*node=*/true));
  return inner_->CreateSnapshot(ctx, name, path);
}

Status AuthorizedVolume::DeleteSnapshot(const RequestContext& ctx, const std::string& name) {
  // Admin on the subtree the snapshot covers; on "/" for a name that is not one, so that the
  // answer tells nobody else which names exist.
  std::string subtree = "/";
  WEFT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> all, Snapshots(ctx));
  for (const SnapshotInfo& s : all) {
    if (s.name == name) subtree = s.path;
  }
  WEFT_RETURN_IF_ERROR(Check(ctx, kAdmin, DirForm(subtree)));
  return inner_->DeleteSnapshot(ctx, name);
}

// ---- The volume as a whole -------------------------------------------------------------------

Result<std::vector<ChunkId>> AuthorizedVolume::MissingChunks(const RequestContext& ctx,
                                                             const std::vector<ChunkId>& ids) {
  // Which chunks exist says something about content: only to a user with some rule.
  if (ctx.principal == auth::kAnonymous || !identities_->MayTraverse(ctx.principal, "/")) {
    return Denied(ctx, "ask which chunks are held at", "/");
  }
  return inner_->MissingChunks(ctx, ids);
}

Result<UsageInfo> AuthorizedVolume::Usage(const RequestContext& ctx) {
  WEFT_RETURN_IF_ERROR(Check(ctx, kAdmin, "/"));
  return inner_->Usage(ctx);
}

Result<GcReport> AuthorizedVolume::CollectGarbage(const RequestContext& ctx,
                                                  const GcOptions& opts) {
  WEFT_RETURN_IF_ERROR(Check(ctx, kAdmin, "/"));
  return inner_->CollectGarbage(ctx, opts);
}

Result<FsckReport> AuthorizedVolume::Fsck(const RequestContext& ctx) {
  WEFT_RETURN_IF_ERROR(Check(ctx, kAdmin, "/"));
  return inner_->Fsck(ctx);
}

}  // namespace weft::access
