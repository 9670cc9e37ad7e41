#include "vfs/local_volume.h"

#include <gtest/gtest.h>

#include <thread>

#include "chunk/chunk_id.h"
#include "chunk/mem_chunk_store.h"
#include "chunk/zero_chunks.h"
#include "vfs/test_util.h"

namespace weft {
namespace {

using testutil::RandomBytes;
using testutil::ReadFile;
using testutil::WriteFile;

// Small chunks so modest test files span many chunks.
ChunkerOptions SmallChunks() {
  ChunkerOptions o;
  o.min_size = 256;
  o.avg_size = 1024;
  o.max_size = 4096;
  return o;
}

class LocalVolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kv_ = std::shared_ptr<KvStore>(NewMemKvStore());
    chunks_ = std::shared_ptr<ChunkStore>(NewMemChunkStore());
    LocalVolumeOptions opts;
    opts.chunker = SmallChunks();
    opts.clock = &clock_;
    auto v = NewLocalVolume(kv_, chunks_, opts);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    vol_ = std::move(v).value();
  }

  uint64_t LastSequence() {
    auto changes = vol_->ReadChanges(ctx_, 0, 1000000);
    EXPECT_TRUE(changes.ok());
    return changes->empty() ? 0 : changes->back().sequence;
  }

  std::vector<std::string> Names(const std::string& dir, ReadDirOptions opts = {}) {
    auto page = vol_->ReadDir(ctx_, dir, opts);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> out;
    if (page.ok()) {
      for (auto& e : page->entries) out.push_back(e.name);
    }
    return out;
  }

  FakeClock clock_;
  RequestContext ctx_;
  std::shared_ptr<KvStore> kv_;
  std::shared_ptr<ChunkStore> chunks_;
  std::unique_ptr<Volume> vol_;
};

TEST_F(LocalVolumeTest, WriteThenReadWholeAndRanges) {
  std::string data = RandomBytes(100000, 1);
  auto info = WriteFile(vol_.get(), "/f", data);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, data.size());
  EXPECT_EQ(info->etag, Md5Hex(AsBytes(data)));
  EXPECT_GT(info->chunks, 10u);

  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), data);
  auto r = vol_->OpenReader(ctx_, "/f");
  ASSERT_TRUE(r.ok());
  for (uint64_t off : {0ul, 1ul, 4095ul, 50000ul, 99999ul}) {
    auto got = (*r)->ReadAt(off, 7000);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, data.substr(off, 7000)) << off;
  }
  EXPECT_EQ(*(*r)->ReadAt(100000, 10), "");
  EXPECT_EQ(*(*r)->ReadAt(200000, 10), "");

  auto st = vol_->Stat(ctx_, "/f");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, FileType::kFile);
  EXPECT_EQ(st->size, data.size());
  EXPECT_EQ(st->mode, 0644u);
}

TEST_F(LocalVolumeTest, LargePiecesHashOnTheHelperThread) {
  // Pieces of 256 KiB and more are MD5-hashed on BackgroundMd5's thread; mixing them with small
  // ones must still give the MD5 of the whole stream.
  std::string data = RandomBytes(3 * 1024 * 1024 + 777, 11);
  auto w = vol_->OpenWriter(ctx_, "/big");
  ASSERT_TRUE(w.ok());
  size_t off = 0;
  for (size_t piece : {1u << 20, 100u, 300u * 1024, 5000u, 1u << 20}) {
    ASSERT_TRUE((*w)->Write(AsBytes(std::string_view(data).substr(off, piece))).ok());
    off += piece;
  }
  ASSERT_TRUE((*w)->Write(AsBytes(std::string_view(data).substr(off))).ok());
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->etag, Md5Hex(AsBytes(data)));
  EXPECT_EQ(*ReadFile(vol_.get(), "/big"), data);
}

TEST_F(LocalVolumeTest, BigStreamsUseTheWorkerThreadsAndStillAbortCleanly) {
  // Past 1 MiB the MD5 and the chunk hashing move to worker threads. A writer dropped while
  // they hold queued pieces must leave nothing behind, and the next write must work.
  std::string data = RandomBytes(6 * 1024 * 1024, 12);
  {
    auto w = vol_->OpenWriter(ctx_, "/dropped");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(AsBytes(data)).ok());
  }
  EXPECT_EQ(vol_->Stat(ctx_, "/dropped").status().code(), StatusCode::kNotFound);
  clock_.AdvanceNanos(1'000'000'000);
  ASSERT_TRUE(vol_->CollectGarbage(ctx_, GcOptions{0}).ok());
  EXPECT_EQ(vol_->Usage(ctx_)->unique_bytes, 0u);  // its chunks were released, then swept
  auto info = WriteFile(vol_.get(), "/kept", data, {}, 1 << 20);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->etag, Md5Hex(AsBytes(data)));
  EXPECT_EQ(*ReadFile(vol_.get(), "/kept"), data);
}

TEST_F(LocalVolumeTest, EmptyFile) {
  ASSERT_TRUE(WriteFile(vol_.get(), "/empty", "").ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/empty"), "");
  EXPECT_EQ(vol_->Stat(ctx_, "/empty")->etag, Md5Hex(AsBytes("")));
}

TEST_F(LocalVolumeTest, UncommittedWriterIsInvisible) {
  auto w = vol_->OpenWriter(ctx_, "/pending");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(AsBytes("hello")).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/pending").status().code(), StatusCode::kNotFound);
  (*w)->Abort();
  EXPECT_EQ(vol_->Stat(ctx_, "/pending").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE((*w)->Commit().ok());
}

TEST_F(LocalVolumeTest, OverwriteKeepsVersions) {
  auto v1 = WriteFile(vol_.get(), "/f", "one");
  auto v2 = WriteFile(vol_.get(), "/f", "two!");
  ASSERT_TRUE(v1.ok() && v2.ok());
  EXPECT_NE(v1->version_id, v2->version_id);
  EXPECT_EQ(v1->inode, v2->inode);
  auto versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_TRUE(versions.ok()) << versions.status().ToString();
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].version_id, v2->version_id);
  EXPECT_TRUE((*versions)[0].is_current);
  EXPECT_FALSE((*versions)[1].is_current);
  EXPECT_EQ((*versions)[1].size, 3u);
  auto old = vol_->OpenVersion(ctx_, "/f", v1->version_id);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(*(*old)->ReadAt(0, 100), "one");

  // Delete leaves a delete marker; the old versions remain readable.
  ASSERT_TRUE(vol_->Unlink(ctx_, "/f").ok());
  versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 3u);
  EXPECT_TRUE((*versions)[0].is_delete_marker);
  EXPECT_FALSE((*versions)[1].is_current);
  EXPECT_EQ(*(*vol_->OpenVersion(ctx_, "/f", v2->version_id))->ReadAt(0, 100), "two!");

  // A version id of another path is not readable through this one.
  auto other = WriteFile(vol_.get(), "/g", "secret");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(vol_->OpenVersion(ctx_, "/f", other->version_id).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(vol_->OpenVersion(ctx_, "/f", "garbage").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalVolumeTest, ConditionalWrites) {
  WriteOptions create_only;
  create_only.if_version = "";
  auto v1 = WriteFile(vol_.get(), "/c", "a", create_only);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(WriteFile(vol_.get(), "/c", "b", create_only).status().code(),
            StatusCode::kFailedPrecondition);
  WriteOptions if_v1;
  if_v1.if_version = v1->version_id;
  ASSERT_TRUE(WriteFile(vol_.get(), "/c", "c", if_v1).ok());
  EXPECT_EQ(WriteFile(vol_.get(), "/c", "d", if_v1).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(*ReadFile(vol_.get(), "/c"), "c");
}

TEST_F(LocalVolumeTest, DirectoriesAndPagedSortedReadDir) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  EXPECT_EQ(vol_->Mkdir(ctx_, "/d").status().code(), StatusCode::kAlreadyExists);
  uint64_t seq = LastSequence();
  EXPECT_TRUE(vol_->Mkdir(ctx_, "/d", 0755, /*parents=*/true).ok());
  EXPECT_EQ(LastSequence(), seq);  // nothing to do, nothing committed
  EXPECT_EQ(vol_->Mkdir(ctx_, "/x/y").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/x/y/z", 0700, true).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/x/y/z")->mode, 0700u);
  for (int i = 24; i >= 0; --i) {
    ASSERT_TRUE(WriteFile(vol_.get(), "/d/f" + std::to_string(100 + i), "x").ok());
  }
  ReadDirOptions page_opts;
  page_opts.limit = 10;
  auto page = vol_->ReadDir(ctx_, "/d", page_opts);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->truncated);
  ASSERT_EQ(page->entries.size(), 10u);
  EXPECT_EQ(page->entries[0].name, "f100");
  std::vector<std::string> all;
  std::string after;
  while (true) {
    page_opts.start_after = after;
    page_opts.with_info = true;
    auto p = vol_->ReadDir(ctx_, "/d", page_opts);
    ASSERT_TRUE(p.ok());
    for (auto& e : p->entries) {
      all.push_back(e.name);
      ASSERT_TRUE(e.info.has_value());
      EXPECT_EQ(e.info->size, 1u);
      EXPECT_EQ(e.info->path, "/d/" + e.name);
    }
    if (!p->truncated) break;
    after = p->entries.back().name;
  }
  ASSERT_EQ(all.size(), 25u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_EQ(vol_->ReadDir(ctx_, "/d/f100").status().code(), StatusCode::kNotADirectory);
  EXPECT_EQ(Names("/"), (std::vector<std::string>{"d", "x"}));
}

