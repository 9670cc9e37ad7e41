// The KvStore contract, run against MemKvStore and RocksKvStore, then RocksDB-only behaviour:
// persistence across reopen and the data-directory lock.
#include "meta/kv_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

namespace weft {
namespace {

std::string MakeTempDir() {
  std::string tmpl = testing::TempDir() + "weft_kv_test_XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return {};
  return tmpl;
}

void RemoveTree(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

using Entries = std::vector<std::pair<std::string, std::string>>;

// Every entry from `start` onwards, in iteration order.
Entries Scan(KvReader* reader, std::string_view start = "") {
  Entries out;
  std::unique_ptr<KvIterator> it = reader->NewIterator();
  for (it->Seek(start); it->Valid(); it->Next()) out.emplace_back(it->key(), it->value());
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

std::optional<std::string> Get(KvReader* reader, std::string_view key) {
  auto got = reader->Get(key);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  return got.ok() ? *got : std::nullopt;
}

class KvStoreTest : public testing::TestWithParam<bool> {
 protected:
  bool rocks() const { return GetParam(); }

  void SetUp() override {
    if (rocks()) {
      dir_ = MakeTempDir();
      ASSERT_FALSE(dir_.empty());
      auto opened = OpenRocksKvStore(dir_ + "/meta");
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      store_ = std::move(opened).value();
    } else {
      store_ = NewMemKvStore();
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) RemoveTree(dir_);
  }

  void Put(std::string_view key, std::string_view value) {
    WriteBatch batch;
    batch.Put(key, value);
    ASSERT_TRUE(store_->Write(batch).ok());
  }
  void Delete(std::string_view key) {
    WriteBatch batch;
    batch.Delete(key);
    ASSERT_TRUE(store_->Write(batch).ok());
  }

  std::string dir_;
  std::unique_ptr<KvStore> store_;
};

TEST_P(KvStoreTest, PutGetDelete) {
  EXPECT_EQ(Get(store_.get(), "k"), std::nullopt);
  Put("k", "v1");
  EXPECT_EQ(Get(store_.get(), "k"), "v1");
  Put("k", "v2");
  EXPECT_EQ(Get(store_.get(), "k"), "v2");
  Delete("k");
  EXPECT_EQ(Get(store_.get(), "k"), std::nullopt);
  Delete("never-existed");  // Deleting a missing key is not an error.
}

TEST_P(KvStoreTest, EmptyValueIsNotAbsent) {
  Put("k", "");
  EXPECT_EQ(Get(store_.get(), "k"), "");
}

TEST_P(KvStoreTest, EmptyBatchIsANoOp) {
  EXPECT_TRUE(store_->Write(WriteBatch()).ok());
  EXPECT_TRUE(Scan(store_.get()).empty());
}

TEST_P(KvStoreTest, BatchAppliesInOrder) {
  Put("gone", "x");
  WriteBatch batch;
  batch.Put("k", "first");
  batch.Delete("k");
  batch.Put("k", "last");
  batch.Put("d", "temp");
  batch.Delete("d");
  batch.Delete("gone");
  ASSERT_TRUE(store_->Write(batch).ok());
  EXPECT_EQ(Scan(store_.get()), (Entries{{"k", "last"}}));
}

TEST_P(KvStoreTest, BatchIsAtomicToConcurrentReaders) {
  // Two accounts always sum to 100 in any snapshot, however the transfers interleave.
  WriteBatch init;
  init.Put("a", "100");
  init.Put("b", "0");
  ASSERT_TRUE(store_->Write(init).ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i <= 100; ++i) {
      WriteBatch batch;
      batch.Put("a", std::to_string(100 - i));
      batch.Put("b", std::to_string(i));
      EXPECT_TRUE(store_->Write(batch).ok());
    }
    done = true;
  });
  int checks = 0;
  while (!done || checks == 0) {
    std::unique_ptr<KvReader> snapshot = store_->NewSnapshot();
    int a = std::stoi(Get(snapshot.get(), "a").value_or("-1"));
    int b = std::stoi(Get(snapshot.get(), "b").value_or("-1"));
    ASSERT_EQ(a + b, 100) << "a=" << a << " b=" << b;
    Entries both = Scan(snapshot.get());
    ASSERT_EQ(both.size(), 2u);
    ASSERT_EQ(std::stoi(both[0].second) + std::stoi(both[1].second), 100);
    ++checks;
  }
  writer.join();
  EXPECT_EQ(Get(store_.get(), "b"), "100");
}

TEST_P(KvStoreTest, IteratesInBytewiseOrder) {
  // Unsigned byte order: 0xff sorts after 'z', and a prefix before its extensions.
  for (std::string_view k : {"b", "\xff", "a", "ab", "z", "\x01"}) Put(k, "v");
  Entries all = Scan(store_.get());
  std::vector<std::string> keys;
  for (auto& [k, v] : all) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"\x01", "a", "ab", "b", "z", "\xff"}));
}

