// Crash safety of LocalVolume over pack files: an acknowledged write survives losing every
// unsynced byte, a failure at any step of a commit leaves either the old or the new version,
// and a full disk is a clear error that changes nothing.
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "chunk/pack_chunk_store.h"
#include "io/fault_injection_file_system.h"
#include "io/mem_file_system.h"
#include "vfs/local_volume.h"
#include "vfs/test_util.h"

namespace weft {
namespace {

using testutil::RandomBytes;
using testutil::ReadFile;
using testutil::WriteFile;

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_fs_ = NewMemFileSystem();
    fs_ = std::make_unique<FaultInjectionFileSystem>(base_fs_.get());
    kv_ = std::shared_ptr<KvStore>(NewMemKvStore());  // its writes are durable when acknowledged
    Reopen();
  }

  // A process restart: new chunk store and volume over the surviving bytes.
  void Reopen() {
    vol_.reset();
    auto chunks = OpenPackChunkStore(fs_.get(), "/data/packs", PackStoreOptions{});
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    LocalVolumeOptions opts;
    opts.chunker.min_size = 512;
    opts.chunker.avg_size = 2048;
    opts.chunker.max_size = 8192;
    auto v = NewLocalVolume(kv_, std::shared_ptr<ChunkStore>(std::move(chunks).value()), opts);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    vol_ = std::move(v).value();
  }

  void ExpectAcknowledgedIntact() {
    for (const auto& [path, data] : acknowledged_) {
      auto got = ReadFile(vol_.get(), path);
      ASSERT_TRUE(got.ok()) << path << ": " << got.status().ToString();
      EXPECT_EQ(*got, data) << path;
    }
    auto fsck = vol_->Fsck(RequestContext{});
    ASSERT_TRUE(fsck.ok()) << fsck.status().ToString();
    EXPECT_TRUE(fsck->problems.empty()) << fsck->problems.front();
  }

  std::unique_ptr<FileSystem> base_fs_;
  std::unique_ptr<FaultInjectionFileSystem> fs_;
  std::shared_ptr<KvStore> kv_;
  std::unique_ptr<Volume> vol_;
  std::map<std::string, std::string> acknowledged_;
};

TEST_F(CrashTest, AcknowledgedWritesSurvivePowerLoss) {
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 5; ++i) {
      std::string path = "/f" + std::to_string(i);
      std::string data = RandomBytes(3000 + 7000 * i + round, round * 10 + i);
      ASSERT_TRUE(WriteFile(vol_.get(), path, data).ok());
      acknowledged_[path] = data;
    }
    // A writer in flight at the crash: never acknowledged, must not disturb anything.
    auto w = vol_->OpenWriter(RequestContext{}, "/f0");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(AsBytes(RandomBytes(20000, 999))).ok());
    ASSERT_TRUE(fs_->DropUnsyncedData().ok());
    w->reset();
    Reopen();
    ExpectAcknowledgedIntact();
  }
}

TEST_F(CrashTest, FailureAtEveryStepOfACommitLeavesOldOrNew) {
  const std::string old_data = RandomBytes(25000, 1);
  ASSERT_TRUE(WriteFile(vol_.get(), "/x", old_data).ok());
  const std::string new_data = RandomBytes(25000, 2);

  // Count the file-system calls one clean write makes right after a restart (which includes
  // starting a new pack), the situation every iteration below is in.
  Reopen();
  uint64_t before = fs_->MutatingCalls();
  ASSERT_TRUE(WriteFile(vol_.get(), "/probe", new_data).ok());
  uint64_t steps = fs_->MutatingCalls() - before;
  ASSERT_GE(steps, 2u) << "a commit must at least append and sync a pack";
  std::cerr << "commit of a new file takes " << steps << " file-system steps\n";

  for (uint64_t n = 0; n < steps + 2; ++n) {
    std::string fresh = new_data + std::to_string(n);  // new chunks every time
    fs_->FailAfter(static_cast<int>(n), IoError("injected disk failure"));
    auto result = WriteFile(vol_.get(), "/x", fresh);
    fs_->ClearFaults();
    ASSERT_TRUE(fs_->DropUnsyncedData().ok());
    Reopen();
    auto got = ReadFile(vol_.get(), "/x");
    ASSERT_TRUE(got.ok()) << "step " << n << ": " << got.status().ToString();
    if (result.ok()) {
      EXPECT_EQ(*got, fresh) << "step " << n;
      acknowledged_["/x"] = fresh;
    } else {
      EXPECT_EQ(*got, acknowledged_.count("/x") ? acknowledged_["/x"] : old_data) << "step " << n;
    }
    if (!acknowledged_.count("/x")) acknowledged_["/x"] = *got;
    ExpectAcknowledgedIntact();
  }
}

TEST_F(CrashTest, FullDiskIsAClearErrorAndChangesNothing) {
  const std::string small = RandomBytes(10000, 3);
  ASSERT_TRUE(WriteFile(vol_.get(), "/small", small).ok());
  acknowledged_["/small"] = small;
  fs_->SetCapacity(200000);
  auto big = WriteFile(vol_.get(), "/big", RandomBytes(2'000'000, 4));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted) << big.status().ToString();
  EXPECT_EQ(vol_->Stat(RequestContext{}, "/big").status().code(), StatusCode::kNotFound);
  ExpectAcknowledgedIntact();
  // The same when the chunks are stored on a helper thread (no MD5: ChunkPipeline): its
  // failure reaches the writer with its code.
  WriteOptions no_md5;
  no_md5.md5_etag_limit = 0;
  auto piped = WriteFile(vol_.get(), "/piped", RandomBytes(2'000'000, 5), no_md5, 1 << 16);
  ASSERT_FALSE(piped.ok());
  EXPECT_EQ(piped.status().code(), StatusCode::kResourceExhausted) << piped.status().ToString();
  EXPECT_EQ(vol_->Stat(RequestContext{}, "/piped").status().code(), StatusCode::kNotFound);
  ExpectAcknowledgedIntact();

  // Once space is back, writing works again.
  fs_->ClearFaults();
  ASSERT_TRUE(WriteFile(vol_.get(), "/after", "space again").ok());
  acknowledged_["/after"] = "space again";
  ASSERT_TRUE(fs_->DropUnsyncedData().ok());
  Reopen();
  ExpectAcknowledgedIntact();
}

}  // namespace
}  // namespace weft