TEST_F(LocalVolumeTest, WriteCreatesParentsOnlyWhenAsked) {
  EXPECT_EQ(WriteFile(vol_.get(), "/a/b/c", "x").status().code(), StatusCode::kNotFound);
  WriteOptions opts;
  opts.create_parents = true;
  ASSERT_TRUE(WriteFile(vol_.get(), "/a/b/c", "x", opts).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/a/b")->type, FileType::kDirectory);
  EXPECT_EQ(WriteFile(vol_.get(), "/a/b/c/d", "x", opts).status().code(),
            StatusCode::kNotADirectory);
  EXPECT_EQ(WriteFile(vol_.get(), "/a/b", "x").status().code(), StatusCode::kIsADirectory);
}

// Lookups of deep paths take their directories from a cache (DirCache); every commit must
// void it, or a path would still lead through a directory that was renamed or replaced.
TEST_F(LocalVolumeTest, ResolvedDirectoriesFollowRenamesAndReplacements) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/x/y", 0755, /*parents=*/true).ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/x/y/f", "old").ok());
  ASSERT_EQ(*ReadFile(vol_.get(), "/x/y/f"), "old");  // /x/y is now cached
  ASSERT_TRUE(vol_->Rename(ctx_, "/x", "/z").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/x/y/f").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*ReadFile(vol_.get(), "/z/y/f"), "old");

  ASSERT_TRUE(vol_->Mkdir(ctx_, "/x/y", 0755, /*parents=*/true).ok());  // new directories
  ASSERT_TRUE(WriteFile(vol_.get(), "/x/y/f", "new").ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/x/y/f"), "new");
  EXPECT_EQ(*ReadFile(vol_.get(), "/z/y/f"), "old");

  ASSERT_TRUE(vol_->Unlink(ctx_, "/z/y/f").ok());
  ASSERT_TRUE(vol_->Rmdir(ctx_, "/z/y").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/z/y", "a file now").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/z/y/f").status().code(), StatusCode::kNotADirectory);
}

TEST_F(LocalVolumeTest, RenameUnlinkRmdir) {
  ASSERT_TRUE(WriteFile(vol_.get(), "/a", "A").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/b", "B").ok());
  ASSERT_TRUE(vol_->Rename(ctx_, "/a", "/b").ok());  // replaces /b atomically
  EXPECT_EQ(*ReadFile(vol_.get(), "/b"), "A");
  EXPECT_EQ(vol_->Stat(ctx_, "/a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->Rename(ctx_, "/a", "/c").code(), StatusCode::kNotFound);

  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d1").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/d1/in", "I").ok());
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d2").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/d2/other", "O").ok());
  EXPECT_EQ(vol_->Rename(ctx_, "/d1", "/d1/sub").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vol_->Rename(ctx_, "/d1", "/d2").code(), StatusCode::kNotEmpty);
  EXPECT_EQ(vol_->Rename(ctx_, "/b", "/d2").code(), StatusCode::kIsADirectory);
  EXPECT_EQ(vol_->Rename(ctx_, "/d1", "/b").code(), StatusCode::kNotADirectory);
  ASSERT_TRUE(vol_->Rename(ctx_, "/d1", "/d3").ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/d3/in"), "I");

  EXPECT_EQ(vol_->Rmdir(ctx_, "/d3").code(), StatusCode::kNotEmpty);
  EXPECT_EQ(vol_->Unlink(ctx_, "/d3").code(), StatusCode::kIsADirectory);
  EXPECT_EQ(vol_->Rmdir(ctx_, "/b").code(), StatusCode::kNotADirectory);
  EXPECT_EQ(vol_->Rmdir(ctx_, "/").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d3/in").ok());
  ASSERT_TRUE(vol_->Rmdir(ctx_, "/d3").ok());
  EXPECT_EQ(vol_->Unlink(ctx_, "/d3/in").code(), StatusCode::kNotFound);
}

TEST_F(LocalVolumeTest, SymlinksAndSetAttr) {
  auto l = vol_->Symlink(ctx_, "/link", "target/file");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->type, FileType::kSymlink);
  EXPECT_EQ(l->symlink_target, "target/file");
  EXPECT_EQ(vol_->OpenReader(ctx_, "/link").status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(WriteFile(vol_.get(), "/f", "x").ok());
  SetAttrRequest req;
  req.mode = 0600;
  req.uid = 42;
  req.mtime_ns = 12345;
  auto st = vol_->SetAttr(ctx_, "/f", req);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->mode, 0600u);
  EXPECT_EQ(vol_->Stat(ctx_, "/f")->uid, 42u);
  EXPECT_EQ(vol_->Stat(ctx_, "/f")->mtime_ns, 12345);
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "x");
}

TEST_F(LocalVolumeTest, SpecialFilesAreEntriesWithoutContent) {
  auto fifo = vol_->Mknod(ctx_, "/fifo", FileType::kFifo, 0640, 99);
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  EXPECT_EQ(fifo->type, FileType::kFifo);
  EXPECT_EQ(fifo->mode, 0640u);
  EXPECT_EQ(fifo->rdev, 0u);  // only devices keep a device number
  auto dev = vol_->Mknod(ctx_, "/tty", FileType::kCharDevice, 0620, (5 << 8) | 1);
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(vol_->Mknod(ctx_, "/sock", FileType::kSocket, 0777, 0).ok());
  ASSERT_TRUE(vol_->Mknod(ctx_, "/blk", FileType::kBlockDevice, 0600, 7).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/tty")->rdev, uint64_t{(5 << 8) | 1});
  EXPECT_EQ(vol_->Stat(ctx_, "/sock")->type, FileType::kSocket);
  EXPECT_EQ(vol_->Stat(ctx_, "/blk")->type, FileType::kBlockDevice);
  EXPECT_EQ(vol_->Stat(ctx_, "/blk")->size, 0u);

  EXPECT_EQ(vol_->Mknod(ctx_, "/fifo", FileType::kFifo, 0600, 0).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(vol_->Mknod(ctx_, "/x", FileType::kFile, 0600, 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(vol_->Mknod(ctx_, "/no/such", FileType::kFifo, 0600, 0).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(vol_->OpenReader(ctx_, "/fifo").status().code(), StatusCode::kInvalidArgument);

  // Listed with their types; renamed and removed like any other name; kept by snapshots.
  ReadDirOptions with_info;
  with_info.with_info = true;
  auto page = vol_->ReadDir(ctx_, "/", with_info);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 4u);
  EXPECT_EQ(page->entries[1].type, FileType::kFifo);
  EXPECT_EQ(page->entries[3].info->rdev, uint64_t{(5 << 8) | 1});
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "s").ok());
  ASSERT_TRUE(vol_->Rename(ctx_, "/fifo", "/pipe").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/pipe")->inode, fifo->inode);
  ASSERT_TRUE(vol_->Unlink(ctx_, "/tty").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/tty").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->Stat(ctx_, "/.weft/snapshots/s/tty")->rdev, uint64_t{(5 << 8) | 1});
  EXPECT_EQ(vol_->Stat(ctx_, "/.weft/snapshots/s/fifo")->type, FileType::kFifo);
}

TEST_F(LocalVolumeTest, HardLinksShareOneFileItsVersionsAndItsLife) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/a", "v1").ok());
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "before").ok());
  clock_.AdvanceNanos(1'000'000'000);
  auto b = vol_->Link(ctx_, "/a", "/d/b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->nlink, 2u);
  EXPECT_EQ(b->inode, vol_->Stat(ctx_, "/a")->inode);
  EXPECT_EQ(vol_->Stat(ctx_, "/a")->ctime_ns, clock_.NowNanos());
  EXPECT_EQ(vol_->Usage(ctx_)->files, 1u);  // one file, two names

  EXPECT_EQ(vol_->Link(ctx_, "/a", "/d/b").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(vol_->Link(ctx_, "/d", "/e").status().code(), StatusCode::kIsADirectory);
  EXPECT_EQ(vol_->Link(ctx_, "/none", "/e").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->Link(ctx_, "/a", "/none/e").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->Link(ctx_, "/a", "/.weft/x").status().code(), StatusCode::kReadOnly);

  // A write through one name is the file's new version under both.
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/b", "v2").ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/a"), "v2");
  EXPECT_EQ(vol_->Stat(ctx_, "/a")->version_id, vol_->Stat(ctx_, "/d/b")->version_id);
  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/before/a"), "v1");
  EXPECT_EQ(vol_->Stat(ctx_, "/.weft/snapshots/before/d/b").status().code(), StatusCode::kNotFound);
  auto versions = vol_->ListVersions(ctx_, "/a");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  // One version of a file with several names belongs to all of them: not removable alone.
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/a", (*versions)[1].version_id).code(),
            StatusCode::kFailedPrecondition);
  // A rename between two names of one file does nothing.
  ASSERT_TRUE(vol_->Rename(ctx_, "/a", "/d/b").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/a")->nlink, 2u);

  // The file lives until its last name goes, through garbage collection and a reopen.
  ASSERT_TRUE(vol_->Unlink(ctx_, "/a").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d/b")->nlink, 1u);
  ASSERT_TRUE(vol_->CollectGarbage(ctx_, GcOptions{0}).ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/d/b"), "v2");
  EXPECT_TRUE(vol_->Fsck(ctx_)->problems.empty());
  ASSERT_TRUE(WriteFile(vol_.get(), "/x", "other").ok());
  ASSERT_TRUE(vol_->Link(ctx_, "/d/b", "/c").ok());
  ASSERT_TRUE(vol_->Rename(ctx_, "/x", "/c").ok());  // replaces one name of the file
  EXPECT_EQ(vol_->Stat(ctx_, "/d/b")->nlink, 1u);
  EXPECT_EQ(*ReadFile(vol_.get(), "/c"), "other");
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d/b").ok());
  ASSERT_TRUE(vol_->CollectGarbage(ctx_, GcOptions{0}).ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/before/a"), "v1");
  EXPECT_TRUE(vol_->Fsck(ctx_)->problems.empty());
  EXPECT_EQ(vol_->Usage(ctx_)->files, 1u);
}

TEST_F(LocalVolumeTest, DirectoryTimesAndLinkCountsFollowTheirEntries) {
  auto root = vol_->Stat(ctx_, "/");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->nlink, 2u);
  auto step = [&] {
    clock_.AdvanceNanos(1'000'000'000);
    return clock_.NowNanos();
  };
  int64_t t = step();
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/")->mtime_ns, t);
  EXPECT_EQ(vol_->Stat(ctx_, "/")->ctime_ns, t);
  EXPECT_EQ(vol_->Stat(ctx_, "/")->nlink, 3u);
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->nlink, 2u);

  t = step();
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/f", "x").ok());  // a new name changes the directory
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->mtime_ns, t);
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->nlink, 2u);   // files do not count
  EXPECT_LT(vol_->Stat(ctx_, "/")->mtime_ns, t);  // nor does a grandchild
  step();
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/f", "y").ok());  // new content is not a new name
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->mtime_ns, t);

  t = step();
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d/a/b", 0755, /*parents=*/true).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->nlink, 3u);
  EXPECT_EQ(vol_->Stat(ctx_, "/d/a")->nlink, 3u);
  EXPECT_EQ(vol_->Stat(ctx_, "/d/a")->mtime_ns, t);

  // A directory moved between parents moves a link; both parents change, and so does the
  // moved directory's ctime.
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/e").ok());
  t = step();
  ASSERT_TRUE(vol_->Rename(ctx_, "/d/a", "/e/a").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->nlink, 2u);
  EXPECT_EQ(vol_->Stat(ctx_, "/e")->nlink, 3u);
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->mtime_ns, t);
  EXPECT_EQ(vol_->Stat(ctx_, "/e")->ctime_ns, t);
  EXPECT_EQ(vol_->Stat(ctx_, "/e/a")->ctime_ns, t);
  EXPECT_LT(vol_->Stat(ctx_, "/e/a")->mtime_ns, t);
  // Over an empty directory: the target's parent keeps its count.
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d/c").ok());
  ASSERT_TRUE(vol_->Rename(ctx_, "/e/a/b", "/d/c").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->nlink, 3u);
  EXPECT_EQ(vol_->Stat(ctx_, "/e/a")->nlink, 2u);

  t = step();
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d/f").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->mtime_ns, t);
  t = step();
  ASSERT_TRUE(vol_->Rmdir(ctx_, "/d/c").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->nlink, 2u);
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->ctime_ns, t);
  EXPECT_EQ(vol_->Stat(ctx_, "/")->nlink, 4u);  // d, e
  // A failed mutation changes nothing.
  int64_t before = vol_->Stat(ctx_, "/d")->mtime_ns;
  step();
  EXPECT_FALSE(vol_->Rmdir(ctx_, "/d/nothing").ok());
  EXPECT_FALSE(vol_->Mkdir(ctx_, "/d").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->mtime_ns, before);
  EXPECT_EQ(vol_->Stat(ctx_, "/")->nlink, 4u);
}

