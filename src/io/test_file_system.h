// TestFileSystem: the base file system a test runs on — a fresh temporary directory on the
// real (POSIX) file system, removed afterwards, or an in-memory one. Tests only.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "io/file_system.h"
#include "io/mem_file_system.h"

namespace weft {

class TestFileSystem {
 public:
  // `mem_root` names the (created) root directory of the in-memory variant.
  TestFileSystem(bool posix, const std::string& mem_root) : posix_(posix) {
    if (posix_) {
      std::string tmpl = ::testing::TempDir() + "weft_test_XXXXXX";
      EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
      root_ = tmpl;
      fs_ = PosixFileSystem();
    } else {
      mem_ = NewMemFileSystem();
      fs_ = mem_.get();
      root_ = mem_root;
      EXPECT_TRUE(fs_->CreateDirs(root_).ok());
    }
  }
  ~TestFileSystem() {
    if (!posix_) return;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TestFileSystem(const TestFileSystem&) = delete;
  TestFileSystem& operator=(const TestFileSystem&) = delete;

  FileSystem* fs() const { return fs_; }
  const std::string& root() const { return root_; }

 private:
  bool posix_;
  std::unique_ptr<FileSystem> mem_;
  FileSystem* fs_ = nullptr;
  std::string root_;
};

}  // namespace weft
