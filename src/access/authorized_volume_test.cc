// Unit tests of AuthorizedVolume over a LocalVolume on in-memory stores and an IdentityStore
// over MemKvStore. The inner volume records every call made as the test's users, so a denial
// is seen to reach nothing.
#include "access/authorized_volume.h"

#include <gtest/gtest.h>

#include <set>

#include "access/recording_volume.h"
#include "chunk/mem_chunk_store.h"
#include "meta/kv_store.h"
#include "vfs/local_volume.h"
#include "vfs/test_util.h"

namespace weft::access {
namespace {

using testutil::WriteFile;

class AuthorizedVolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = NewLocalVolume(NewMemKvStore(), NewMemChunkStore());
    ASSERT_TRUE(engine.ok());
    engine_ = std::move(engine).value();
    recording_ = std::make_unique<RecordingVolume>(engine_.get());
    auto identities = auth::IdentityStore::Open(NewMemKvStore(), std::string(32, 'k'));
    ASSERT_TRUE(identities.ok());
    identities_ = std::move(identities).value();
    volume_ = std::make_unique<AuthorizedVolume>(recording_.get(), identities_.get());
    for (const char* dir : {"/b", "/b/x", "/b/y", "/c"}) {
      ASSERT_TRUE(engine_->Mkdir(root_, dir).ok());
    }
    for (const char* file : {"/b/x/f", "/b/y/g", "/c/h", "/b/top"}) {
      ASSERT_TRUE(WriteFile(engine_.get(), file, "bytes of " + std::string(file)).ok());
    }
    ASSERT_TRUE(identities_->CreateUser("ann", {}).ok());
  }

  RequestContext As(const std::string& user) {
    RequestContext ctx;
    ctx.principal = user;
    ctx.protocol = "test";
    return ctx;
  }
  void Grant(const std::string& user, const std::string& prefix, const std::string& perms) {
    auto bits = auth::ParsePermissions(perms);
    ASSERT_TRUE(bits.ok());
    ASSERT_TRUE(identities_->AddRule({"", "user:" + user, prefix, *bits}).ok());
  }
  static bool Denied(const Status& s) {
    return s.code() == StatusCode::kPermissionDenied && s.reason() == Reason::kAccessDenied;
  }
  std::vector<std::string> Names(const RequestContext& ctx, const std::string& dir,
                                 uint32_t limit = 1000) {
    std::vector<std::string> names;
    ReadDirOptions opts;
    opts.limit = limit;
    while (true) {
      auto page = volume_->ReadDir(ctx, dir, opts);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) return names;
      for (const DirEntry& e : page->entries) names.push_back(e.name);
      if (!page->truncated) return names;
      opts.start_after = names.back();
    }
  }

  RequestContext root_;
  std::unique_ptr<Volume> engine_;
  std::unique_ptr<RecordingVolume> recording_;
  std::unique_ptr<auth::IdentityStore> identities_;
  std::unique_ptr<AuthorizedVolume> volume_;
};