TEST_F(LocalVolumeTest, AnAccessTimeIsKeptOnlyWhenSet) {
  ASSERT_TRUE(WriteFile(vol_.get(), "/f", "x").ok());
  auto f = vol_->Stat(ctx_, "/f");
  EXPECT_EQ(f->atime_ns, f->mtime_ns);  // never set: it follows the mtime
  SetAttrRequest atime;
  atime.atime_ns = 5'000'000'123;
  ASSERT_TRUE(vol_->SetAttr(ctx_, "/f", atime).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/f")->atime_ns, 5'000'000'123);
  EXPECT_EQ(vol_->Stat(ctx_, "/f")->mtime_ns, f->mtime_ns);
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "x");  // reads leave it alone
  EXPECT_EQ(vol_->Stat(ctx_, "/f")->atime_ns, 5'000'000'123);

  // New content and new entries change mtimes, not atimes.
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/h", "1").ok());
  const int64_t created = vol_->Stat(ctx_, "/d/h")->mtime_ns;
  const int64_t dir_created = vol_->Stat(ctx_, "/d")->atime_ns;
  clock_.AdvanceNanos(1'000'000'000);
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/h", "2").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/i", "3").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/d/h")->atime_ns, created);
  EXPECT_GT(vol_->Stat(ctx_, "/d/h")->mtime_ns, created);
  EXPECT_EQ(vol_->Stat(ctx_, "/d")->atime_ns, dir_created);
  EXPECT_GT(vol_->Stat(ctx_, "/d")->mtime_ns, dir_created);

  // Setting only the mtime leaves an atime that followed it where it was.
  ASSERT_TRUE(WriteFile(vol_.get(), "/g", "x").ok());
  int64_t g_mtime = vol_->Stat(ctx_, "/g")->mtime_ns;
  SetAttrRequest mtime;
  mtime.mtime_ns = -7;
  ASSERT_TRUE(vol_->SetAttr(ctx_, "/g", mtime).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/g")->mtime_ns, -7);
  EXPECT_EQ(vol_->Stat(ctx_, "/g")->atime_ns, g_mtime);

  // Kept across a reopen of the volume's store.
  LocalVolumeOptions opts;
  opts.clock = &clock_;
  vol_.reset();
  auto reopened = NewLocalVolume(kv_, chunks_, opts);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Stat(ctx_, "/f")->atime_ns, 5'000'000'123);
  EXPECT_EQ((*reopened)->Stat(ctx_, "/")->nlink, 3u);  // and /d
}

TEST_F(LocalVolumeTest, HostilePathsChangeNothing) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/ok").ok());
  uint64_t before = LastSequence();
  for (const std::string& bad :
       std::vector<std::string>{"/ok/../x", "/./x", "/ok//x", "relative", std::string("/a\0b", 4),
                                "/" + std::string(256, 'n')}) {
    EXPECT_EQ(WriteFile(vol_.get(), bad, "x").status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(vol_->Mkdir(ctx_, bad).status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(vol_->Rename(ctx_, "/ok", bad).code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(vol_->Stat(ctx_, bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(LastSequence(), before);
  EXPECT_EQ(Names("/"), (std::vector<std::string>{"ok"}));
}

TEST_F(LocalVolumeTest, SnapshotsServeOldBytes) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/data").ok());
  std::string v1 = RandomBytes(30000, 2);
  ASSERT_TRUE(WriteFile(vol_.get(), "/data/a", v1).ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/data/b", "bee").ok());
  auto snap = vol_->CreateSnapshot(ctx_, "v1", "/data");
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(vol_->CreateSnapshot(ctx_, "v1", "/data").status().code(), StatusCode::kAlreadyExists);

  std::string v2 = v1;
  v2[100] ^= 1;
  ASSERT_TRUE(WriteFile(vol_.get(), "/data/a", v2).ok());
  ASSERT_TRUE(vol_->Unlink(ctx_, "/data/b").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/data/c", "new").ok());
  ASSERT_TRUE(vol_->Rename(ctx_, "/data/a", "/data/renamed").ok());

  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/v1/a"), v1);
  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/v1/b"), "bee");
  ReadOptions at;
  at.snapshot = "v1";
  EXPECT_EQ(*ReadFile(vol_.get(), "/data/a", at), v1);
  EXPECT_EQ(vol_->Stat(ctx_, "/data/c", at).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->Stat(ctx_, "/other", at).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Names("/.weft/snapshots/v1"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Names("/data"), (std::vector<std::string>{"c", "renamed"}));
  EXPECT_EQ(*ReadFile(vol_.get(), "/data/renamed"), v2);
  EXPECT_EQ(Names("/.weft/snapshots"), (std::vector<std::string>{"v1"}));
  EXPECT_EQ(Names("/.weft"), (std::vector<std::string>{"snapshots"}));

  // Snapshots are read-only.
  EXPECT_EQ(WriteFile(vol_.get(), "/.weft/snapshots/v1/a", "x").status().code(),
            StatusCode::kReadOnly);
  EXPECT_EQ(vol_->Unlink(ctx_, "/.weft/snapshots/v1/a").code(), StatusCode::kReadOnly);
  EXPECT_EQ(vol_->Mkdir(ctx_, "/.weft").status().code(), StatusCode::kReadOnly);

  auto list = vol_->ListSnapshots(ctx_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].path, "/data");
  ASSERT_TRUE(vol_->DeleteSnapshot(ctx_, "v1").ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/.weft/snapshots/v1/a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->DeleteSnapshot(ctx_, "v1").code(), StatusCode::kNotFound);
}

TEST_F(LocalVolumeTest, ReadDirAtSnapshotPagesAcrossHistory) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(WriteFile(vol_.get(), "/d/n" + std::to_string(10 + i), "x").ok());
  }
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "s", "/").ok());
  for (int i = 0; i < 20; i += 2)
    ASSERT_TRUE(vol_->Unlink(ctx_, "/d/n" + std::to_string(10 + i)).ok());
  for (int i = 1; i < 20; i += 4) {
    ASSERT_TRUE(WriteFile(vol_.get(), "/d/n" + std::to_string(10 + i), "changed").ok());
  }
  std::vector<std::string> all;
  ReadDirOptions opts;
  opts.snapshot = "s";
  opts.limit = 3;
  opts.with_info = true;
  while (true) {
    auto p = vol_->ReadDir(ctx_, "/d", opts);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (auto& e : p->entries) {
      all.push_back(e.name);
      EXPECT_EQ(e.info->size, 1u) << e.name;
    }
    if (!p->truncated) break;
    opts.start_after = p->entries.back().name;
  }
  ASSERT_EQ(all.size(), 20u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST_F(LocalVolumeTest, ChangeFeedIsOrdered) {
  uint64_t before = LastSequence();
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/f", "x").ok());
  ASSERT_TRUE(vol_->Rename(ctx_, "/d/f", "/d/g").ok());
  auto changes = vol_->ReadChanges(ctx_, before, 100);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->size(), 3u);
  EXPECT_EQ((*changes)[0].op, "mkdir");
  EXPECT_EQ((*changes)[1].op, "write");
  EXPECT_EQ((*changes)[1].path, "/d/f");
  EXPECT_EQ((*changes)[2].op, "rename");
  EXPECT_EQ((*changes)[2].path2, "/d/g");
  EXPECT_LT((*changes)[0].sequence, (*changes)[2].sequence);
}

TEST_F(LocalVolumeTest, DedupAndUsage) {
  std::string data = RandomBytes(50000, 3);
  ASSERT_TRUE(WriteFile(vol_.get(), "/a", data).ok());
  uint64_t unique_after_one = vol_->Usage(ctx_)->unique_bytes;
  ASSERT_TRUE(WriteFile(vol_.get(), "/b", data).ok());
  auto u = vol_->Usage(ctx_);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->unique_bytes, unique_after_one);
  EXPECT_EQ(u->files, 2u);
  EXPECT_EQ(u->logical_bytes, 100000u);
  EXPECT_EQ(u->referenced_bytes, 100000u);
}

// A hole costs nothing: no chunk is stored for it, a terabyte is a short manifest, and it
// reads back as zeros between the data around it, whole and in ranges.
TEST_F(LocalVolumeTest, HolesAreZeroChunksNeitherStoredNorHashed) {
  const std::string head = RandomBytes(10000, 5), tail = RandomBytes(3000, 6);
  const uint64_t hole = (uint64_t{3} << 20) + 12345;
  auto w = vol_->OpenWriter(ctx_, "/sparse", {});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(AsBytes(head)).ok());
  ASSERT_TRUE((*w)->WriteZeros(hole).ok());
  ASSERT_TRUE((*w)->Write(AsBytes(tail)).ok());
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, head.size() + hole + tail.size());
  // Small holes keep the MD5 ETag.
  std::string whole = head + std::string(hole, '\0') + tail;
  EXPECT_EQ(info->etag, Md5Hex(AsBytes(whole)));
  // Only the data is stored; the hole is zero chunks in the manifest.
  auto stored = chunks_->Stats();
  EXPECT_EQ(stored.raw_bytes, head.size() + tail.size());
  auto r = vol_->OpenReader(ctx_, "/sparse");
  ASSERT_TRUE(r.ok());
  uint64_t zero_bytes = 0;
  for (const ChunkRef& c : (*r)->chunks()) zero_bytes += ZeroChunkLength(c.id).value_or(0);
  EXPECT_EQ(zero_bytes, hole);
  EXPECT_EQ(*(*r)->ReadAt(0, whole.size()), whole);
  EXPECT_EQ(*(*r)->ReadAt(head.size() - 10, 100), whole.substr(head.size() - 10, 100));
  EXPECT_EQ(*(*r)->ReadAt(head.size() + hole - 5, 10), whole.substr(head.size() + hole - 5, 10));

  // A terabyte: a manifest of about 64 Ki entries, a chunk ETag, reads of zeros.
  auto big = vol_->OpenWriter(ctx_, "/huge", {});
  ASSERT_TRUE(big.ok());
  ASSERT_TRUE((*big)->Write(AsBytes(std::string("start"))).ok());
  ASSERT_TRUE((*big)->WriteZeros(uint64_t{1} << 40).ok());
  auto huge = (*big)->Commit();
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  EXPECT_EQ(huge->size, (uint64_t{1} << 40) + 5);
  EXPECT_TRUE(huge->etag.ends_with("-" + std::to_string((uint64_t{1} << 40) / kMaxZeroChunk + 1)))
      << huge->etag;
  EXPECT_EQ(chunks_->Stats().chunks, stored.chunks + 1);  // "start" only
  auto hr = vol_->OpenReader(ctx_, "/huge");
  ASSERT_TRUE(hr.ok());
  EXPECT_EQ(*(*hr)->ReadAt(0, 7), std::string("start\0\0", 7));
  EXPECT_EQ(*(*hr)->ReadAt(uint64_t{1} << 39, 4096), std::string(4096, '\0'));
  // Collecting garbage keeps both files whole.
  ASSERT_TRUE(vol_->CollectGarbage(ctx_, GcOptions{}).ok());
  EXPECT_EQ(*vol_->OpenReader(ctx_, "/sparse").value()->ReadAt(0, whole.size()), whole);
}

TEST_F(LocalVolumeTest, GarbageCollectionKeepsWhatIsReachable) {
  std::string old_bytes = RandomBytes(40000, 4);
  std::string held_bytes = RandomBytes(40000, 5);
  ASSERT_TRUE(WriteFile(vol_.get(), "/f", old_bytes).ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/held", held_bytes).ok());
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "keep", "/").ok());
  ASSERT_TRUE(vol_->Unlink(ctx_, "/held").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/f", "new content").ok());
  uint64_t unique_before = vol_->Usage(ctx_)->unique_bytes;

  // Within the retention window nothing goes.
  auto r0 = vol_->CollectGarbage(ctx_, GcOptions{});
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(r0->chunks_removed, 0u);

  // The snapshot holds the old version of /f and /held.
  clock_.AdvanceNanos(1'000'000'000);
  auto r1 = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(r1->chunks_removed, 0u);
  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/keep/held"), held_bytes);
  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/keep/f"), old_bytes);

  ASSERT_TRUE(vol_->DeleteSnapshot(ctx_, "keep").ok());
  clock_.AdvanceNanos(1'000'000'000);
  auto r2 = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(r2.ok());
  EXPECT_GT(r2->chunks_removed, 0u);
  EXPECT_GT(r2->versions_pruned, 0u);
  EXPECT_LT(vol_->Usage(ctx_)->unique_bytes, unique_before);
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "new content");
  auto versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(versions->size(), 1u);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty()) << fsck->problems[0];
}

TEST_F(LocalVolumeTest, GcNeverRemovesChunksOfAnOpenWriter) {
  std::string data = RandomBytes(30000, 6);
  auto w = vol_->OpenWriter(ctx_, "/late");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(AsBytes(data)).ok());
  clock_.AdvanceNanos(1'000'000'000);
  ASSERT_TRUE(vol_->CollectGarbage(ctx_, GcOptions{0}).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/late"), data);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, GcNeverRemovesTheVersionOfAnOpenReader) {
  std::string old_bytes = RandomBytes(40000, 8);
  ASSERT_TRUE(WriteFile(vol_.get(), "/f", old_bytes).ok());
  auto reader = vol_->OpenReader(ctx_, "/f");
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/f", "replacement").ok());
  ASSERT_TRUE(vol_->Unlink(ctx_, "/f").ok());
  clock_.AdvanceNanos(1'000'000'000);
  auto gc = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(gc.ok());
  auto got = (*reader)->ReadAt(0, old_bytes.size());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, old_bytes);

  // Once the reader is gone, the old version is collected.
  reader->reset();
  clock_.AdvanceNanos(1'000'000'000);
  gc = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(gc.ok());
  EXPECT_GT(gc->chunks_removed, 0u);
  EXPECT_EQ(vol_->Usage(ctx_)->unique_bytes, 0u);
}

TEST_F(LocalVolumeTest, ConcurrentWritersAndReaders) {
  constexpr int kThreads = 4, kFiles = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kFiles; ++i) {
        std::string path = "/t" + std::to_string(t) + "_" + std::to_string(i);
        std::string data = RandomBytes(5000 + i, t * 100 + i);
        ASSERT_TRUE(WriteFile(vol_.get(), path, data).ok());
        ASSERT_EQ(*ReadFile(vol_.get(), path), data);
        ASSERT_TRUE(WriteFile(vol_.get(), "/shared", data).ok());
        auto shared = ReadFile(vol_.get(), "/shared");
        ASSERT_TRUE(shared.ok());  // whatever version, never torn
        auto st = vol_->Stat(ctx_, "/shared");
        ASSERT_TRUE(st.ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  ReadDirOptions opts;
  opts.limit = 1000;
  EXPECT_EQ(vol_->ReadDir(ctx_, "/", opts)->entries.size(), kThreads * kFiles + 1u);
}

TEST_F(LocalVolumeTest, CommitAllIsAtomic) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/dir").ok());
  uint64_t before = LastSequence();
  auto batch = [&](std::vector<std::pair<std::string, std::string>> files) {
    std::vector<std::unique_ptr<FileWriter>> writers;
    for (auto& [path, data] : files) {
      WriteOptions opts;
      opts.create_parents = true;
      auto w = vol_->OpenWriter(ctx_, path, opts);
      EXPECT_TRUE(w.ok()) << path;
      EXPECT_TRUE((*w)->Write(AsBytes(data)).ok());
      writers.push_back(std::move(w).value());
    }
    return vol_->CommitAll(ctx_, std::move(writers));
  };
  std::string big = RandomBytes(20000, 7);
  auto infos = batch({{"/b/one", "1"}, {"/b/two", big}, {"/b/one", "1 again"}});
  ASSERT_TRUE(infos.ok()) << infos.status().ToString();
  ASSERT_EQ(infos->size(), 3u);
  EXPECT_EQ(*ReadFile(vol_.get(), "/b/one"), "1 again");
  EXPECT_EQ(*ReadFile(vol_.get(), "/b/two"), big);
  EXPECT_EQ(vol_->ListVersions(ctx_, "/b/one")->size(), 2u);
  auto changes = vol_->ReadChanges(ctx_, before, 100);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->size(), 3u);  // one feed record per file, in order
  EXPECT_EQ((*changes)[1].path, "/b/two");
  EXPECT_LT((*changes)[0].sequence, (*changes)[2].sequence);

  // One bad file: nothing of the batch becomes visible.
  uint64_t after_first = LastSequence();
  ASSERT_TRUE(WriteFile(vol_.get(), "/dir/x", "x").ok());
  WriteOptions with_parents;
  with_parents.create_parents = true;
  auto w1 = vol_->OpenWriter(ctx_, "/c/new", with_parents);
  ASSERT_TRUE(w1.ok());
  auto w2 = vol_->OpenWriter(ctx_, "/dir/sub");
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/dir/sub").ok());  // the second now targets a directory
  std::vector<std::unique_ptr<FileWriter>> writers;
  writers.push_back(std::move(w1).value());
  writers.push_back(std::move(w2).value());
  EXPECT_EQ(vol_->CommitAll(ctx_, std::move(writers)).status().code(), StatusCode::kIsADirectory);
  EXPECT_EQ(vol_->Stat(ctx_, "/c").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LastSequence(), after_first + 2);  // the write of /dir/x and the mkdir only
}

WriteOptions WithEtag(std::string etag) {
  WriteOptions opts;
  opts.etag = std::move(etag);
  return opts;
}

TEST_F(LocalVolumeTest, AttributesTravelWithTheirVersion) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d").ok());
  WriteOptions opts;
  opts.attributes = {{"content-type", "text/plain"}, {"x-amz-meta-a", std::string("\0b", 2)}};
  auto v1 = WriteFile(vol_.get(), "/d/f", "first", opts);
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->attributes, opts.attributes);
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "s1", "/").ok());
  WriteOptions opts2;
  opts2.attributes = {{"content-type", "application/json"}};
  auto v2 = WriteFile(vol_.get(), "/d/f", "second", opts2);
  ASSERT_TRUE(v2.ok());

  EXPECT_EQ(vol_->Stat(ctx_, "/d/f")->attributes, opts2.attributes);
  ReadDirOptions with_info;
  with_info.with_info = true;
  auto page = vol_->ReadDir(ctx_, "/d", with_info);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 1u);
  EXPECT_EQ(page->entries[0].info->attributes, opts2.attributes);
  EXPECT_EQ((*vol_->OpenReader(ctx_, "/d/f"))->info().attributes, opts2.attributes);
  auto old = vol_->OpenVersion(ctx_, "/d/f", v1->version_id);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)->info().attributes, opts.attributes);
  EXPECT_EQ(vol_->Stat(ctx_, "/.weft/snapshots/s1/d/f")->attributes, opts.attributes);
  ReadOptions at;
  at.snapshot = "s1";
  EXPECT_EQ((*vol_->OpenReader(ctx_, "/d/f", at))->info().attributes, opts.attributes);

  // setattr keeps the version's attributes; a version without any has none.
  SetAttrRequest chmod;
  chmod.mode = 0600;
  EXPECT_EQ(vol_->SetAttr(ctx_, "/d/f", chmod)->attributes, opts2.attributes);
  EXPECT_TRUE(WriteFile(vol_.get(), "/d/f", "third")->attributes.empty());
  EXPECT_TRUE(vol_->Stat(ctx_, "/d")->attributes.empty());
}

