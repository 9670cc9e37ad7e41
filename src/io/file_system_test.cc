// The FileSystem contract, run against every implementation: POSIX in a temp directory,
// in-memory, and fault injection (with no faults armed) over each.
#include "io/file_system.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

#include "io/fault_injection_file_system.h"
#include "io/internal/path.h"
#include "io/mem_file_system.h"
#include "io/test_file_system.h"

namespace weft {
namespace {

struct Impl {
  std::string name;
  bool posix;
  bool faulty;
};

class FileSystemTest : public testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    base_fs_ = std::make_unique<TestFileSystem>(GetParam().posix, "/t");
    root_ = base_fs_->root();
    base_ = base_fs_->fs();
    fs_ = base_;
    if (GetParam().faulty) {
      faulty_ = std::make_unique<FaultInjectionFileSystem>(base_);
      fs_ = faulty_.get();
    }
  }
  void TearDown() override {
    faulty_.reset();
    base_fs_.reset();
  }

  std::string Path(std::string_view name) const { return root_ + "/" + std::string(name); }

  void Write(const std::string& path, std::string_view data) {
    auto file = fs_->NewWritableFile(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ASSERT_TRUE((*file)->Append(data).ok());
    ASSERT_TRUE((*file)->Close().ok());
  }

  std::string Read(const std::string& path) {
    auto data = ReadFileToString(fs_, path);
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    return data.value_or("<error>");
  }

  std::vector<std::string> List(const std::string& dir) {
    auto names = fs_->ListDir(dir);
    EXPECT_TRUE(names.ok()) << names.status().ToString();
    std::vector<std::string> out = names.value_or({});
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<TestFileSystem> base_fs_;
  std::string root_;
  std::unique_ptr<FaultInjectionFileSystem> faulty_;
  FileSystem* base_ = nullptr;
  FileSystem* fs_ = nullptr;
};

TEST_P(FileSystemTest, WriteThenReadBack) {
  auto file = fs_->NewWritableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("hello ").ok());
  ASSERT_TRUE((*file)->Append("world").ok());
  EXPECT_EQ((*file)->Size(), 11u);
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read(Path("a")), "hello world");
  EXPECT_EQ(*fs_->FileSize(Path("a")), 11u);
  EXPECT_TRUE(fs_->Exists(Path("a")));
}

TEST_P(FileSystemTest, ReadAtClampsAtEndOfFile) {
  Write(Path("a"), "0123456789");
  auto file = fs_->NewRandomAccessFile(Path("a"));
  ASSERT_TRUE(file.ok());
  char scratch[16];
  EXPECT_EQ(*(*file)->ReadAt(2, 3, scratch), "234");
  EXPECT_EQ(*(*file)->ReadAt(8, 5, scratch), "89");
  EXPECT_EQ(*(*file)->ReadAt(10, 5, scratch), "");
  EXPECT_EQ(*(*file)->ReadAt(100, 5, scratch), "");
  EXPECT_EQ(*(*file)->Size(), 10u);
}

