// AuthorizedVolume: the one way a front end reaches the namespace. Every Volume call is checked
// against the caller's rules (auth::IdentityStore) and, for a request from another site, the
// residency of the directories it touches, before the inner volume sees it; what the caller may
// not see is left out of listings, snapshot lists and the change feed. Front ends (S3, REST,
// the fabric's wire API, and every protocol after them) take an AuthorizedVolume, never a bare
// Volume, so none can reach the engine without passing here; the checks a protocol makes on top
// of the calls it makes (an S3 bucket setting needs admin, a REST user listing needs admin on
// "/") go through Check, so they too are decided here.
//
// What each call needs (a directory's own rule path ends with '/'; a path under
// /.weft/snapshots/<name>/ is judged by the live path it shows):
//   Stat                      any right on the path, list on its directory, or a right below it
//   ReadDir                   list on the directory; with only rights below it, the entries on
//                             the way to them
//   OpenReader/OpenVersion,
//   ListVersions              read
//   OpenWriter, Symlink, Mknod, Unlink, DeleteVersion, Link and Rename (both paths)   write
//   Mkdir, Rmdir              write on the directory
//   SetAttr                   write; a directory's attributes (bucket settings, residency) admin;
//                             a file's attributes only on the version the check saw
//   CreateSnapshot            admin on its subtree; DeleteSnapshot admin on the snapshot's
//   ListSnapshots             those whose subtree the caller may list (residency aside: a
//                             snapshot's name is not its data)
//   ReadChanges               every record, those the caller may not see with no paths
//   MissingChunks             a signed-in user with some rule
//   Usage, CollectGarbage, Fsck   admin on "/"
// Root at its own site (no site_tags) passes straight through: every rule allows it.
// A path in a staging area (/<top>/.weft-uploads/...) with RequestContext::staging_for set is
// judged by that path instead, which must lie in the same top-level directory: writes need
// write on it, reads write or list (S3 lists uploads under a prefix it may list).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "auth/identity_store.h"
#include "vfs/volume.h"

namespace weft::access {}  // namespace weft::access

namespace weft {
// What an AuthorizedVolume learned in one request (RequestContext::memo): the directories
// found to let the request's site hold them, and the snapshots. A front end that serves one
// request with many calls (a fabric directory answer opens every small file in it) gives the
// request one, so each directory is walked once; within one request that view is current
// enough (the fabric's leases order it against every change).
struct AccessMemo {
  std::mutex mu;
  std::set<std::pair<std::optional<std::string>, std::string>> resident_ok;  // (snapshot, dir)
  std::optional<std::vector<SnapshotInfo>> snapshots;
};
}  // namespace weft

namespace weft::access {

// The directory, in a top-level directory, under which protocols keep their staging areas.
inline constexpr std::string_view kStagingDirName = ".weft-uploads";

class AuthorizedVolume final : public Volume {
 public:
  // Both must outlive this volume.
  AuthorizedVolume(Volume* inner, auth::IdentityStore* identities);

  // A protocol's own decision beyond the calls it makes: OK when ctx.principal has every bit
  // of `needed` (auth::Permission) on `rule_path` exactly (a directory as "/dir/"), and a
  // request from another site may reach it; PermissionDenied (Reason::kAccessDenied) otherwise.
  Status Check(const RequestContext& ctx, uint8_t needed, const std::string& rule_path);
  // As Check, for a path (as read with `opts`) that may name a file or a directory: a rule on
  // either form grants, and a snapshot path is judged by the live path it shows.
  Status CheckNode(const RequestContext& ctx, uint8_t needed, const std::string& path,
                   const ReadOptions& opts = {});
  // Whether the rules give ctx.principal `needed` on `rule_path`, residency aside: for
  // filtering the entries of a directory whose residency was checked, not for a request.
  bool Allows(const RequestContext& ctx, uint8_t needed, const std::string& rule_path);
  // For a request from another site: every directory on the way to `path` (as read with
  // `opts`, and live) must let that site hold it; PermissionDenied naming the one that does
  // not. OK for this site's own requests.
  Status CheckResidency(const RequestContext& ctx, const std::string& path,
                        const ReadOptions& opts = {});
  // The residency tags of directory `dir` when they exclude the request's site (one from
  // another site, RequestContext::site_tags); nullopt when it may hold the directory.
  static std::optional<std::string> ResidentElsewhere(const RequestContext& ctx,
                                                      const FileInfo& dir);