TEST_F(LocalVolumeTest, AttributeAndEtagLimits) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/dir").ok());
  uint64_t before = LastSequence();
  auto bad_attributes = [&](Attributes attributes) {
    WriteOptions opts;
    opts.attributes = std::move(attributes);
    return vol_->OpenWriter(ctx_, "/f", opts).status().code();
  };
  Attributes many;
  for (int i = 0; i < 65; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_EQ(bad_attributes(many), StatusCode::kInvalidArgument);
  many.erase(many.begin());
  EXPECT_EQ(bad_attributes(many), StatusCode::kOk);
  EXPECT_EQ(bad_attributes({{"", "v"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_attributes({{std::string(257, 'n'), "v"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_attributes({{std::string(256, 'n'), "v"}}), StatusCode::kOk);
  EXPECT_EQ(bad_attributes({{"a", std::string(8191, 'v')}}), StatusCode::kOk);
  EXPECT_EQ(bad_attributes({{"a", std::string(8192, 'v')}}), StatusCode::kInvalidArgument);

  for (const std::string& etag : {std::string(), std::string(65, 'e'), std::string("a\"b"),
                                  std::string("tab\t"), std::string("\x80")}) {
    EXPECT_EQ(vol_->OpenWriter(ctx_, "/f", WithEtag(etag)).status().code(),
              StatusCode::kInvalidArgument)
        << etag;
  }
  EXPECT_TRUE(vol_->OpenWriter(ctx_, "/f", WithEtag(std::string(64, 'e'))).ok());

  SetAttrRequest req;
  req.attributes = many;
  (*req.attributes)["one too many"] = "x";
  EXPECT_EQ(vol_->SetAttr(ctx_, "/dir", req).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LastSequence(), before);
}

TEST_F(LocalVolumeTest, SetAttrReplacesDirectoryAttributesOnly) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/bucket").ok());
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "before", "/").ok());
  uint64_t before = LastSequence();
  SetAttrRequest req;
  req.attributes = Attributes{{"s3.versioning", "Enabled"}, {"s3.region", "local"}};
  auto set = vol_->SetAttr(ctx_, "/bucket", req);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->attributes, *req.attributes);
  EXPECT_EQ(vol_->Stat(ctx_, "/bucket")->attributes, *req.attributes);
  ReadDirOptions with_info;
  with_info.with_info = true;
  EXPECT_EQ(vol_->ReadDir(ctx_, "/", with_info)->entries[0].info->attributes, *req.attributes);
  EXPECT_TRUE(vol_->Stat(ctx_, "/.weft/snapshots/before/bucket")->attributes.empty());
  auto changes = vol_->ReadChanges(ctx_, before, 10);
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ((*changes)[0].op, "setattr");
  EXPECT_EQ((*changes)[0].path, "/bucket");

  // Other fields leave them alone; an empty map clears them; the root has them too.
  SetAttrRequest chmod;
  chmod.mode = 0700;
  EXPECT_EQ(vol_->SetAttr(ctx_, "/bucket", chmod)->attributes, *req.attributes);
  req.attributes = Attributes{};
  EXPECT_TRUE(vol_->SetAttr(ctx_, "/bucket", req)->attributes.empty());
  req.attributes = Attributes{{"k", "v"}};
  EXPECT_EQ(vol_->SetAttr(ctx_, "/", req)->attributes, *req.attributes);

  // A file's current version is described anew in place: same id, same bytes; the version
  // before keeps what it had.
  auto v1 = WriteFile(vol_.get(), "/bucket/f", "x");
  ASSERT_TRUE(v1.ok());
  auto on_file = vol_->SetAttr(ctx_, "/bucket/f", req);
  ASSERT_TRUE(on_file.ok()) << on_file.status().ToString();
  EXPECT_EQ(on_file->attributes, *req.attributes);
  EXPECT_EQ(on_file->version_id, v1->version_id);
  EXPECT_EQ(vol_->Stat(ctx_, "/bucket/f")->attributes, *req.attributes);
  EXPECT_EQ(*ReadFile(vol_.get(), "/bucket/f"), "x");
  auto v2 = WriteFile(vol_.get(), "/bucket/f", "y");
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE(v2->attributes.empty());
  auto old = vol_->OpenVersion(ctx_, "/bucket/f", v1->version_id);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)->info().attributes, *req.attributes);
}