TEST_P(FileSystemTest, BinaryAndLargeData) {
  std::string data(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  auto file = fs_->NewWritableFile(Path("big"));
  ASSERT_TRUE(file.ok());
  // Mix small appends (buffered) with one larger than any buffer.
  ASSERT_TRUE((*file)->Append(std::string_view(data).substr(0, 10)).ok());
  ASSERT_TRUE((*file)->Append(std::string_view(data).substr(10, 2 * 1024 * 1024)).ok());
  ASSERT_TRUE((*file)->Append(std::string_view(data).substr(10 + 2 * 1024 * 1024)).ok());
  EXPECT_EQ((*file)->Size(), data.size());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_TRUE(Read(Path("big")) == data);
}

TEST_P(FileSystemTest, NewWritableFileTruncates) {
  Write(Path("a"), "long old contents");
  Write(Path("a"), "new");
  EXPECT_EQ(Read(Path("a")), "new");
}

TEST_P(FileSystemTest, UseAfterCloseFails) {
  auto file = fs_->NewWritableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ((*file)->Append("x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*file)->Sync().code(), StatusCode::kFailedPrecondition);
}

TEST_P(FileSystemTest, MissingFilesAreNotFoundAndNamed) {
  auto open = fs_->NewRandomAccessFile(Path("nope"));
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kNotFound);
  EXPECT_NE(open.status().message().find("nope"), std::string::npos);
  EXPECT_EQ(fs_->FileSize(Path("nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_->RemoveFile(Path("nope")).code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_->Rename(Path("nope"), Path("b")).code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs_->Exists(Path("nope")));
  EXPECT_EQ(ReadFileToString(fs_, Path("nope")).status().code(), StatusCode::kNotFound);
}

TEST_P(FileSystemTest, FileInMissingDirectoryIsNotFound) {
  EXPECT_EQ(fs_->NewWritableFile(Path("no/such/a")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_->ListDir(Path("no")).status().code(), StatusCode::kNotFound);
}

TEST_P(FileSystemTest, CreateDirsAndListDir) {
  ASSERT_TRUE(fs_->CreateDirs(Path("x/y/z")).ok());
  ASSERT_TRUE(fs_->CreateDirs(Path("x/y/z")).ok());  // Idempotent.
  ASSERT_TRUE(fs_->CreateDirs(Path("x/y/")).ok());
  Write(Path("x/f1"), "1");
  Write(Path("x/y/f2"), "2");
  EXPECT_EQ(List(Path("x")), (std::vector<std::string>{"f1", "y"}));
  EXPECT_EQ(List(Path("x/y")), (std::vector<std::string>{"f2", "z"}));
  EXPECT_TRUE(List(Path("x/y/z")).empty());
  EXPECT_TRUE(fs_->Exists(Path("x/y")));
  ASSERT_TRUE(fs_->SyncDir(Path("x/y")).ok());
}

TEST_P(FileSystemTest, DirectoriesAreNotFiles) {
  ASSERT_TRUE(fs_->CreateDirs(Path("d")).ok());
  EXPECT_EQ(fs_->NewRandomAccessFile(Path("d")).status().code(), StatusCode::kIsADirectory);
  EXPECT_EQ(fs_->FileSize(Path("d")).status().code(), StatusCode::kIsADirectory);
  EXPECT_EQ(fs_->NewWritableFile(Path("d")).status().code(), StatusCode::kIsADirectory);
  Write(Path("f"), "x");
  EXPECT_EQ(fs_->CreateDirs(Path("f")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_->CreateDirs(Path("f/g")).code(), StatusCode::kNotADirectory);
  EXPECT_EQ(fs_->ListDir(Path("f")).status().code(), StatusCode::kNotADirectory);
}

TEST_P(FileSystemTest, RenameReplacesAtomically) {
  Write(Path("a"), "new");
  Write(Path("b"), "old");
  ASSERT_TRUE(fs_->Rename(Path("a"), Path("b")).ok());
  EXPECT_FALSE(fs_->Exists(Path("a")));
  EXPECT_EQ(Read(Path("b")), "new");
  EXPECT_EQ(List(root_), std::vector<std::string>{"b"});
  ASSERT_TRUE(fs_->CreateDirs(Path("sub")).ok());
  ASSERT_TRUE(fs_->Rename(Path("b"), Path("sub/c")).ok());
  EXPECT_EQ(Read(Path("sub/c")), "new");
}

TEST_P(FileSystemTest, RenameDirectory) {
  ASSERT_TRUE(fs_->CreateDirs(Path("d1/inner")).ok());
  Write(Path("d1/inner/f"), "x");
  ASSERT_TRUE(fs_->Rename(Path("d1"), Path("d2")).ok());
  EXPECT_FALSE(fs_->Exists(Path("d1")));
  EXPECT_EQ(Read(Path("d2/inner/f")), "x");
}

TEST_P(FileSystemTest, RemoveFile) {
  Write(Path("a"), "x");
  ASSERT_TRUE(fs_->RemoveFile(Path("a")).ok());
  EXPECT_FALSE(fs_->Exists(Path("a")));
  EXPECT_TRUE(List(root_).empty());
}

TEST_P(FileSystemTest, OpenHandleSurvivesRemove) {
  Write(Path("a"), "still here");
  auto file = fs_->NewRandomAccessFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(fs_->RemoveFile(Path("a")).ok());
  char scratch[32];
  EXPECT_EQ(*(*file)->ReadAt(0, sizeof(scratch), scratch), "still here");
}

TEST_P(FileSystemTest, WriteFileAtomicallyReplacesAndLeavesNoTemp) {
  ASSERT_TRUE(WriteFileAtomically(fs_, Path("manifest"), "v1").ok());
  ASSERT_TRUE(WriteFileAtomically(fs_, Path("manifest"), "version two").ok());
  EXPECT_EQ(Read(Path("manifest")), "version two");
  EXPECT_EQ(List(root_), std::vector<std::string>{"manifest"});
}

TEST_P(FileSystemTest, WriteFileAtomicallyIntoMissingDirectoryFails) {
  Status s = WriteFileAtomically(fs_, Path("missing/m"), "x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("missing/m"), std::string::npos) << s.ToString();
}

TEST_P(FileSystemTest, ConcurrentWritersOfDistinctFiles) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 20; ++i) {
        std::string name = Path("t" + std::to_string(t) + "_" + std::to_string(i));
        EXPECT_TRUE(WriteFileAtomically(fs_, name, name).ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(List(root_).size(), 80u);
  EXPECT_EQ(Read(Path("t3_19")), Path("t3_19"));
}

INSTANTIATE_TEST_SUITE_P(All, FileSystemTest,
                         testing::Values(Impl{"Posix", true, false}, Impl{"Mem", false, false},
                                         Impl{"FaultOverPosix", true, true},
                                         Impl{"FaultOverMem", false, true}),
                         [](const testing::TestParamInfo<Impl>& p) { return p.param.name; });

TEST(PosixFileSystemTest, FullDiskIsResourceExhaustedNamingTheFile) {
  // /dev/full accepts open(O_TRUNC) and fails every write with ENOSPC.
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto file = PosixFileSystem()->NewWritableFile("/dev/full");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Status s = (*file)->Append("abc");  // Buffered: the error surfaces on Sync.
  if (s.ok()) s = (*file)->Sync();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s.ToString();
  // The error sticks: the file's tail is unknown after a failed write.
  EXPECT_EQ((*file)->Append("more").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*file)->Close().code(), StatusCode::kResourceExhausted);
}

// Appends from 64 KiB up are written at once (so a full disk fails them at once); smaller
// ones wait in the buffer and fail at the sync.
TEST(PosixFileSystemTest, AppendsFrom64KiBAreWrittenThroughSmallerOnesBuffered) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto buffered = PosixFileSystem()->NewWritableFile("/dev/full");
  ASSERT_TRUE(buffered.ok());
  EXPECT_TRUE((*buffered)->Append(std::string((64 << 10) - 1, 'x')).ok());
  EXPECT_EQ((*buffered)->Sync().code(), StatusCode::kResourceExhausted);
  for (size_t size : {size_t{64} << 10, size_t{2} << 20}) {
    auto through = PosixFileSystem()->NewWritableFile("/dev/full");
    ASSERT_TRUE(through.ok());
    EXPECT_EQ((*through)->Append(std::string(size, 'x')).code(), StatusCode::kResourceExhausted)
        << size;
  }
}

TEST(PathTest, Normalize) {
  using io_internal::NormalizePath;
  EXPECT_EQ(NormalizePath("/a//b/./c/"), "/a/b/c");
  EXPECT_EQ(NormalizePath("a/"), "a");
  EXPECT_EQ(NormalizePath("./a"), "a");
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath("//"), "/");
  EXPECT_EQ(NormalizePath("."), ".");
  EXPECT_EQ(NormalizePath(""), "");
}

TEST(PathTest, Dirname) {
  using io_internal::Dirname;
  EXPECT_EQ(Dirname("/a/b"), "/a");
  EXPECT_EQ(Dirname("/a/b/"), "/a");
  EXPECT_EQ(Dirname("/a"), "/");
  EXPECT_EQ(Dirname("/"), "/");
  EXPECT_EQ(Dirname("a"), ".");
  EXPECT_EQ(Dirname("a/b"), "a");
}

}  // namespace
}  // namespace weft