// Every Volume call, made by a user without a single rule: each is refused (or, for the calls
// that answer with what the caller may see, answers nothing), and none that reads or changes
// the namespace reaches the volume beneath.
TEST_F(AuthorizedVolumeTest, AUserWithoutRulesReachesNothing) {
  RequestContext ann = As("ann");
  const uint64_t before = engine_->ReadChanges(root_, 0, 1000)->size();
  auto version = engine_->Stat(root_, "/b/x/f")->version_id;
  EXPECT_TRUE(Denied(volume_->Stat(ann, "/b/x/f").status()));
  EXPECT_TRUE(Denied(volume_->Stat(ann, "/nothing-here").status()));
  EXPECT_TRUE(Denied(volume_->ReadDir(ann, "/").status()));
  EXPECT_TRUE(Denied(volume_->ReadDir(ann, "/b").status()));
  EXPECT_TRUE(Denied(volume_->OpenReader(ann, "/b/x/f").status()));
  EXPECT_TRUE(Denied(volume_->OpenVersion(ann, "/b/x/f", version).status()));
  EXPECT_TRUE(Denied(volume_->OpenWriter(ann, "/b/new").status()));
  EXPECT_TRUE(Denied(volume_->Mkdir(ann, "/d").status()));
  EXPECT_TRUE(Denied(volume_->Symlink(ann, "/b/l", "x").status()));
  EXPECT_TRUE(Denied(volume_->Mknod(ann, "/b/p", FileType::kFifo, 0644, 0).status()));
  EXPECT_TRUE(Denied(volume_->Rename(ann, "/b/top", "/b/top2")));
  EXPECT_TRUE(Denied(volume_->Link(ann, "/b/top", "/b/top3").status()));
  EXPECT_TRUE(Denied(volume_->Unlink(ann, "/b/top")));
  EXPECT_TRUE(Denied(volume_->Rmdir(ann, "/c")));
  SetAttrRequest chmod;
  chmod.mode = 0600;
  EXPECT_TRUE(Denied(volume_->SetAttr(ann, "/b/top", chmod).status()));
  SetAttrRequest tags;
  tags.attributes = Attributes{{"k", "v"}};
  EXPECT_TRUE(Denied(volume_->SetAttr(ann, "/b/top", tags).status()));
  EXPECT_TRUE(Denied(volume_->SetAttr(ann, "/b", tags).status()));
  EXPECT_TRUE(Denied(volume_->CreateSnapshot(ann, "s", "/").status()));
  ASSERT_TRUE(engine_->CreateSnapshot(root_, "mine", "/b").ok());
  EXPECT_TRUE(Denied(volume_->DeleteSnapshot(ann, "mine")));
  EXPECT_TRUE(Denied(volume_->DeleteSnapshot(ann, "no-such-name")));
  EXPECT_TRUE(Denied(volume_->ListVersions(ann, "/b/x/f").status()));
  EXPECT_TRUE(Denied(volume_->DeleteVersion(ann, "/b/x/f", version)));
  EXPECT_TRUE(Denied(volume_->MissingChunks(ann, {}).status()));
  EXPECT_TRUE(Denied(volume_->Usage(ann).status()));
  EXPECT_TRUE(Denied(volume_->CollectGarbage(ann, {}).status()));
  EXPECT_TRUE(Denied(volume_->Fsck(ann).status()));
  EXPECT_TRUE(Denied(volume_->OpenReader(ann, "/.weft/snapshots/mine/x/f").status()));
  // Lists of what the caller may see: empty, or with every name blanked.
  auto snaps = volume_->ListSnapshots(ann);
  ASSERT_TRUE(snaps.ok());
  EXPECT_TRUE(snaps->empty());
  auto changes = volume_->ReadChanges(ann, 0, 1000);
  ASSERT_TRUE(changes.ok());
  ASSERT_FALSE(changes->empty());
  for (const Change& c : *changes) {
    EXPECT_EQ(c.op, "hidden");
    EXPECT_TRUE(c.path.empty() && c.path2.empty() && c.principal.empty());
  }
  EXPECT_EQ(recording_->calls(), (std::multiset<std::string>{"ListSnapshots", "ReadChanges"}));
  // Nothing changed but the snapshot root made.
  EXPECT_EQ(engine_->ReadChanges(root_, 0, 1000)->size(), before + 1);
}

TEST_F(AuthorizedVolumeTest, ReadersReadAndListButDoNotWrite) {
  Grant("ann", "/b/", "read,list");
  RequestContext ann = As("ann");
  EXPECT_TRUE(volume_->Stat(ann, "/b/x/f").ok());
  EXPECT_TRUE(volume_->OpenReader(ann, "/b/x/f").ok());
  EXPECT_EQ(Names(ann, "/b"), (std::vector<std::string>{"top", "x", "y"}));
  EXPECT_TRUE(volume_->ListVersions(ann, "/b/top").ok());
  EXPECT_TRUE(Denied(volume_->OpenWriter(ann, "/b/new").status()));
  EXPECT_TRUE(Denied(volume_->Unlink(ann, "/b/top")));
  EXPECT_TRUE(Denied(volume_->OpenReader(ann, "/c/h").status()));
  EXPECT_TRUE(Denied(volume_->ReadDir(ann, "/c").status()));
}