TEST_F(LocalVolumeTest, CallerEtagReplacesTheMd5) {
  std::string data = RandomBytes(50000, 11);
  auto info = WriteFile(vol_.get(), "/mp", data, WithEtag("0123abcd-3"));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->etag, "0123abcd-3");
  EXPECT_EQ(vol_->Stat(ctx_, "/mp")->etag, "0123abcd-3");
  EXPECT_EQ((*vol_->ListVersions(ctx_, "/mp"))[0].etag, "0123abcd-3");
  EXPECT_EQ(*ReadFile(vol_.get(), "/mp"), data);
  EXPECT_EQ(WriteFile(vol_.get(), "/plain", data)->etag, Md5Hex(AsBytes(data)));
}

// Over md5_etag_limit a file's ETag comes from its chunks: "<32 hex>-<chunks>", the same for
// the same bytes, another for other bytes; at or under it, the MD5 as ever.
TEST_F(LocalVolumeTest, LargeFilesCanTakeAChunkEtagInsteadOfTheMd5) {
  WriteOptions limited;
  limited.md5_etag_limit = 100000;
  const std::string data = RandomBytes(300000, 31);
  auto big = WriteFile(vol_.get(), "/big", data, limited, 64 << 10);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_NE(big->etag, Md5Hex(AsBytes(data)));
  ASSERT_GT(big->chunks, 1u);
  EXPECT_TRUE(big->etag.ends_with("-" + std::to_string(big->chunks))) << big->etag;
  EXPECT_EQ(big->etag.find('-'), 32u);
  EXPECT_EQ(vol_->Stat(ctx_, "/big")->etag, big->etag);
  EXPECT_EQ(*ReadFile(vol_.get(), "/big"), data);
  EXPECT_EQ(WriteFile(vol_.get(), "/again", data, limited)->etag, big->etag);
  std::string other = data;
  other[150000] ^= 1;
  EXPECT_NE(WriteFile(vol_.get(), "/other", other, limited)->etag, big->etag);
  const std::string small = data.substr(0, 100000);
  EXPECT_EQ(WriteFile(vol_.get(), "/small", small, limited)->etag, Md5Hex(AsBytes(small)));
  EXPECT_EQ(WriteFile(vol_.get(), "/plain", data)->etag, Md5Hex(AsBytes(data)));

  // An expected size decides from the first byte (no MD5 is begun for a file known to be
  // large), and the decision stands if fewer bytes come; under the limit it changes nothing.
  WriteOptions expected_large = limited;
  expected_large.expected_size = data.size();
  EXPECT_EQ(WriteFile(vol_.get(), "/hinted", data, expected_large)->etag, big->etag);
  auto shrunk = WriteFile(vol_.get(), "/shrunk", small, expected_large);
  ASSERT_TRUE(shrunk.ok()) << shrunk.status().ToString();
  EXPECT_EQ(shrunk->etag.find('-'), 32u) << shrunk->etag;
  WriteOptions expected_small = limited;
  expected_small.expected_size = small.size();
  EXPECT_EQ(WriteFile(vol_.get(), "/hinted-small", small, expected_small)->etag,
            Md5Hex(AsBytes(small)));

  // Past 1 MiB without an MD5, chunks are hashed and stored on a helper thread: the same
  // chunks and bytes as when stored inline; a writer dropped mid-stream commits nothing.
  const std::string large = RandomBytes(5 << 20, 32);
  auto piped = WriteFile(vol_.get(), "/large", large, limited, 1 << 20);
  ASSERT_TRUE(piped.ok()) << piped.status().ToString();
  auto inline_info = WriteFile(vol_.get(), "/large-inline", large, WithEtag("x"), 1 << 20);
  ASSERT_TRUE(inline_info.ok());
  EXPECT_EQ(piped->chunks, inline_info->chunks);
  EXPECT_EQ(*ReadFile(vol_.get(), "/large"), large);
  auto reader = vol_->OpenReader(ctx_, "/large");
  auto reader_inline = vol_->OpenReader(ctx_, "/large-inline");
  ASSERT_TRUE(reader.ok() && reader_inline.ok());
  ASSERT_EQ((*reader)->chunks().size(), (*reader_inline)->chunks().size());
  for (size_t i = 0; i < (*reader)->chunks().size(); ++i) {
    EXPECT_EQ((*reader)->chunks()[i].id, (*reader_inline)->chunks()[i].id) << i;
  }
  {
    auto dropped = vol_->OpenWriter(ctx_, "/dropped", limited);
    ASSERT_TRUE(dropped.ok());
    const std::string other_large = RandomBytes(3 << 20, 33);
    ASSERT_TRUE((*dropped)->Write(AsBytes(other_large)).ok());
  }
  EXPECT_EQ(vol_->Stat(ctx_, "/dropped").status().code(), StatusCode::kNotFound);
}