TEST_P(KvStoreTest, SeekPositionsAtFirstKeyNotLess) {
  for (std::string_view k : {"b", "d", "f"}) Put(k, std::string(k) + "v");
  std::unique_ptr<KvIterator> it = store_->NewIterator();
  EXPECT_FALSE(it->Valid());  // Unpositioned until the first Seek.
  it->Seek("d");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "d");
  EXPECT_EQ(it->value(), "dv");
  it->Seek("c");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "d");
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "b");
  it->Seek("a");  // Before the first key.
  EXPECT_EQ(it->key(), "b");
  it->Seek("f");
  ASSERT_TRUE(it->Valid());
  it->Next();
  EXPECT_FALSE(it->Valid());
  it->Seek("g");  // Past the last key.
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST_P(KvStoreTest, IteratesAPrefix) {
  for (std::string_view k : {"dir/a", "dir/b", "dir0", "dia", "dir/"}) Put(k, "v");
  Put(std::string_view("dir\0x", 5), "nul");
  std::vector<std::string> keys;
  std::unique_ptr<KvIterator> it = store_->NewIterator();
  for (it->Seek("dir/"); it->Valid() && it->key().starts_with("dir/"); it->Next()) {
    keys.emplace_back(it->key());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"dir/", "dir/a", "dir/b"}));
}

TEST_P(KvStoreTest, EmptyAndBinaryKeys) {
  const std::string nul_a("a\0", 2);
  const std::string nul_ab("a\0b", 3);
  const std::string all_zero(4, '\0');
  Put("", "empty key");
  Put("a", "plain");
  Put(nul_a, "one nul");
  Put(nul_ab, "nul then b");
  Put(all_zero, std::string("\0v\0", 3));
  EXPECT_EQ(Get(store_.get(), ""), "empty key");
  EXPECT_EQ(Get(store_.get(), nul_a), "one nul");
  EXPECT_EQ(Get(store_.get(), nul_ab), "nul then b");
  EXPECT_EQ(Get(store_.get(), all_zero), std::string("\0v\0", 3));
  EXPECT_EQ(Get(store_.get(), std::string("a\0c", 3)), std::nullopt);
  EXPECT_EQ(Scan(store_.get()), (Entries{{"", "empty key"},
                                         {all_zero, std::string("\0v\0", 3)},
                                         {"a", "plain"},
                                         {nul_a, "one nul"},
                                         {nul_ab, "nul then b"}}));
  EXPECT_EQ(Scan(store_.get(), nul_a).size(), 2u);
  Delete("");
  EXPECT_EQ(Get(store_.get(), ""), std::nullopt);
}

TEST_P(KvStoreTest, LargeValues) {
  std::string big(1 << 20, 'x');
  big[12345] = '\0';
  Put("big", big);
  EXPECT_TRUE(Get(store_.get(), "big") == big);
}

TEST_P(KvStoreTest, SnapshotIgnoresLaterWrites) {
  Put("keep", "old");
  Put("change", "old");
  Put("remove", "old");
  std::unique_ptr<KvReader> snapshot = store_->NewSnapshot();
  Put("change", "new");
  Delete("remove");
  Put("add", "new");
  EXPECT_EQ(Get(snapshot.get(), "change"), "old");
  EXPECT_EQ(Get(snapshot.get(), "remove"), "old");
  EXPECT_EQ(Get(snapshot.get(), "add"), std::nullopt);
  EXPECT_EQ(Scan(snapshot.get()), (Entries{{"change", "old"}, {"keep", "old"}, {"remove", "old"}}));
  EXPECT_EQ(Scan(store_.get()), (Entries{{"add", "new"}, {"change", "new"}, {"keep", "old"}}));
}

TEST_P(KvStoreTest, SnapshotIteratorOutlivesSnapshotObject) {
  Put("a", "1");
  std::unique_ptr<KvReader> snapshot = store_->NewSnapshot();
  std::unique_ptr<KvIterator> it = snapshot->NewIterator();
  snapshot.reset();  // The iterator shares ownership of the snapshot.
  Put("a", "2");
  Put("b", "2");
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "1");
  it->Next();
  EXPECT_FALSE(it->Valid());
}

TEST_P(KvStoreTest, LiveIteratorSeesTheStoreAsOfItsCreation) {
  Put("a", "1");
  std::unique_ptr<KvIterator> it = store_->NewIterator();
  Put("a", "2");
  Put("b", "2");
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "1");
  it->Next();
  EXPECT_FALSE(it->Valid());
}