// Rights below a directory let a user pass through it and see the names on the way, not the
// rest of it.
TEST_F(AuthorizedVolumeTest, RightsBelowADirectoryShowTheWayThroughIt) {
  Grant("ann", "/b/x/", "read,list");
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(engine_->Mkdir(root_, "/b/a" + std::to_string(100 + i)).ok());
  }
  RequestContext ann = As("ann");
  EXPECT_TRUE(volume_->Stat(ann, "/b").ok());
  EXPECT_TRUE(volume_->Stat(ann, "/b/x").ok());
  EXPECT_TRUE(Denied(volume_->Stat(ann, "/b/y").status()));
  EXPECT_TRUE(Denied(volume_->Stat(ann, "/c").status()));
  EXPECT_EQ(Names(ann, "/"), (std::vector<std::string>{"b"}));
  // Pages of 4 of which only one entry is visible, past 30 hidden ones.
  EXPECT_EQ(Names(ann, "/b", 4), (std::vector<std::string>{"x"}));
  EXPECT_EQ(Names(ann, "/b/x"), (std::vector<std::string>{"f"}));
  EXPECT_TRUE(Denied(volume_->OpenReader(ann, "/b/top").status()));
}

TEST_F(AuthorizedVolumeTest, DirectorySettingsNeedAdminFileTagsNeedWrite) {
  Grant("ann", "/b/", "read,write,list");
  RequestContext ann = As("ann");
  SetAttrRequest attrs;
  attrs.attributes = Attributes{{"k", "v"}};
  EXPECT_TRUE(volume_->SetAttr(ann, "/b/top", attrs).ok());
  EXPECT_TRUE(Denied(volume_->SetAttr(ann, "/b/x", attrs).status()));
  // A tag write names the version it read; another one is refused.
  attrs.if_version = "1.1";
  EXPECT_EQ(volume_->SetAttr(ann, "/b/top", attrs).status().code(),
            StatusCode::kFailedPrecondition);
  Grant("ann", "/b/x/", "admin");
  attrs.if_version.reset();
  EXPECT_TRUE(volume_->SetAttr(ann, "/b/x", attrs).ok());
  EXPECT_TRUE(volume_->Mkdir(ann, "/b/new").ok());
  EXPECT_TRUE(volume_->Rmdir(ann, "/b/new").ok());
}

TEST_F(AuthorizedVolumeTest, SnapshotPathsAreJudgedByTheLivePathTheyShow) {
  ASSERT_TRUE(engine_->CreateSnapshot(root_, "all", "/").ok());
  Grant("ann", "/b/", "read,list");
  RequestContext ann = As("ann");
  EXPECT_TRUE(volume_->OpenReader(ann, "/.weft/snapshots/all/b/x/f").ok());
  EXPECT_TRUE(Denied(volume_->OpenReader(ann, "/.weft/snapshots/all/c/h").status()));
  // Listing the snapshot needs list on the subtree it covers ("/").
  auto snaps = volume_->ListSnapshots(ann);
  ASSERT_TRUE(snaps.ok());
  EXPECT_TRUE(snaps->empty());
  Grant("ann", "/", "list");
  EXPECT_EQ(volume_->ListSnapshots(ann)->size(), 1u);
  EXPECT_TRUE(Denied(volume_->DeleteSnapshot(ann, "all")));
}