TEST_F(LocalVolumeTest, AppendFromConcatenatesWithoutStoringBytes) {
  std::vector<std::string> parts = {RandomBytes(30000, 21), RandomBytes(5, 22),
                                    RandomBytes(45000, 23)};
  uint64_t source_chunks = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto info = WriteFile(vol_.get(), "/part" + std::to_string(i), parts[i]);
    ASSERT_TRUE(info.ok());
    source_chunks += info->chunks;
  }
  const ChunkStoreStats stored_before = chunks_->Stats();
  const uint64_t unique_before = vol_->Usage(ctx_)->unique_bytes;

  WriteOptions opts = WithEtag("abc-3");
  opts.attributes = {{"content-type", "video/mp4"}};
  auto w = vol_->OpenWriter(ctx_, "/whole", opts);
  ASSERT_TRUE(w.ok());
  for (size_t i = 0; i < parts.size(); ++i) {
    auto r = vol_->OpenReader(ctx_, "/part" + std::to_string(i));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE((*w)->AppendFrom(**r).ok());
  }
  EXPECT_EQ((*w)->bytes_written(), 75005u);
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 75005u);
  EXPECT_EQ(info->etag, "abc-3");
  EXPECT_EQ(info->chunks, source_chunks);
  EXPECT_EQ(info->attributes, opts.attributes);
  EXPECT_EQ(*ReadFile(vol_.get(), "/whole"), parts[0] + parts[1] + parts[2]);
  auto reader = vol_->OpenReader(ctx_, "/whole");
  EXPECT_EQ(*(*reader)->ReadAt(29998, 10), (parts[0] + parts[1] + parts[2]).substr(29998, 10));

  const ChunkStoreStats stored_after = chunks_->Stats();
  EXPECT_EQ(stored_after.chunks, stored_before.chunks);
  EXPECT_EQ(stored_after.raw_bytes, stored_before.raw_bytes);
  auto usage = vol_->Usage(ctx_);
  EXPECT_EQ(usage->unique_bytes, unique_before);
  EXPECT_EQ(usage->referenced_bytes, 2 * 75005u);

  // A copy is an append of one source: same bytes, same etag when the caller passes it.
  auto src = vol_->OpenReader(ctx_, "/part0");
  auto copy = vol_->OpenWriter(ctx_, "/copy", WithEtag((*src)->info().etag));
  ASSERT_TRUE((*copy)->AppendFrom(**src).ok());
  EXPECT_EQ((*copy)->Commit()->etag, Md5Hex(AsBytes(parts[0])));
  EXPECT_EQ(*ReadFile(vol_.get(), "/copy"), parts[0]);
  EXPECT_EQ(chunks_->Stats().raw_bytes, stored_before.raw_bytes);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, AppendFromNeedsACallerEtag) {
  ASSERT_TRUE(WriteFile(vol_.get(), "/src", "bytes").ok());
  auto r = vol_->OpenReader(ctx_, "/src");
  auto w = vol_->OpenWriter(ctx_, "/dst");
  Status s = (*w)->AppendFrom(**r);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("WriteOptions::etag"), std::string::npos);
}

