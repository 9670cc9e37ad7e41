// MemFileSystem behaviour beyond the shared contract in file_system_test.cc.
#include "io/mem_file_system.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace weft {
namespace {

std::vector<std::string> Sorted(Result<std::vector<std::string>> names) {
  EXPECT_TRUE(names.ok()) << names.status().ToString();
  std::vector<std::string> out = names.value_or({});
  std::sort(out.begin(), out.end());
  return out;
}

TEST(MemFileSystemTest, RootsAlwaysExistAndPathsAreNormalized) {
  auto fs = NewMemFileSystem();
  EXPECT_TRUE(fs->Exists("/"));
  EXPECT_TRUE(fs->Exists("."));
  ASSERT_TRUE(fs->CreateDirs("//a/./b/").ok());
  ASSERT_TRUE(WriteFileAtomically(fs.get(), "/a/b//f", "x").ok());
  EXPECT_EQ(*ReadFileToString(fs.get(), "/a/./b/f"), "x");
  EXPECT_EQ(Sorted(fs->ListDir("/")), std::vector<std::string>{"a"});
  ASSERT_TRUE(WriteFileAtomically(fs.get(), "rel", "y").ok());  // Relative names live in ".".
  EXPECT_EQ(Sorted(fs->ListDir(".")), std::vector<std::string>{"rel"});
  EXPECT_EQ(Sorted(fs->ListDir("/")), std::vector<std::string>{"a"});
}

TEST(MemFileSystemTest, DirectoryRenameRules) {
  auto fs = NewMemFileSystem();
  ASSERT_TRUE(fs->CreateDirs("/a/sub").ok());
  ASSERT_TRUE(fs->CreateDirs("/full/x").ok());
  ASSERT_TRUE(fs->CreateDirs("/empty").ok());
  ASSERT_TRUE(WriteFileAtomically(fs.get(), "/file", "f").ok());
  EXPECT_EQ(fs->Rename("/a", "/a/sub/deeper").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fs->Rename("/a", "/full").code(), StatusCode::kNotEmpty);
  EXPECT_EQ(fs->Rename("/a", "/file").code(), StatusCode::kNotADirectory);
  EXPECT_EQ(fs->Rename("/file", "/empty").code(), StatusCode::kIsADirectory);
  EXPECT_EQ(fs->Rename("/", "/x").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(fs->Rename("/a", "/empty").ok());  // An empty directory may be replaced.
  EXPECT_TRUE(fs->Exists("/empty/sub"));
  EXPECT_FALSE(fs->Exists("/a"));
}

TEST(MemFileSystemTest, WriterKeepsWritingAfterRename) {
  auto fs = NewMemFileSystem();
  auto file = fs->NewWritableFile("/f");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("a").ok());
  ASSERT_TRUE(fs->Rename("/f", "/g").ok());
  ASSERT_TRUE((*file)->Append("b").ok());
  EXPECT_EQ(*ReadFileToString(fs.get(), "/g"), "ab");
}

TEST(MemFileSystemTest, ConcurrentReadersAndWriters) {
  auto fs = NewMemFileSystem();
  auto file = fs->NewWritableFile("/log");
  ASSERT_TRUE(file.ok());
  std::thread writer([&] {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*file)->Append("0123456789").ok());
  });
  std::thread reader([&] {
    auto in = fs->NewRandomAccessFile("/log");
    ASSERT_TRUE(in.ok());
    char scratch[10];
    for (int i = 0; i < 1000; ++i) {
      auto got = (*in)->ReadAt(10 * static_cast<uint64_t>(i % 50), 10, scratch);
      ASSERT_TRUE(got.ok());
      // Appends are whole: a reader sees all ten bytes of a record or none.
      ASSERT_TRUE(got->empty() || *got == "0123456789");
    }
  });
  writer.join();
  reader.join();
  EXPECT_EQ(*fs->FileSize("/log"), 10000u);
}

}  // namespace
}  // namespace weft