  // The few lookups a protocol answers before it knows who asks: an S3 CORS preflight reads
  // the bucket's rules, and S3 says NoSuchBucket rather than AccessDenied for a bucket that
  // does not exist. `purpose` names why, for the record. Nothing but the directory's own info.
  Result<FileInfo> StatForProtocol(const std::string& path, std::string_view purpose);

  // A protocol records who made a directory it has just made (S3 bucket ownership): sets
  // `attribute` (a protocol's own name, not "weft.*") to ctx.principal, keeping the others.
  // Needs write on the directory, not admin, and works once: FailedPrecondition when the
  // directory names someone already.
  Result<FileInfo> ClaimDirectory(const RequestContext& ctx, const std::string& path,
                                  const std::string& attribute);

  // Authentication stays with the front ends (keys, signatures, tokens).
  auth::IdentityStore& identities() { return *identities_; }

  Result<FileInfo> Stat(const RequestContext& ctx, const std::string& path,
                        const ReadOptions& opts = {}) override;
  Result<ReadDirPage> ReadDir(const RequestContext& ctx, const std::string& path,
                              const ReadDirOptions& opts = {}) override;
  Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx, const std::string& path,
                                                 const ReadOptions& opts = {}) override;
  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& version_id) override;
  Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext& ctx, const std::string& path,
                                                 const WriteOptions& opts = {}) override;
  Result<std::vector<FileInfo>> CommitAll(
      const RequestContext& ctx, std::vector<std::unique_ptr<FileWriter>> writers) override;
  Result<FileInfo> Mkdir(const RequestContext& ctx, const std::string& path, uint32_t mode = 0755,
                         bool parents = false) override;
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
                                      const std::string& path = "/") override;
  Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext& ctx) override;
  Status DeleteSnapshot(const RequestContext& ctx, const std::string& name) override;
  Result<std::vector<VersionInfo>> ListVersions(const RequestContext& ctx,
                                                const std::string& path) override;
  Status DeleteVersion(const RequestContext& ctx, const std::string& path,
                       const std::string& version_id) override;
  Result<std::vector<ChunkId>> MissingChunks(const RequestContext& ctx,
                                             const std::vector<ChunkId>& ids) override;
  Result<std::vector<Change>> ReadChanges(const RequestContext& ctx, uint64_t after,
                                          uint32_t limit) override;
  Result<UsageInfo> Usage(const RequestContext& ctx) override;
  Result<GcReport> CollectGarbage(const RequestContext& ctx, const GcOptions& opts) override;
  Result<FsckReport> Fsck(const RequestContext& ctx) override;

 private:
  // The live path rules judge `path` by (a snapshot path maps to the path it shows).
  Result<std::string> RulePath(const RequestContext& ctx, const std::string& path);
  // The snapshots, from ctx.memo when the request has read them already.
  Result<std::vector<SnapshotInfo>> Snapshots(const RequestContext& ctx);
  // ctx.principal may see that `path` exists (Stat's rule).
  bool MaySee(const RequestContext& ctx, const std::string& rule_path);
  // For a path in a staging area with ctx.staging_for set: the decision (write: a change);
  // nullopt for any other path, which is judged as itself.
  std::optional<Status> StagingDecision(const RequestContext& ctx, const std::string& path,
                                        bool write);
  // Rules (either form when `node`) and residency of `path` as read with `opts`.
  Status Require(const RequestContext& ctx, uint8_t needed, const std::string& path, bool node,
                 const ReadOptions& opts = {});

  Volume* const inner_;
  auth::IdentityStore* const identities_;
};

}  // namespace weft::access