TEST_P(KvStoreTest, ManySnapshots) {
  std::vector<std::unique_ptr<KvReader>> snapshots;
  for (int i = 0; i < 50; ++i) {
    Put("counter", std::to_string(i));
    snapshots.push_back(store_->NewSnapshot());
  }
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(Get(snapshots[i].get(), "counter"), std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Impls, KvStoreTest, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& p) {
                           return p.param ? "Rocks" : "Mem";
                         });

class RocksKvStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = MakeTempDir();
    ASSERT_FALSE(root_.empty());
    dir_ = root_ + "/data/meta";  // Parents are created on open.
  }
  void TearDown() override { RemoveTree(root_); }

  std::string root_;
  std::string dir_;
};

TEST_F(RocksKvStoreTest, DataSurvivesReopen) {
  {
    auto store = OpenRocksKvStore(dir_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    WriteBatch batch;
    batch.Put("k", "v");
    batch.Put(std::string("\0", 1), "nul");
    ASSERT_TRUE((*store)->Write(batch).ok());
  }
  auto store = OpenRocksKvStore(dir_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(Get(store->get(), "k"), "v");
  EXPECT_EQ(Get(store->get(), std::string("\0", 1)), "nul");
  EXPECT_GT((*store)->ApproximateDiskBytes(), 0u);
}

TEST_F(RocksKvStoreTest, SecondOpenInSameProcessIsUnavailable) {
  auto first = OpenRocksKvStore(dir_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = OpenRocksKvStore(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();
  EXPECT_NE(second.status().message().find("data directory " + dir_ + " is in use"),
            std::string::npos)
      << second.status().ToString();
  first->reset();  // Closing releases the lock.
  auto third = OpenRocksKvStore(dir_);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST_F(RocksKvStoreTest, LiveSnapshotKeepsDatabaseOpen) {
  auto store = OpenRocksKvStore(dir_);
  ASSERT_TRUE(store.ok());
  WriteBatch batch;
  batch.Put("k", "v");
  ASSERT_TRUE((*store)->Write(batch).ok());
  std::unique_ptr<KvReader> snapshot = (*store)->NewSnapshot();
  store->reset();
  EXPECT_EQ(Get(snapshot.get(), "k"), "v");
  EXPECT_FALSE(OpenRocksKvStore(dir_).ok());  // Still locked by the snapshot's database.
  snapshot.reset();
  EXPECT_TRUE(OpenRocksKvStore(dir_).ok());
}

TEST_F(RocksKvStoreTest, OpenByAnotherProcessIsUnavailable) {
  {
    auto store = OpenRocksKvStore(dir_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  // The child takes RocksDB's LOCK the way RocksDB does (an fcntl write lock), using only
  // async-signal-safe calls because this process already runs RocksDB threads.
  const std::string lock_path = dir_ + "/LOCK";
  int to_parent[2], to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    char ok = (fd >= 0 && fcntl(fd, F_SETLK, &lock) == 0) ? 'y' : 'n';
    if (write(to_parent[1], &ok, 1) != 1) _exit(1);
    char done;
    if (read(to_child[0], &done, 1) != 1) _exit(1);
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(to_parent[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  auto store = OpenRocksKvStore(dir_);
  char done = 'x';
  ASSERT_EQ(write(to_child[1], &done, 1), 1);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) close(fd);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable) << store.status().ToString();
  EXPECT_NE(store.status().message().find("is in use by another weft process"), std::string::npos)
      << store.status().ToString();
  EXPECT_TRUE(OpenRocksKvStore(dir_).ok());  // The child has exited.
}

TEST_F(RocksKvStoreTest, OpenOnAFileFails) {
  ASSERT_TRUE(std::filesystem::create_directories(root_ + "/data"));
  int fd = open((root_ + "/data/meta").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  auto store = OpenRocksKvStore(dir_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(dir_), std::string::npos) << store.status().ToString();
}

TEST_F(RocksKvStoreTest, DiskBytesGrowWithData) {
  auto store = OpenRocksKvStore(dir_);
  ASSERT_TRUE(store.ok());
  uint64_t before = (*store)->ApproximateDiskBytes();
  WriteBatch batch;
  for (int i = 0; i < 100; ++i) batch.Put("key" + std::to_string(i), std::string(1000, 'v'));
  ASSERT_TRUE((*store)->Write(batch).ok());
  EXPECT_GE((*store)->ApproximateDiskBytes(), before + 100 * 1000);
}

}  // namespace
}  // namespace weft
