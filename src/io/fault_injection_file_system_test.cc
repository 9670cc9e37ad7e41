#include "io/fault_injection_file_system.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>

#include "io/mem_file_system.h"
#include "io/test_file_system.h"

namespace weft {
namespace {

// Runs over both bases: POSIX matters because its WritableFile buffers appends, so a crash
// must flush and then cut what the handle had not synced.
class FaultInjectionTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    base_fs_ = std::make_unique<TestFileSystem>(GetParam(), "/r");
    root_ = base_fs_->root();
    base_ = base_fs_->fs();
    fs_ = std::make_unique<FaultInjectionFileSystem>(base_);
    ASSERT_TRUE(base_->CreateDirs(P("db")).ok());
    ASSERT_TRUE(base_->CreateDirs(P("other")).ok());
  }
  void TearDown() override {
    fs_.reset();
    base_fs_.reset();
  }

  std::string P(std::string_view rel) const { return root_ + "/" + std::string(rel); }

  std::unique_ptr<WritableFile> Open(const std::string& path) {
    auto file = fs_->NewWritableFile(path);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  // Creates `path` with `data`, synced, and its directory synced: fully durable.
  void WriteDurable(const std::string& path, std::string_view data) {
    auto file = Open(path);
    ASSERT_TRUE(file->Append(data).ok());
    ASSERT_TRUE(file->Sync().ok());
    ASSERT_TRUE(file->Close().ok());
    ASSERT_TRUE(fs_->SyncDir(path.substr(0, path.rfind('/'))).ok());
  }

  std::string Read(const std::string& path) {
    auto data = ReadFileToString(fs_.get(), path);
    return data.ok() ? *data : "<" + data.status().ToString() + ">";
  }

  std::unique_ptr<TestFileSystem> base_fs_;
  std::string root_;
  FileSystem* base_ = nullptr;
  std::unique_ptr<FaultInjectionFileSystem> fs_;
};

TEST_P(FaultInjectionTest, UnsyncedTailIsDropped) {
  WriteDurable(P("db/log"), "");
  auto file = Open(P("db/log"));
  ASSERT_TRUE(file->Append("synced|").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Append("lost").ok());
  if (!GetParam()) {  // POSIX still buffers the tail; memory shows it, like a page cache.
    EXPECT_EQ(Read(P("db/log")), "synced|lost");
  }
  EXPECT_EQ(*fs_->SyncedSize(P("db/log")), 7u);

  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/log")), "synced|");
}

TEST_P(FaultInjectionTest, TruncatingReopenIsNotDurable) {
  WriteDurable(P("db/f"), "old durable bytes");
  auto file = Open(P("db/f"));
  ASSERT_TRUE(file->Append("new").ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/f")), "");
}

TEST_P(FaultInjectionTest, NewFileWithoutDirSyncDisappears) {
  auto file = Open(P("db/new"));
  ASSERT_TRUE(file->Append("data").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Close().ok());
  ASSERT_TRUE(fs_->SyncDir(P("other")).ok());  // The wrong directory does not help.
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_FALSE(fs_->Exists(P("db/new")));
}

TEST_P(FaultInjectionTest, NewFileWithDirSyncSurvivesWithSyncedBytes) {
  auto file = Open(P("db/new"));
  ASSERT_TRUE(file->Append("data").ok());
  ASSERT_TRUE(fs_->SyncDir(P("db/")).ok());  // Spelling of the directory does not matter.
  ASSERT_TRUE(file->Append("more").ok());
  ASSERT_TRUE(file->Close().ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_TRUE(fs_->Exists(P("db/new")));
  EXPECT_EQ(Read(P("db/new")), "");  // Entry durable, data never synced.
}

TEST_P(FaultInjectionTest, UnsyncedRemoveIsUndone) {
  WriteDurable(P("db/keep"), "precious");
  ASSERT_TRUE(fs_->RemoveFile(P("db/keep")).ok());
  EXPECT_FALSE(fs_->Exists(P("db/keep")));
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/keep")), "precious");
}

TEST_P(FaultInjectionTest, SyncedRemoveIsDurable) {
  WriteDurable(P("db/gone"), "x");
  ASSERT_TRUE(fs_->RemoveFile(P("db/gone")).ok());
  ASSERT_TRUE(fs_->SyncDir(P("db")).ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_FALSE(fs_->Exists(P("db/gone")));
}

TEST_P(FaultInjectionTest, UnsyncedRenameRestoresBothNames) {
  WriteDurable(P("db/CURRENT"), "v1");
  WriteDurable(P("db/tmp"), "v2");
  ASSERT_TRUE(fs_->Rename(P("db/tmp"), P("db/CURRENT")).ok());
  EXPECT_EQ(Read(P("db/CURRENT")), "v2");
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/CURRENT")), "v1");
  EXPECT_EQ(Read(P("db/tmp")), "v2");
}

TEST_P(FaultInjectionTest, CrossDirectoryRenameNeedsBothDirsSynced) {
  WriteDurable(P("db/a"), "a");
  ASSERT_TRUE(fs_->Rename(P("db/a"), P("other/a")).ok());
  ASSERT_TRUE(fs_->SyncDir(P("other")).ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/a")), "a");
  EXPECT_FALSE(fs_->Exists(P("other/a")));

  ASSERT_TRUE(fs_->Rename(P("db/a"), P("other/a")).ok());
  ASSERT_TRUE(fs_->SyncDir(P("other")).ok());
  ASSERT_TRUE(fs_->SyncDir(P("db")).ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_FALSE(fs_->Exists(P("db/a")));
  EXPECT_EQ(Read(P("other/a")), "a");
}

TEST_P(FaultInjectionTest, SyncedDataFollowsRename) {
  WriteDurable(P("db/f"), "");
  auto file = Open(P("db/f"));
  ASSERT_TRUE(file->Append("abc").ok());
  ASSERT_TRUE(fs_->Rename(P("db/f"), P("db/g")).ok());
  ASSERT_TRUE(fs_->SyncDir(P("db")).ok());
  ASSERT_TRUE(file->Sync().ok());  // The handle syncs the renamed file.
  ASSERT_TRUE(file->Append("def").ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/g")), "abc");
  EXPECT_FALSE(fs_->Exists(P("db/f")));
}

TEST_P(FaultInjectionTest, WriteFileAtomicallyIsAllOrNothing) {
  ASSERT_TRUE(WriteFileAtomically(fs_.get(), P("db/MANIFEST"), "v1").ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/MANIFEST")), "v1");

  // Crash after every prefix of the calls a replacement makes: the file is always v1 or v2
  // and no temp file survives.
  uint64_t before = fs_->MutatingCalls();
  ASSERT_TRUE(WriteFileAtomically(fs_.get(), P("db/MANIFEST"), "v2").ok());
  const int steps = static_cast<int>(fs_->MutatingCalls() - before);
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/MANIFEST")), "v2");
  for (int n = 0; n < steps; ++n) {
    ASSERT_TRUE(WriteFileAtomically(fs_.get(), P("db/MANIFEST"), "v1").ok());
    fs_->FailAfter(n, IoError("disk died"));
    Status s = WriteFileAtomically(fs_.get(), P("db/MANIFEST"), "v2");
    EXPECT_FALSE(s.ok()) << "step " << n;
    fs_->ClearFaults();
    ASSERT_TRUE(fs_->DropUnsyncedData().ok());
    EXPECT_EQ(Read(P("db/MANIFEST")), "v1") << "step " << n;
    EXPECT_EQ(*fs_->ListDir(P("db")), std::vector<std::string>{"MANIFEST"}) << "step " << n;
  }
}

TEST_P(FaultInjectionTest, FailNextCallsFailsExactlyN) {
  fs_->FailNextCalls(2, IoError("boom"));
  EXPECT_EQ(fs_->NewWritableFile(P("db/a")).status(), IoError("boom"));
  EXPECT_EQ(fs_->CreateDirs(P("db/x")), IoError("boom"));
  EXPECT_FALSE(fs_->Exists(P("db/a")));  // Failed calls change nothing.
  EXPECT_FALSE(fs_->Exists(P("db/x")));
  auto file = Open(P("db/a"));
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(fs_->InjectedFailures(), 2u);
  EXPECT_EQ(fs_->MutatingCalls(), 3u);
}

TEST_P(FaultInjectionTest, FailedAppendAndSyncChangeNothing) {
  auto file = Open(P("db/a"));
  ASSERT_TRUE(file->Append("ok").ok());
  fs_->FailNextCalls(2, IoError("eio"));
  EXPECT_EQ(file->Append("bad"), IoError("eio"));
  EXPECT_EQ(file->Sync(), IoError("eio"));
  EXPECT_EQ(file->Size(), 2u);
  EXPECT_EQ(*fs_->SyncedSize(P("db/a")), 0u);
  ASSERT_TRUE(file->Close().ok());
  EXPECT_EQ(Read(P("db/a")), "ok");
}

TEST_P(FaultInjectionTest, FailAfterKeepsFailingUntilCleared) {
  fs_->FailAfter(1, ResourceExhausted("quota"));
  auto file = Open(P("db/a"));
  EXPECT_EQ(file->Append("x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(fs_->SyncDir(P("db")).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(file->Close().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(file->Append("x").code(), StatusCode::kFailedPrecondition);  // Closed regardless.
  fs_->ClearFaults();
  EXPECT_TRUE(fs_->SyncDir(P("db")).ok());
}

TEST_P(FaultInjectionTest, CapacityLimitsTotalBytes) {
  fs_->SetCapacity(10);
  auto a = Open(P("db/a"));
  auto b = Open(P("db/b"));
  ASSERT_TRUE(a->Append("123456").ok());
  Status s = b->Append("12345");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("no space left on device"), std::string::npos);
  EXPECT_NE(s.message().find(P("db/b")), std::string::npos);
  EXPECT_EQ(*fs_->FileSize(P("db/b")), 0u);  // Nothing written.
  ASSERT_TRUE(b->Append("1234").ok());       // Exactly fills it.
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(fs_->RemoveFile(P("db/a")).ok());  // Frees space.
  EXPECT_TRUE(b->Append("123456").ok());
  fs_->ClearFaults();
  EXPECT_TRUE(b->Append(std::string(100, 'x')).ok());
}

TEST_P(FaultInjectionTest, HandlesOpenAtCrashAreDead) {
  auto file = Open(P("db/a"));
  ASSERT_TRUE(file->Append("x").ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(file->Append("y").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(file->Sync().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(file->Close().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs_->Exists(P("db/a")));
}

TEST_P(FaultInjectionTest, ReadsNeverFailByInjection) {
  WriteDurable(P("db/a"), "x");
  fs_->FailNextCalls(100, IoError("boom"));
  EXPECT_EQ(Read(P("db/a")), "x");
  EXPECT_TRUE(fs_->ListDir(P("db")).ok());
  EXPECT_TRUE(fs_->FileSize(P("db/a")).ok());
}

TEST_P(FaultInjectionTest, UntrackedFilesAreDurable) {
  auto file = base_->NewWritableFile(P("db/preexisting"));
  ASSERT_TRUE((*file)->Append("old").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*fs_->SyncedSize(P("db/preexisting")), 3u);
  ASSERT_TRUE(fs_->RemoveFile(P("db/preexisting")).ok());
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  EXPECT_EQ(Read(P("db/preexisting")), "old");
}

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectionTest, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& p) {
                           return p.param ? "OverPosix" : "OverMem";
                         });

}  // namespace
}  // namespace weft