TEST_F(LocalVolumeTest, ChunkLevelReadAndWriteKeepBoundaries) {
  const std::string data = RandomBytes(300000, 41);
  ASSERT_TRUE(WriteFile(vol_.get(), "/src", data).ok());
  auto r = vol_->OpenReader(ctx_, "/src");
  ASSERT_TRUE(r.ok());
  const std::vector<ChunkRef> chunks = (*r)->chunks();
  ASSERT_GT(chunks.size(), 1u);
  std::string joined;
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto piece = (*r)->ReadChunk(i);
    ASSERT_TRUE(piece.ok());
    EXPECT_EQ((*piece)->size(), chunks[i].length);
    joined += **piece;
  }
  EXPECT_EQ(joined, data);
  EXPECT_EQ((*r)->ReadChunk(chunks.size()).status().code(), StatusCode::kOutOfRange);

  // The volume holds every chunk of /src, not a new one.
  const std::string fresh = RandomBytes(5000, 42);
  const ChunkId fresh_id = ChunkId::Of(AsBytes(fresh));
  auto missing = vol_->MissingChunks(ctx_, {chunks[0].id, fresh_id, chunks[1].id});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, std::vector<ChunkId>{fresh_id});

  // A spoke's write: the held chunks by id, the new one with its bytes, boundaries kept.
  auto w = vol_->OpenWriter(ctx_, "/dst", WithEtag(Md5Hex(AsBytes(data + fresh))));
  ASSERT_TRUE(w.ok());
  for (const ChunkRef& c : chunks) ASSERT_TRUE((*w)->AppendChunk(c, std::nullopt).ok());
  ASSERT_TRUE((*w)->AppendChunk({fresh_id, 5000}, AsBytes(fresh)).ok());
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->chunks, chunks.size() + 1);
  EXPECT_EQ(*ReadFile(vol_.get(), "/dst"), data + fresh);
  EXPECT_TRUE(vol_->MissingChunks(ctx_, {fresh_id})->empty());
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, AppendChunkRejectsWhatItCannotTrust) {
  const std::string bytes = RandomBytes(4000, 43);
  const ChunkRef ref{ChunkId::Of(AsBytes(bytes)), 4000};
  // Bytes that do not hash to the id, or a wrong length: nothing is committed.
  auto w = vol_->OpenWriter(ctx_, "/x", WithEtag("e"));
  Status s = (*w)->AppendChunk(ref, AsBytes(bytes.substr(1)));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE((*w)->Commit().ok());
  w = vol_->OpenWriter(ctx_, "/x", WithEtag("e"));
  std::string flipped = bytes;
  flipped[7] ^= 1;
  EXPECT_EQ((*w)->AppendChunk(ref, AsBytes(flipped)).code(), StatusCode::kInvalidArgument);
  // A chunk the volume lacks cannot be named without its bytes.
  w = vol_->OpenWriter(ctx_, "/x", WithEtag("e"));
  EXPECT_EQ((*w)->AppendChunk(ref, std::nullopt).code(), StatusCode::kFailedPrecondition);
  // And, like AppendFrom, the ETag must come from the caller.
  w = vol_->OpenWriter(ctx_, "/x");
  EXPECT_EQ((*w)->AppendChunk(ref, AsBytes(bytes)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(vol_->Stat(ctx_, "/x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->MissingChunks(ctx_, {ref.id})->size(), 1u);
}

TEST_F(LocalVolumeTest, AppendFromMixesWithWrites) {
  std::string a = RandomBytes(20000, 31), b = RandomBytes(7000, 32);
  ASSERT_TRUE(WriteFile(vol_.get(), "/a", a).ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/b", b).ok());
  auto ra = vol_->OpenReader(ctx_, "/a");
  auto rb = vol_->OpenReader(ctx_, "/b");
  std::string head = RandomBytes(3000, 33), mid = "middle", tail = RandomBytes(9000, 34);
  auto w = vol_->OpenWriter(ctx_, "/mixed", WithEtag("mixed"));
  ASSERT_TRUE((*w)->Write(AsBytes(head)).ok());
  ASSERT_TRUE((*w)->AppendFrom(**ra).ok());
  ASSERT_TRUE((*w)->Write(AsBytes(mid)).ok());
  ASSERT_TRUE((*w)->AppendFrom(**rb).ok());
  ASSERT_TRUE((*w)->AppendFrom(**ra).ok());
  ASSERT_TRUE((*w)->Write(AsBytes(tail)).ok());
  auto info = (*w)->Commit();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  const std::string want = head + a + mid + b + a + tail;
  EXPECT_EQ(info->size, want.size());
  EXPECT_EQ(*ReadFile(vol_.get(), "/mixed"), want);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, AppendFromAnotherVolumeCopiesTheBytes) {
  LocalVolumeOptions opts;
  opts.chunker = SmallChunks();
  auto other = NewLocalVolume(std::shared_ptr<KvStore>(NewMemKvStore()),
                              std::shared_ptr<ChunkStore>(NewMemChunkStore()), opts);
  ASSERT_TRUE(other.ok());
  std::string data = RandomBytes(3 * 1024 * 1024 + 17, 41);  // several 1 MiB pieces
  ASSERT_TRUE(WriteFile(other->get(), "/far", data).ok());
  auto r = (*other)->OpenReader(ctx_, "/far");
  auto w = vol_->OpenWriter(ctx_, "/near", WithEtag("copied"));
  ASSERT_TRUE((*w)->Write(AsBytes(std::string("<"))).ok());
  ASSERT_TRUE((*w)->AppendFrom(**r).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/near"), "<" + data);
  EXPECT_GE(chunks_->Stats().raw_bytes, data.size());
}

TEST_F(LocalVolumeTest, GcKeepsChunksAppendedToAnOpenWriter) {
  std::string data = RandomBytes(40000, 51);
  ASSERT_TRUE(WriteFile(vol_.get(), "/src", data).ok());
  auto w = vol_->OpenWriter(ctx_, "/dst", WithEtag("e"));
  {
    auto r = vol_->OpenReader(ctx_, "/src");
    ASSERT_TRUE((*w)->AppendFrom(**r).ok());
  }  // the reader's pin is gone; only the writer references the chunks now
  ASSERT_TRUE(vol_->Unlink(ctx_, "/src").ok());
  clock_.AdvanceNanos(1'000'000'000);
  auto gc = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(gc.ok());
  EXPECT_GT(gc->versions_pruned, 0u);
  EXPECT_EQ(gc->chunks_removed, 0u);
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_EQ(*ReadFile(vol_.get(), "/dst"), data);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());

  // An aborted writer lets them go.
  auto w2 = vol_->OpenWriter(ctx_, "/dst2", WithEtag("e"));
  {
    auto r = vol_->OpenReader(ctx_, "/dst");
    ASSERT_TRUE((*w2)->AppendFrom(**r).ok());
  }
  (*w2)->Abort();
  ASSERT_TRUE(vol_->Unlink(ctx_, "/dst").ok());
  clock_.AdvanceNanos(1'000'000'000);
  gc = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(gc.ok());
  EXPECT_GT(gc->chunks_removed, 0u);
  EXPECT_EQ(vol_->Usage(ctx_)->unique_bytes, 0u);
}

TEST_F(LocalVolumeTest, DeleteNonCurrentVersion) {
  auto v1 = WriteFile(vol_.get(), "/f", RandomBytes(20000, 61));
  auto v2 = WriteFile(vol_.get(), "/f", RandomBytes(20000, 62));
  auto v3 = WriteFile(vol_.get(), "/f", "three");
  ASSERT_TRUE(v1.ok() && v2.ok() && v3.ok());
  auto pinned = vol_->OpenVersion(ctx_, "/f", v2->version_id);
  ASSERT_TRUE(pinned.ok());
  uint64_t before = LastSequence();

  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", v2->version_id).ok());
  auto versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].version_id, v3->version_id);
  EXPECT_EQ((*versions)[1].version_id, v1->version_id);
  EXPECT_EQ(vol_->OpenVersion(ctx_, "/f", v2->version_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/f", v2->version_id).code(), StatusCode::kNotFound);
  auto changes = vol_->ReadChanges(ctx_, before, 10);
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ((*changes)[0].op, "delete-version");
  EXPECT_EQ((*changes)[0].path2, v2->version_id);
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "three");

  // Its bytes are garbage at once (v1 stays, inside the retention window), but not while a
  // reader still reads them.
  auto gc = vol_->CollectGarbage(ctx_, GcOptions{});
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->chunks_removed, 0u);
  EXPECT_EQ((*pinned)->ReadAt(0, 5)->size(), 5u);
  pinned->reset();
  gc = vol_->CollectGarbage(ctx_, GcOptions{});
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->versions_pruned, 1u);
  EXPECT_GT(gc->chunks_removed, 0u);
  EXPECT_EQ(vol_->ListVersions(ctx_, "/f")->size(), 2u);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());

  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/f", "99.99").code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/f", "junk").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/nope", v1->version_id).code(), StatusCode::kNotFound);
  auto other = WriteFile(vol_.get(), "/g", "g");
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/f", other->version_id).code(), StatusCode::kNotFound);
}

TEST_F(LocalVolumeTest, DeleteVersionHeldBySnapshotIsRefused) {
  auto v1 = WriteFile(vol_.get(), "/f", "one");
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "snap", "/").ok());
  auto v2 = WriteFile(vol_.get(), "/f", "two");
  uint64_t before = LastSequence();
  for (const std::string& id : {v1->version_id, v2->version_id}) {
    Status s = vol_->DeleteVersion(ctx_, "/f", id);
    EXPECT_EQ(s.code(), id == v1->version_id ? StatusCode::kFailedPrecondition : StatusCode::kOk);
    if (!s.ok()) {
      EXPECT_NE(s.message().find("held by snapshot snap"), std::string::npos) << s.ToString();
    }
  }
  EXPECT_EQ(LastSequence(), before + 1);  // only v2's removal
  EXPECT_EQ(*ReadFile(vol_.get(), "/.weft/snapshots/snap/f"), "one");
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "one");  // v1 is current again
}