TEST_F(AuthorizedVolumeTest, AnotherSitesRequestMeetsResidency) {
  SetAttrRequest eu;
  eu.attributes = Attributes{{kResidencyAttribute, "eu"}};
  ASSERT_TRUE(engine_->SetAttr(root_, "/b/x", eu).ok());
  Grant("ann", "/b/", "read,write,list");
  RequestContext us = As("ann");
  us.site = "us-1";
  us.site_tags = std::vector<std::string>{"us"};
  RequestContext in_eu = us;
  in_eu.site_tags = std::vector<std::string>{"eu", "gpu"};
  EXPECT_TRUE(Denied(volume_->Stat(us, "/b/x/f").status()));
  EXPECT_TRUE(Denied(volume_->OpenReader(us, "/b/x/f").status()));
  EXPECT_TRUE(Denied(volume_->OpenWriter(us, "/b/x/new").status()));
  EXPECT_TRUE(Denied(volume_->Check(us, auth::kRead, "/b/x/f")));
  EXPECT_TRUE(volume_->OpenReader(us, "/b/y/g").ok());
  EXPECT_TRUE(volume_->OpenReader(in_eu, "/b/x/f").ok());
  // The same user at the hub itself is not another site.
  EXPECT_TRUE(volume_->OpenReader(As("ann"), "/b/x/f").ok());
  // The change feed names nothing resident elsewhere.
  auto changes = volume_->ReadChanges(us, 0, 1000);
  ASSERT_TRUE(changes.ok());
  for (const Change& c : *changes) EXPECT_FALSE(c.path.starts_with("/b/x")) << c.path;
}

// A request's memo spares walking a directory twice, never a directory it has not cleared.
TEST_F(AuthorizedVolumeTest, OneRequestsMemoKeepsResidencyExact) {
  SetAttrRequest eu;
  eu.attributes = Attributes{{kResidencyAttribute, "eu"}};
  ASSERT_TRUE(engine_->SetAttr(root_, "/b/x", eu).ok());
  Grant("ann", "/b/", "read,list");
  RequestContext us = As("ann");
  us.site_tags = std::vector<std::string>{"us"};
  us.memo = std::make_shared<AccessMemo>();
  EXPECT_TRUE(volume_->OpenReader(us, "/b/y/g").ok());
  EXPECT_TRUE(volume_->OpenReader(us, "/b/top").ok());
  EXPECT_TRUE(Denied(volume_->OpenReader(us, "/b/x/f").status()));
  EXPECT_TRUE(Denied(volume_->Stat(us, "/b/x").status()));
  ASSERT_TRUE(engine_->CreateSnapshot(root_, "snap", "/b").ok());
  EXPECT_TRUE(volume_->OpenReader(us, "/.weft/snapshots/snap/y/g").ok());
  EXPECT_TRUE(Denied(volume_->OpenReader(us, "/.weft/snapshots/snap/x/f").status()));
  std::lock_guard lock(us.memo->mu);
  EXPECT_TRUE(us.memo->resident_ok.contains({std::nullopt, "/b/y"}));
  EXPECT_FALSE(us.memo->resident_ok.contains({std::nullopt, "/b/x"}));
}

TEST_F(AuthorizedVolumeTest, ChecksOfProtocolActionsUseTheSameRules) {
  Grant("ann", "/b/", "list");
  RequestContext ann = As("ann");
  EXPECT_TRUE(volume_->Check(ann, auth::kList, "/b/").ok());
  EXPECT_TRUE(Denied(volume_->Check(ann, auth::kAdmin, "/b/")));
  EXPECT_TRUE(Denied(volume_->Check(As("anonymous"), auth::kList, "/b/")));
  EXPECT_TRUE(Denied(volume_->Check(As("nobody-by-that-name"), auth::kList, "/b/")));
  EXPECT_TRUE(volume_->Allows(ann, auth::kList, "/b/x/"));
  EXPECT_FALSE(volume_->Allows(ann, auth::kRead, "/b/x/f"));
  // A directory named either way, for CheckNode.
  Grant("ann", "/c/", "read");
  EXPECT_TRUE(volume_->CheckNode(ann, auth::kRead, "/c").ok());
  EXPECT_TRUE(Denied(volume_->Check(ann, auth::kRead, "/c")));
}

}  // namespace
}  // namespace weft::access