TEST_F(LocalVolumeTest, DeleteCurrentVersionRestoresThePreviousOne) {
  WriteOptions typed;
  typed.attributes = {{"content-type", "text/plain"}};
  typed.mtime_ns = 777;
  auto v1 = WriteFile(vol_.get(), "/f", "one", typed);
  auto v2 = WriteFile(vol_.get(), "/f", "two");
  ASSERT_TRUE(v1.ok() && v2.ok());
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", v2->version_id).ok());
  auto st = vol_->Stat(ctx_, "/f");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->version_id, v1->version_id);
  EXPECT_EQ(st->etag, v1->etag);
  EXPECT_EQ(st->size, 3u);
  EXPECT_EQ(st->mtime_ns, 777);
  EXPECT_EQ(st->attributes, typed.attributes);
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "one");
  auto versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_TRUE((*versions)[0].is_current);
  EXPECT_EQ((*versions)[0].version_id, v1->version_id);

  // New writes continue from the restored version.
  auto v3 = WriteFile(vol_.get(), "/f", "three");
  versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].version_id, v3->version_id);
  EXPECT_EQ((*versions)[1].version_id, v1->version_id);

  // The last version: the path goes, leaving no versions and no delete marker.
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", v1->version_id).ok());
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", v3->version_id).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/f").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(vol_->ListVersions(ctx_, "/f").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Names("/").empty());
  clock_.AdvanceNanos(1'000'000'000);
  ASSERT_TRUE(vol_->CollectGarbage(ctx_, GcOptions{0}).ok());
  EXPECT_EQ(vol_->Usage(ctx_)->unique_bytes, 0u);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, DeleteCurrentVersionBehindADeleteMarkerRemovesThePath) {
  auto v1 = WriteFile(vol_.get(), "/f", "one");
  ASSERT_TRUE(vol_->Unlink(ctx_, "/f").ok());
  auto v2 = WriteFile(vol_.get(), "/f", "two");
  ASSERT_TRUE(v1.ok() && v2.ok());
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", v2->version_id).ok());
  // As in S3, the newest remaining entry is the delete marker: the object stays deleted.
  EXPECT_EQ(vol_->Stat(ctx_, "/f").status().code(), StatusCode::kNotFound);
  auto versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_TRUE((*versions)[0].is_delete_marker);
  EXPECT_EQ((*versions)[1].version_id, v1->version_id);
  // A non-current version of a deleted path can still go.
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", v1->version_id).ok());
  EXPECT_EQ(vol_->OpenVersion(ctx_, "/f", v1->version_id).status().code(), StatusCode::kNotFound);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, DeletingTheNewestDeleteMarkerRestoresTheVersionBeforeIt) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d", 0755, false).ok());
  auto v1 = WriteFile(vol_.get(), "/d/f", "one");
  ASSERT_TRUE(v1.ok());
  clock_.AdvanceNanos(5'000'000'000);
  const int64_t deleted_at = clock_.NowNanos();
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d/f").ok());
  auto versions = vol_->ListVersions(ctx_, "/d/f");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  const VersionInfo marker = (*versions)[0];
  ASSERT_TRUE(marker.is_delete_marker);
  EXPECT_EQ(marker.mtime_ns, deleted_at);  // a marker is dated by its delete
  EXPECT_LT((*versions)[1].mtime_ns, deleted_at);
  auto snap = vol_->CreateSnapshot(ctx_, "deleted");
  ASSERT_TRUE(snap.ok());

  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/d/f", marker.version_id).ok());
  // The object is back, as it was, under its own version id; the marker is gone.
  auto info = vol_->Stat(ctx_, "/d/f");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->version_id, v1->version_id);
  EXPECT_EQ(*ReadFile(vol_.get(), "/d/f"), "one");
  versions = vol_->ListVersions(ctx_, "/d/f");
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_TRUE((*versions)[0].is_current);
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/d/f", marker.version_id).code(), StatusCode::kNotFound);
  // The snapshot taken while it was deleted still reads it deleted.
  ReadOptions as_of;
  as_of.snapshot = "deleted";
  EXPECT_EQ(vol_->Stat(ctx_, "/d/f", as_of).status().code(), StatusCode::kNotFound);
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, DeletingAnOlderDeleteMarkerOnlyHidesIt) {
  auto v1 = WriteFile(vol_.get(), "/f", "one");
  ASSERT_TRUE(vol_->Unlink(ctx_, "/f").ok());
  auto v2 = WriteFile(vol_.get(), "/f", "two");
  ASSERT_TRUE(v1.ok() && v2.ok());
  auto versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_EQ(versions->size(), 3u);
  ASSERT_TRUE((*versions)[1].is_delete_marker);
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/f", (*versions)[1].version_id).ok());
  versions = vol_->ListVersions(ctx_, "/f");
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].version_id, v2->version_id);
  EXPECT_EQ((*versions)[1].version_id, v1->version_id);
  EXPECT_EQ(*ReadFile(vol_.get(), "/f"), "two");
}

TEST_F(LocalVolumeTest, ReadDirCanIncludeRemovedNamesWithVersions) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d", 0755, false).ok());
  for (const char* name : {"/d/a", "/d/b", "/d/c", "/d/e"}) {
    ASSERT_TRUE(WriteFile(vol_.get(), name, name).ok());
  }
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d/b").ok());
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d/e").ok());
  ASSERT_TRUE(vol_->Unlink(ctx_, "/d/c").ok());
  ASSERT_TRUE(WriteFile(vol_.get(), "/d/c", "again").ok());
  auto names = [&](ReadDirOptions opts) {
    std::vector<std::string> out;
    auto page = vol_->ReadDir(ctx_, "/d", opts);
    EXPECT_TRUE(page.ok());
    for (const DirEntry& e : page->entries) out.push_back(e.name + (e.removed ? "-" : ""));
    if (page->truncated) out.push_back("...");
    return out;
  };
  ReadDirOptions opts;
  EXPECT_EQ(names(opts), (std::vector<std::string>{"a", "c"}));
  opts.include_removed = true;
  EXPECT_EQ(names(opts), (std::vector<std::string>{"a", "b-", "c", "e-"}));
  opts.limit = 2;
  EXPECT_EQ(names(opts), (std::vector<std::string>{"a", "b-", "..."}));
  opts.start_after = "b";
  EXPECT_EQ(names(opts), (std::vector<std::string>{"c", "e-"}));
  opts.with_info = true;
  auto page = vol_->ReadDir(ctx_, "/d", opts);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->entries[0].info.has_value());
  EXPECT_FALSE(page->entries[1].info.has_value());
  // A removed directory is not listed (its files cannot be named any more), and many short
  // removed names page like any others.
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/d/sub", 0755, false).ok());
  ASSERT_TRUE(vol_->Rmdir(ctx_, "/d/sub").ok());
  std::vector<std::string> expected = {"a", "b-", "c", "e-"};
  for (int i = 0; i < 40; ++i) {
    const std::string name = "f" + std::to_string(100 + i);
    ASSERT_TRUE(WriteFile(vol_.get(), "/d/" + name, "x").ok());
    ASSERT_TRUE(vol_->Unlink(ctx_, "/d/" + name).ok());
    expected.push_back(name + "-");
  }
  std::sort(expected.begin(), expected.end());
  ReadDirOptions all;
  all.include_removed = true;
  all.limit = 7;
  std::vector<std::string> listed;
  while (true) {
    auto p = vol_->ReadDir(ctx_, "/d", all);
    ASSERT_TRUE(p.ok());
    for (const DirEntry& e : p->entries) {
      listed.push_back(e.name + (e.removed ? "-" : ""));
      all.start_after = e.name;
    }
    if (!p->truncated) break;
  }
  EXPECT_EQ(listed, expected);
}

TEST_F(LocalVolumeTest, DeleteCurrentVersionRestoresAFileReplacedByRename) {
  auto v1 = WriteFile(vol_.get(), "/a", "old a");
  auto b = WriteFile(vol_.get(), "/b", "b");
  ASSERT_TRUE(vol_->Rename(ctx_, "/b", "/a").ok());
  ASSERT_TRUE(vol_->DeleteVersion(ctx_, "/a", b->version_id).ok());
  EXPECT_EQ(vol_->Stat(ctx_, "/a")->version_id, v1->version_id);
  EXPECT_EQ(*ReadFile(vol_.get(), "/a"), "old a");
  auto versions = vol_->ListVersions(ctx_, "/a");
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_TRUE((*versions)[0].is_current);

  // The current content of a file that moved away is not a version to delete from here.
  ASSERT_TRUE(vol_->Rename(ctx_, "/a", "/c").ok());
  EXPECT_EQ(vol_->DeleteVersion(ctx_, "/a", v1->version_id).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(*ReadFile(vol_.get(), "/c"), "old a");
  auto fsck = vol_->Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_F(LocalVolumeTest, KeepVersionsAttributeStopsPruning) {
  ASSERT_TRUE(vol_->Mkdir(ctx_, "/bucket").ok());
  SetAttrRequest keep;
  keep.attributes = Attributes{{kKeepVersionsAttribute, "all"}};
  ASSERT_TRUE(vol_->SetAttr(ctx_, "/bucket", keep).ok());
  WriteOptions parents;
  parents.create_parents = true;
  for (const char* path : {"/bucket/deep/f", "/bucket/g", "/other"}) {
    ASSERT_TRUE(WriteFile(vol_.get(), path, RandomBytes(5000, 71), parents).ok());
    ASSERT_TRUE(WriteFile(vol_.get(), path, path).ok());
  }
  ASSERT_TRUE(vol_->Unlink(ctx_, "/bucket/g").ok());
  clock_.AdvanceNanos(1'000'000'000);
  auto gc = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->versions_pruned, 1u);  // /other's old version only
  EXPECT_EQ(vol_->ListVersions(ctx_, "/bucket/deep/f")->size(), 2u);
  EXPECT_EQ(vol_->ListVersions(ctx_, "/bucket/g")->size(), 3u);  // marker + two versions
  EXPECT_EQ(vol_->ListVersions(ctx_, "/other")->size(), 1u);
  auto versions = vol_->ListVersions(ctx_, "/bucket/deep/f");
  EXPECT_EQ(
      *(*vol_->OpenVersion(ctx_, "/bucket/deep/f", (*versions)[1].version_id))->ReadAt(0, 10000),
      RandomBytes(5000, 71));

  // Any other value, or none, lets them go.
  keep.attributes = Attributes{{kKeepVersionsAttribute, "none"}};
  ASSERT_TRUE(vol_->SetAttr(ctx_, "/bucket", keep).ok());
  gc = vol_->CollectGarbage(ctx_, GcOptions{0});
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->versions_pruned, 3u);
  EXPECT_EQ(vol_->ListVersions(ctx_, "/bucket/deep/f")->size(), 1u);
  EXPECT_EQ(vol_->ListVersions(ctx_, "/bucket/g").status().code(), StatusCode::kNotFound);
}

TEST_F(LocalVolumeTest, ReopenKeepsEverything) {
  ASSERT_TRUE(WriteFile(vol_.get(), "/persist", "bytes").ok());
  ASSERT_TRUE(vol_->CreateSnapshot(ctx_, "s", "/").ok());
  vol_.reset();
  LocalVolumeOptions opts;
  opts.chunker = SmallChunks();
  auto again = NewLocalVolume(kv_, chunks_, opts);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*ReadFile(again->get(), "/persist"), "bytes");
  ASSERT_TRUE(WriteFile(again->get(), "/second", "more").ok());
  EXPECT_EQ(*ReadFile(again->get(), "/.weft/snapshots/s/persist"), "bytes");
}

}  // namespace
}  // namespace weft
