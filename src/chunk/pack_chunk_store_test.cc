#include "chunk/pack_chunk_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "base/test_util.h"
#include "chunk/internal/pack_format.h"
#include "io/fault_injection_file_system.h"
#include "io/mem_file_system.h"

namespace weft {
namespace {

using chunk_internal::kPackHeaderSize;
using chunk_internal::kRecordHeaderSize;

constexpr char kDir[] = "/data/chunks";
constexpr uint64_t kSmallPack = 64 * 1024;

using testutil::RandomBytes;

std::string Compressible(size_t n, uint64_t seed) {
  std::string s;
  for (uint64_t i = 0; s.size() < n; ++i) s += "row " + std::to_string(seed * 1000 + i % 50);
  s.resize(n);
  return s;
}

std::string PackPath(uint64_t id) {
  return std::string(kDir) + "/pack-" + chunk_internal::PackIdHex(id) + ".dat";
}
std::string IndexPath(uint64_t id) {
  return std::string(kDir) + "/pack-" + chunk_internal::PackIdHex(id) + ".idx";
}

class PackChunkStoreTest : public testing::Test {
 protected:
  PackChunkStoreTest() { opts_.target_pack_size_for_test = kSmallPack; }

  void Open() {
    store_.reset();
    Result<std::unique_ptr<ChunkStore>> opened = OpenPackChunkStore(fs(), kDir, opts_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }

  virtual FileSystem* fs() { return mem_.get(); }

  // Puts `data`, remembering it for CheckAll.
  ChunkId Put(const std::string& data) {
    const ChunkId id = ChunkId::Of(AsBytes(data));
    Result<bool> put = store_->Put(id, AsBytes(data));
    EXPECT_TRUE(put.ok()) << put.status().ToString();
    chunks_[id] = data;
    return id;
  }

  void CheckReadable(const ChunkId& id) {
    Result<std::string> got = store_->Get(id);
    ASSERT_TRUE(got.ok()) << id.ShortHex() << ": " << got.status().ToString();
    EXPECT_EQ(*got, chunks_[id]);
  }

  void CheckAll() {
    for (const auto& [id, data] : chunks_) CheckReadable(id);
  }

  std::vector<std::string> Files(std::string_view suffix) {
    std::vector<std::string> out;
    const std::vector<std::string> names = fs()->ListDir(kDir).value();
    for (const std::string& name : names) {
      if (name.ends_with(suffix)) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string ReadFile(const std::string& path) { return ReadFileToString(fs(), path).value(); }

  void RewriteFile(const std::string& path, std::string_view contents) {
    std::unique_ptr<WritableFile> f = mem_->NewWritableFile(path).value();
    ASSERT_TRUE(f->Append(contents).ok());
    ASSERT_TRUE(f->Close().ok());
  }

  // Closes the store, lets `edit` change pack 1's bytes on disk, and opens the store again.
  void EditPack(const std::function<void(std::string&)>& edit) {
    store_.reset();
    std::string pack = ReadFile(PackPath(1));
    edit(pack);
    RewriteFile(PackPath(1), pack);
    Open();
  }

  // Fourteen chunks of 7-11 KB, every `compressible_every`-th compressible, flushed: more than
  // pack 1 holds, so it is sealed (a damaged record in it stays listed after a reopen).
  std::vector<ChunkId> PutSealedRun(int compressible_every, uint64_t seed) {
    std::vector<ChunkId> ids;
    for (int i = 0; i < 14; ++i) {
      ids.push_back(Put(i % compressible_every == compressible_every - 1
                            ? Compressible(9000, i)
                            : RandomBytes(7000 + 300 * i, seed + i)));
    }
    EXPECT_TRUE(store_->Flush().ok());
    EXPECT_GT(Files(".dat").size(), 1u);
    return ids;
  }

  // Flips a stored byte of the second record of pack 1 (reopening the store); returns the
  // record's offset, which errors about it must name.
  size_t DamageSecondRecord(const ChunkId& first) {
    const size_t second_record = kPackHeaderSize + kRecordHeaderSize + chunks_[first].size();
    EditPack([&](std::string& pack) { pack[second_record + kRecordHeaderSize + 77] ^= 0x20; });
    return second_record;
  }

  static void ExpectCorruptionAt(const Status& status, size_t offset) {
    ASSERT_EQ(status.code(), StatusCode::kCorruption) << status.ToString();
    EXPECT_NE(status.message().find("pack 0000000000000001 offset " + std::to_string(offset)),
              std::string::npos)
        << status.message();
  }

  std::unique_ptr<FileSystem> mem_ = NewMemFileSystem();
  PackStoreOptions opts_;
  std::unique_ptr<ChunkStore> store_;
  std::map<ChunkId, std::string> chunks_;
};

TEST_F(PackChunkStoreTest, OptionsAreValidated) {
  PackStoreOptions opts;
  opts.target_pack_size = 1 << 20;
  EXPECT_EQ(OpenPackChunkStore(fs(), kDir, opts).status().code(), StatusCode::kInvalidArgument);
  opts.target_pack_size = 128 << 20;
  EXPECT_FALSE(OpenPackChunkStore(fs(), kDir, opts).ok());
  opts.target_pack_size = 16 << 20;
  EXPECT_TRUE(OpenPackChunkStore(fs(), kDir, opts).ok());
  opts.zstd_level = 1000;
  EXPECT_FALSE(OpenPackChunkStore(fs(), kDir, opts).ok());
}

TEST_F(PackChunkStoreTest, CompressibleChunksAreStoredCompressed) {
  Open();
  const ChunkId text = Put(Compressible(60000, 1));
  const ChunkId noise = Put(RandomBytes(60000, 2));
  ChunkStoreStats stats = store_->Stats();
  EXPECT_EQ(stats.raw_bytes, 120000u);
  EXPECT_LT(stats.stored_bytes, 60000u + 60000u / 4);
  EXPECT_GT(stats.stored_bytes, 60000u);
  CheckReadable(text);
  CheckReadable(noise);
  ASSERT_TRUE(store_->Flush().ok());
  Open();
  CheckAll();
}

TEST_F(PackChunkStoreTest, OversizedChunkIsRefused) {
  Open();
  const std::string big(chunk_internal::kMaxChunkSize + 1, 'x');
  EXPECT_EQ(store_->Put(ChunkId(), AsBytes(big)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PackChunkStoreTest, SealsPacksWithIndexesAndReopens) {
  Open();
  for (int i = 0; i < 60; ++i) Put(RandomBytes(8000, i));
  ASSERT_TRUE(store_->Flush().ok());
  // 60 x 8 KB in 64 KiB packs: several sealed, each with an index.
  EXPECT_GE(Files(".idx").size(), 6u);
  EXPECT_EQ(Files(".dat").size(), Files(".idx").size() + 1);  // plus the active pack
  const ChunkStoreStats before = store_->Stats();
  EXPECT_EQ(before.chunks, 60u);
  EXPECT_EQ(before.pack_files, Files(".dat").size());
  uint64_t on_disk = 0;
  for (const std::string& name : Files(".dat")) {
    on_disk += fs()->FileSize(std::string(kDir) + "/" + name).value();
  }
  EXPECT_EQ(before.pack_bytes, on_disk);
  CheckAll();

  Open();
  CheckAll();
  const ChunkStoreStats after = store_->Stats();
  EXPECT_EQ(after.chunks, before.chunks);
  EXPECT_EQ(after.raw_bytes, before.raw_bytes);
  EXPECT_EQ(after.stored_bytes, before.stored_bytes);
  // The active pack was scanned and sealed with a rebuilt index; new chunks go to a new pack.
  EXPECT_EQ(Files(".dat").size(), Files(".idx").size());
  Put(RandomBytes(8000, 1000));
  ASSERT_TRUE(store_->Flush().ok());
  Open();
  CheckAll();
}

TEST_F(PackChunkStoreTest, ReopenUsesIndexFilesRatherThanScanning) {
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(Put(RandomBytes(12000, i)));  // seals pack 1
  ASSERT_TRUE(store_->Flush().ok());
  ASSERT_TRUE(fs()->Exists(IndexPath(1)));
  // Break the first record's header: a scan would stop there and lose every later record,
  // while the index still finds them.
  EditPack([](std::string& pack) { pack[kPackHeaderSize + 1] ^= 0x55; });
  EXPECT_EQ(store_->Get(ids[0]).status().code(), StatusCode::kCorruption);
  for (int i = 1; i < 6; ++i) CheckReadable(ids[i]);
}

TEST_F(PackChunkStoreTest, ReopenWithoutSealScansThePack) {
  opts_.target_pack_size_for_test = 16 << 20;
  Open();
  for (int i = 0; i < 10; ++i) Put(i % 2 ? RandomBytes(5000, i) : Compressible(5000, i));
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_TRUE(Files(".idx").empty());
  Open();
  CheckAll();
  EXPECT_EQ(store_->Stats().chunks, 10u);
  EXPECT_EQ(Files(".idx").size(), 1u);
}

TEST_F(PackChunkStoreTest, TornTailLosesOnlyTheTornRecord) {
  opts_.target_pack_size_for_test = 16 << 20;
  Open();
  const ChunkId a = Put(RandomBytes(5000, 1));
  const ChunkId b = Put(RandomBytes(5000, 2));
  const ChunkId c = Put(RandomBytes(5000, 3));
  ASSERT_TRUE(store_->Flush().ok());
  // Cut the file in the middle of c's record.
  const size_t c_start = kPackHeaderSize + 2 * (kRecordHeaderSize + 5000);
  EditPack([&](std::string& pack) { pack.resize(c_start + kRecordHeaderSize + 100); });
  CheckReadable(a);
  CheckReadable(b);
  EXPECT_FALSE(store_->Contains(c));
  EXPECT_EQ(store_->Get(c).status().code(), StatusCode::kNotFound);
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty());
  // Storing c again works and survives a reopen.
  EXPECT_EQ(store_->Put(c, AsBytes(chunks_[c])).value_or(false), true);
  ASSERT_TRUE(store_->Flush().ok());
  Open();
  CheckAll();
}

TEST_F(PackChunkStoreTest, TornRecordWithGarbageBytesIsNotTrusted) {
  opts_.target_pack_size_for_test = 16 << 20;
  Open();
  const ChunkId a = Put(RandomBytes(5000, 1));
  const ChunkId b = Put(RandomBytes(5000, 2));
  ASSERT_TRUE(store_->Flush().ok());
  // The file kept its length but b's bytes never made it (zeros), as after some crashes.
  const size_t b_data = kPackHeaderSize + (kRecordHeaderSize + 5000) + kRecordHeaderSize;
  EditPack([&](std::string& pack) { std::fill(pack.begin() + b_data, pack.end(), '\0'); });
  CheckReadable(a);
  EXPECT_FALSE(store_->Contains(b));
}

TEST_F(PackChunkStoreTest, BitFlipIsCorruptionNamingThePack) {
  Open();
  const ChunkId a = Put(RandomBytes(5000, 1));
  const ChunkId b = Put(RandomBytes(5000, 2));
  ASSERT_TRUE(store_->Flush().ok());
  // Inside a's stored bytes. The pack has no index: the scan stops at a, so b is lost too.
  EditPack([](std::string& pack) { pack[kPackHeaderSize + kRecordHeaderSize + 1234] ^= 0x01; });
  EXPECT_FALSE(store_->Contains(a));

  // With an index, the flip is found on read instead.
  chunks_.clear();
  store_.reset();
  mem_ = NewMemFileSystem();
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(Put(RandomBytes(12000, 10 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  ASSERT_TRUE(fs()->Exists(IndexPath(1)));
  const size_t second_record = kPackHeaderSize + kRecordHeaderSize + 12000;
  EditPack([&](std::string& pack) { pack[second_record + kRecordHeaderSize + 77] ^= 0x20; });
  Result<std::string> got = store_->Get(ids[1]);
  ASSERT_EQ(got.status().code(), StatusCode::kCorruption);
  EXPECT_NE(
      got.status().message().find("pack 0000000000000001 offset " + std::to_string(second_record)),
      std::string::npos)
      << got.status().message();
  EXPECT_NE(got.status().message().find("checksum mismatch"), std::string::npos);
  CheckReadable(ids[0]);
  CheckReadable(ids[2]);
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].status.code(), StatusCode::kCorruption);
  EXPECT_NE(problems[0].where.find("pack 0000000000000001"), std::string::npos);
  (void)a;
  (void)b;
}

// GetManyOnce gives what Get gives, in order: runs of neighbouring records (read together),
// records across packs, in the unsynced tail, repeated, compressed; an unknown id fails it,
// and a damaged record in a run is Corruption naming its pack, as from Get.
TEST_F(PackChunkStoreTest, GetManyOnceReadsWhatGetReads) {
  Open();
  std::vector<ChunkId> ids = PutSealedRun(4, 50);
  ids.push_back(Put(RandomBytes(3000, 99)));  // in the unsynced tail
  std::vector<ChunkId> asked = ids;
  asked.push_back(ids[2]);
  std::reverse(asked.begin() + 10, asked.end());
  auto check = [&] {
    Result<std::vector<std::shared_ptr<const std::string>>> got = store_->GetManyOnce(asked);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), asked.size());
    for (size_t i = 0; i < asked.size(); ++i) EXPECT_EQ(*(*got)[i], chunks_[asked[i]]) << i;
  };
  check();
  ASSERT_TRUE(store_->Flush().ok());
  check();
  EXPECT_TRUE(store_->GetManyOnce({}).value().empty());

  std::vector<ChunkId> with_unknown = {ids[0], ChunkId::Of(AsBytes(std::string("nope"))), ids[1]};
  EXPECT_EQ(store_->GetManyOnce(with_unknown).status().code(), StatusCode::kNotFound);

  const size_t second_record = DamageSecondRecord(ids[0]);
  ExpectCorruptionAt(store_->GetManyOnce(std::span(ids).first(3)).status(), second_record);
}

// LendMany lends what Get reads. A file's records in one run are lent from the read buffer
// itself (raw records side by side, a record header apart: no copy); anything else (several
// packs, the unsynced tail, compressed records) still lends the right bytes. A damaged record
// is an error naming the pack, and nothing is lent.
TEST_F(PackChunkStoreTest, LendManyLendsWhatGetReads) {
  Open();
  std::vector<ChunkId> ids = PutSealedRun(7, 70);
  auto lend = [&](std::span<const ChunkId> asked, std::vector<std::string_view>* seen) {
    return store_->LendMany(asked, [&](std::span<const std::string_view> views) {
      EXPECT_EQ(views.size(), asked.size());
      for (size_t i = 0; i < views.size() && i < asked.size(); ++i) {
        EXPECT_EQ(views[i], chunks_[asked[i]]) << i;
      }
      if (seen != nullptr) seen->assign(views.begin(), views.end());
      return OkStatus();
    });
  };
  std::vector<std::string_view> seen;
  ASSERT_TRUE(lend(std::span(ids).first(6), &seen).ok());
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_EQ(seen[i].data() + seen[i].size() + kRecordHeaderSize, seen[i + 1].data()) << i;
  }
  ASSERT_TRUE(lend(ids, nullptr).ok());  // the compressed one decoded
  std::vector<ChunkId> scattered = {ids[4], ids[0], ids[13], ids[6]};
  ASSERT_TRUE(lend(scattered, nullptr).ok());
  ids.push_back(Put(RandomBytes(3000, 99)));  // in the unsynced tail
  ASSERT_TRUE(lend(ids, nullptr).ok());
  ASSERT_TRUE(lend({}, nullptr).ok());

  const size_t second_record = DamageSecondRecord(ids[0]);
  bool used = false;
  Status damaged = store_->LendMany(std::span(ids).first(3), [&](auto) {
    used = true;
    return OkStatus();
  });
  EXPECT_FALSE(used);
  ExpectCorruptionAt(damaged, second_record);
}

// Reads trust a record's XXH3-64; Verify also hashes. Here the stored bytes are swapped for
// others with a matching checksum (what no disk fault does): only the SHA-256 can tell.
TEST_F(PackChunkStoreTest, VerifyChecksTheChunkIdNotOnlyTheChecksum) {
  const std::string a_bytes = RandomBytes(5000, 1);
  const ChunkId a = ChunkId::Of(AsBytes(a_bytes));
  const std::string other = RandomBytes(5000, 3);
  std::string forged;
  chunk_internal::AppendRecordHeader(
      {a, Codec::kRaw, 5000, 5000, chunk_internal::StoredChecksum(other)}, &forged);
  forged += other;
  auto forge = [&](std::string& pack) { pack.replace(kPackHeaderSize, forged.size(), forged); };

  Open();
  Put(a_bytes);
  const ChunkId b = Put(RandomBytes(5000, 2));
  ASSERT_TRUE(store_->Flush().ok());
  EditPack(forge);  // the pack has no index: the open scans it, and scans hash
  EXPECT_FALSE(store_->Contains(a));
  EXPECT_FALSE(store_->Contains(b));  // the scan stops at the first bad record

  // With an index, the open trusts it; Verify finds the forgery.
  store_.reset();
  mem_ = NewMemFileSystem();
  Open();
  Put(a_bytes);
  Put(RandomBytes(5000, 2));
  ASSERT_TRUE(store_->Flush().ok());
  Open();  // the scan writes the index
  ASSERT_TRUE(fs()->Exists(IndexPath(1)));
  EditPack(forge);
  CheckReadable(b);
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].status.message().find("hash mismatch"), std::string::npos)
      << problems[0].status.ToString();
}

// Packs written before format version 2 are read (their reads hash, as they always did) and
// rewritten in version 2 by the next Sweep.
TEST_F(PackChunkStoreTest, Version1PacksAreReadAndSweptToVersion2) {
  std::string pack = chunk_internal::EncodePackHeader(chunk_internal::kPackVersion1);
  std::vector<ChunkId> ids;
  for (int i = 0; i < 4; ++i) {
    const std::string data = RandomBytes(3000, 40 + i);
    const ChunkId id = ChunkId::Of(AsBytes(data));
    chunk_internal::AppendRecordHeader({id, Codec::kRaw, 3000, 3000}, &pack,
                                       chunk_internal::kPackVersion1);
    pack += data;
    chunks_[id] = data;
    ids.push_back(id);
  }
  ASSERT_TRUE(fs()->CreateDirs(kDir).ok());
  RewriteFile(PackPath(1), pack);
  Open();  // no index: scanned
  CheckAll();
  ASSERT_TRUE(fs()->Exists(IndexPath(1)));
  Open();  // from the index the scan wrote
  CheckAll();
  const ChunkId fresh = Put(RandomBytes(3000, 50));
  ASSERT_TRUE(store_->Flush().ok());
  CheckReadable(fresh);

  // A flipped bit in a version-1 record is caught by the SHA-256.
  const size_t in_first = kPackHeaderSize + chunk_internal::kRecordHeaderSizeV1 + 10;
  EditPack([&](std::string& bytes) { bytes[in_first] ^= 0x01; });
  EXPECT_NE(store_->Get(ids[0]).status().message().find("hash mismatch"), std::string::npos);
  EditPack([&](std::string& bytes) { bytes[in_first] ^= 0x01; });

  Result<SweepStats> swept = store_->Sweep([](const ChunkId&) { return true; });
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept->packs_rewritten, 1u);
  EXPECT_FALSE(fs()->Exists(PackPath(1)));
  Open();
  CheckAll();
  for (const std::string& name : Files(".dat")) {
    const std::string bytes = ReadFile(std::string(kDir) + "/" + name);
    EXPECT_EQ(chunk_internal::CheckPackHeader(bytes.substr(0, kPackHeaderSize)).value_or(0),
              chunk_internal::kPackVersion)
        << name;
  }
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty());
}

TEST_F(PackChunkStoreTest, TruncatedSealedPackIsCorruptionAndVerifyFindsIt) {
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(Put(RandomBytes(12000, 20 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  ASSERT_TRUE(fs()->Exists(IndexPath(1)));
  EditPack([](std::string& pack) { pack.resize(pack.size() / 2); });
  CheckReadable(ids[0]);
  Result<std::string> got = store_->Get(ids[5]);
  ASSERT_EQ(got.status().code(), StatusCode::kCorruption);
  EXPECT_NE(got.status().message().find("pack 0000000000000001"), std::string::npos);
  EXPECT_NE(got.status().message().find("truncated"), std::string::npos);
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  // The short file, plus every record past the cut (one may straddle it).
  EXPECT_GE(problems.size(), 3u);
  bool saw_truncated = false;
  bool saw_past_end = false;
  for (const ChunkProblem& p : problems) {
    EXPECT_EQ(p.status.code(), StatusCode::kCorruption);
    saw_truncated |= p.status.message().find("truncated pack") != std::string::npos;
    saw_past_end |= p.status.message().find("past the end") != std::string::npos;
  }
  EXPECT_TRUE(saw_truncated);
  EXPECT_TRUE(saw_past_end);
}

TEST_F(PackChunkStoreTest, CorruptIndexIsRebuiltFromThePack) {
  Open();
  for (int i = 0; i < 12; ++i) Put(RandomBytes(12000, 30 + i));
  ASSERT_TRUE(store_->Flush().ok());
  store_.reset();
  std::string index = ReadFile(IndexPath(1));
  const std::string index_before_corruption = index;
  index[40] ^= 1;
  RewriteFile(IndexPath(1), index);
  RewriteFile(std::string(kDir) + "/pack-0000000000000002.idx.weft-tmp-3", "leftover");
  Open();
  CheckAll();
  EXPECT_EQ(Files(".weft-tmp-3").size(), 0u);
  // Indexes are written without fsync, so a bad one is an expected crash leftover, healed by
  // the scan rather than reported.
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty());
  // The rebuilt index is written and used from now on.
  EXPECT_EQ(ReadFile(IndexPath(1)), index_before_corruption);
  Open();
  problems.clear();
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty());
}

TEST_F(PackChunkStoreTest, ForeignFilesAndBadPackHeadersDoNotBreakOpen) {
  Open();
  Put(RandomBytes(5000, 1));
  ASSERT_TRUE(store_->Flush().ok());
  store_.reset();
  RewriteFile(std::string(kDir) + "/README", "not a pack");
  RewriteFile(PackPath(7), "NOTAPACKFILE-but-long-enough");
  RewriteFile(PackPath(8), "short");
  RewriteFile(IndexPath(9), "orphan index");
  Open();
  CheckAll();
  EXPECT_FALSE(fs()->Exists(PackPath(8)));   // torn creation: removed
  EXPECT_FALSE(fs()->Exists(IndexPath(9)));  // index without a pack: removed
  EXPECT_TRUE(fs()->Exists(PackPath(7)));    // not ours to delete
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].where.find("0000000000000007"), std::string::npos);
  // New packs get ids past every existing one.
  Put(RandomBytes(5000, 2));
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_TRUE(fs()->Exists(std::string(kDir) + "/pack-000000000000000a.dat"));
}

TEST_F(PackChunkStoreTest, SweepCompactsAndReclaimsSpace) {
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 80; ++i) ids.push_back(Put(RandomBytes(8000, 40 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  const ChunkStoreStats before = store_->Stats();
  // Chunks 0-29 dead (whole packs go), then every third chunk dead (sparse packs remain).
  std::set<ChunkId> live;
  for (int i = 30; i < 80; ++i) {
    if (i % 3 != 0) live.insert(ids[i]);
  }
  Result<SweepStats> swept = store_->Sweep([&](const ChunkId& id) { return live.contains(id); });
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(swept->chunks_removed, 80u - live.size());
  EXPECT_GE(swept->packs_deleted, 2u);
  const ChunkStoreStats after = store_->Stats();
  EXPECT_EQ(after.chunks, live.size());
  EXPECT_LT(after.pack_bytes, before.pack_bytes);
  EXPECT_GT(swept->bytes_reclaimed, 0u);
  EXPECT_LE(swept->bytes_reclaimed, before.pack_bytes - after.pack_bytes + 2 * kSmallPack);
  for (const ChunkId& id : ids) {
    if (live.contains(id)) {
      CheckReadable(id);
    } else {
      EXPECT_EQ(store_->Get(id).status().code(), StatusCode::kNotFound);
    }
  }
  // Dead chunks stay dead after a reopen: indexes of kept packs were rewritten.
  Open();
  EXPECT_EQ(store_->Stats().chunks, live.size());
  for (const ChunkId& id : live) CheckReadable(id);
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty());
  // A second sweep with everything live changes nothing.
  Result<SweepStats> again = store_->Sweep([](const ChunkId&) { return true; });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->chunks_removed, 0u);
}

TEST_F(PackChunkStoreTest, SparsePacksAreRewritten) {
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(Put(RandomBytes(8000, 200 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  const size_t packs_before = Files(".dat").size();
  std::set<ChunkId> live;
  for (int i = 0; i < 40; i += 4) live.insert(ids[i]);  // a quarter of each pack lives
  Result<SweepStats> swept = store_->Sweep([&](const ChunkId& id) { return live.contains(id); });
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_GE(swept->packs_rewritten, 4u);
  EXPECT_LT(Files(".dat").size(), packs_before);
  for (const ChunkId& id : live) CheckReadable(id);
  Open();
  for (const ChunkId& id : live) CheckReadable(id);
  EXPECT_EQ(store_->Stats().chunks, live.size());
}

TEST_F(PackChunkStoreTest, ChunkPutDuringSweepSurvives) {
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(Put(RandomBytes(8000, 300 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  // is_live says everything is dead, but a writer re-uses ids[3] while the sweep runs: the
  // Put dedups against it, so it must not be removed.
  Result<SweepStats> swept = store_->Sweep([&](const ChunkId& id) {
    if (id == ids[3]) {
      EXPECT_EQ(store_->Put(id, AsBytes(chunks_[id])).value_or(true), false);
    }
    return false;
  });
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(swept->chunks_removed, 19u);
  CheckReadable(ids[3]);
  Open();
  CheckReadable(ids[3]);
}

TEST_F(PackChunkStoreTest, SweepRacesWithPutsAndGets) {
  Open();
  std::vector<ChunkId> keep;
  std::set<ChunkId> dead;
  for (int i = 0; i < 120; ++i) {
    const ChunkId id = Put(RandomBytes(6000, 500 + i));
    if (i % 3 == 0) {
      keep.push_back(id);
    } else {
      dead.insert(id);  // two thirds dead: every pack gets rewritten while readers read it
    }
  }
  ASSERT_TRUE(store_->Flush().ok());
  const std::map<ChunkId, std::string> initial = chunks_;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::vector<std::map<ChunkId, std::string>> written(2);
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        const std::string data = RandomBytes(6000, 10000 * (t + 1) + i);
        const ChunkId id = ChunkId::Of(AsBytes(data));
        ASSERT_TRUE(store_->Put(id, AsBytes(data)).ok());
        written[t][id] = data;
        const ChunkId& old = keep[i % keep.size()];
        Result<std::string> got = store_->Get(old);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_EQ(*got, initial.at(old));
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop) {
      for (const ChunkId& id : keep) {
        Result<std::string> got = store_->Get(id);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
      }
    }
  });
  for (int round = 0; round < 3; ++round) {
    Result<SweepStats> swept = store_->Sweep([&](const ChunkId& id) { return !dead.contains(id); });
    ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  }
  threads[0].join();
  threads[1].join();
  stop = true;
  threads[2].join();
  ASSERT_TRUE(store_->Flush().ok());
  for (const ChunkId& id : dead) chunks_.erase(id);
  for (const auto& w : written) chunks_.insert(w.begin(), w.end());
  Open();
  CheckAll();
  EXPECT_EQ(store_->Stats().chunks, chunks_.size());
}

// ---- Crashes and full disks, through FaultInjectionFileSystem ----

// Forwards to an in-memory file system and records the read-ahead hints its files get.
class HintRecordingFileSystem final : public FileSystem {
 public:
  struct Hint {
    std::string path;
    uint64_t offset, length;
    bool operator==(const Hint&) const = default;
  };

  explicit HintRecordingFileSystem(FileSystem* base) : base_(base) {}

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return base_->NewWritableFile(path);
  }
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, base_->NewRandomAccessFile(path));
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<RecordingFile>(std::move(file), path, &hints));
  }
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  Result<uint64_t> FileSize(const std::string& path) override { return base_->FileSize(path); }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }

  std::vector<Hint> hints;

 private:
  class RecordingFile final : public RandomAccessFile {
   public:
    RecordingFile(std::unique_ptr<RandomAccessFile> base, std::string path,
                  std::vector<Hint>* hints)
        : base_(std::move(base)), path_(std::move(path)), hints_(hints) {}
    Result<std::string_view> ReadAt(uint64_t offset, size_t n, char* scratch) const override {
      return base_->ReadAt(offset, n, scratch);
    }
    Result<uint64_t> Size() const override { return base_->Size(); }
    void WillNeed(uint64_t offset, uint64_t length) const override {
      hints_->push_back({path_, offset, length});
    }

   private:
    std::unique_ptr<RandomAccessFile> base_;
    std::string path_;
    std::vector<Hint>* hints_;
  };

  FileSystem* base_;
};

class PackChunkStoreHintTest : public PackChunkStoreTest {
 protected:
  FileSystem* fs() override { return &recording_; }
  HintRecordingFileSystem recording_{mem_.get()};
};

TEST_F(PackChunkStoreHintTest, WillNeedAsksForNeighbouringRecordsAtOnce) {
  opts_.target_pack_size_for_test = 1 << 20;  // everything below lands in one pack
  Open();
  constexpr uint64_t kRecord = kRecordHeaderSize + 8192;
  std::vector<ChunkId> ids;
  for (uint64_t i = 0; i < 20; ++i) ids.push_back(Put(RandomBytes(8192, i)));
  ASSERT_TRUE(store_->Flush().ok());
  const ChunkId in_memory = Put(RandomBytes(8192, 100));  // not yet in the file
  using Hint = HintRecordingFileSystem::Hint;
  const std::string pack = PackPath(1);

  // Three neighbours, asked in any order, are one request.
  store_->WillNeed(std::vector<ChunkId>{ids[1], ids[0], ids[2]});
  EXPECT_EQ(recording_.hints, (std::vector<Hint>{{pack, kPackHeaderSize, 3 * kRecord}}));

  // A hole smaller than 64 KiB is read across; a larger one starts a second request.
  recording_.hints.clear();
  store_->WillNeed(std::vector<ChunkId>{ids[3], ids[5], ids[15], in_memory, ChunkId()});
  EXPECT_EQ(recording_.hints, (std::vector<Hint>{{pack, kPackHeaderSize + 3 * kRecord, 3 * kRecord},
                                                 {pack, kPackHeaderSize + 15 * kRecord, kRecord}}));
  CheckAll();
}

class PackChunkStoreFaultTest : public PackChunkStoreTest {
 protected:
  // Files opened through faulty_ must not outlive it.
  void TearDown() override { store_.reset(); }

  FileSystem* fs() override { return faulty_.get(); }

  // Power loss: unsynced data goes, and the store object with it.
  void Crash() {
    ASSERT_TRUE(faulty_->DropUnsyncedData().ok());
    store_.reset();
    faulty_->ClearFaults();
  }

  // Power loss, then a reopen: every chunk in chunks_ reads back and Verify finds nothing.
  void CrashAndCheckAll() {
    Crash();
    Open();
    CheckAll();
    std::vector<ChunkProblem> problems;
    ASSERT_TRUE(store_->Verify(&problems).ok());
    EXPECT_TRUE(problems.empty()) << problems[0].status.ToString();
  }

  // Bytes of every file in the store's directory.
  uint64_t StoredBytes() {
    uint64_t used = 0;
    const std::vector<std::string> names = fs()->ListDir(kDir).value();
    for (const std::string& name : names) {
      used += fs()->FileSize(std::string(kDir) + "/" + name).value();
    }
    return used;
  }

  // A new empty disk.
  void FreshDisk() {
    store_.reset();
    faulty_.reset();
    mem_ = NewMemFileSystem();
    faulty_ = std::make_unique<FaultInjectionFileSystem>(mem_.get());
  }

  std::unique_ptr<FaultInjectionFileSystem> faulty_ =
      std::make_unique<FaultInjectionFileSystem>(mem_.get());
};

TEST_F(PackChunkStoreFaultTest, FlushedChunksSurvivePowerLoss) {
  Open();
  for (int i = 0; i < 30; ++i) Put(RandomBytes(7000, i));
  ASSERT_TRUE(store_->Flush().ok());
  const std::map<ChunkId, std::string> flushed = chunks_;
  for (int i = 0; i < 5; ++i) Put(RandomBytes(7000, 100 + i));  // not flushed
  Crash();
  Open();
  chunks_ = flushed;
  CheckAll();
  std::vector<ChunkProblem> problems;
  ASSERT_TRUE(store_->Verify(&problems).ok());
  EXPECT_TRUE(problems.empty()) << problems[0].status.ToString();
}

TEST_F(PackChunkStoreFaultTest, CrashAtEveryStepKeepsFlushedChunks) {
  // Counts the mutating calls of a clean run, then crashes the run after each of them.
  auto workload = [&](std::map<ChunkId, std::string>* durable) {
    Result<std::unique_ptr<ChunkStore>> opened = OpenPackChunkStore(fs(), kDir, opts_);
    if (!opened.ok()) return;
    store_ = std::move(opened).value();
    std::map<ChunkId, std::string> pending;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 7; ++i) {
        const std::string data = RandomBytes(9000, round * 10 + i);
        const ChunkId id = ChunkId::Of(AsBytes(data));
        if (store_->Put(id, AsBytes(data)).ok()) pending[id] = data;
      }
      if (store_->Flush().ok()) durable->insert(pending.begin(), pending.end());
    }
  };
  std::map<ChunkId, std::string> ignored;
  workload(&ignored);
  const uint64_t calls = faulty_->MutatingCalls();
  ASSERT_GT(calls, 10u);
  for (uint64_t n = 0; n < calls; ++n) {
    SCOPED_TRACE("crash after call " + std::to_string(n));
    FreshDisk();
    faulty_->FailAfter(static_cast<int>(n), IoError("injected crash"));
    std::map<ChunkId, std::string> durable;
    workload(&durable);
    Crash();
    Open();
    chunks_ = durable;
    CheckAll();
    std::vector<ChunkProblem> problems;
    ASSERT_TRUE(store_->Verify(&problems).ok());
    ASSERT_TRUE(problems.empty()) << problems[0].status.ToString();
    store_.reset();
  }
}

TEST_F(PackChunkStoreFaultTest, FailedWriteOrSyncIsRetriedInANewPack) {
  opts_.target_pack_size_for_test = 16 << 20;
  for (int fail_after : {0, 1}) {  // the append fails, or the append works and the sync fails
    SCOPED_TRACE("fail after " + std::to_string(fail_after));
    FreshDisk();
    chunks_.clear();
    Open();
    for (int i = 0; i < 5; ++i) Put(RandomBytes(7000, i));
    ASSERT_TRUE(store_->Flush().ok());
    for (int i = 5; i < 10; ++i) Put(RandomBytes(7000, i));
    faulty_->FailAfter(fail_after, IoError("injected failure"));
    EXPECT_EQ(store_->Flush().code(), StatusCode::kIoError);
    faulty_->ClearFaults();
    CheckAll();  // the unsynced chunks are still served from memory
    ASSERT_TRUE(store_->Flush().ok());
    Crash();
    Open();
    CheckAll();
  }
}

TEST_F(PackChunkStoreFaultTest, DiskFullIsResourceExhaustedAndRecoverable) {
  Open();
  for (int i = 0; i < 10; ++i) Put(RandomBytes(7000, i));
  ASSERT_TRUE(store_->Flush().ok());
  const std::map<ChunkId, std::string> flushed = chunks_;
  faulty_->SetCapacity(fs()->FileSize(PackPath(1)).value() + 100000);

  // Write until the disk refuses: the error is ResourceExhausted, from Put or from Flush.
  Status failure;
  std::map<ChunkId, std::string> accepted;
  for (int i = 0; i < 200 && failure.ok(); ++i) {
    const std::string data = RandomBytes(7000, 1000 + i);
    const ChunkId id = ChunkId::Of(AsBytes(data));
    Result<bool> put = store_->Put(id, AsBytes(data));
    if (!put.ok()) {
      failure = put.status();
      break;
    }
    accepted[id] = data;
    if (i % 5 == 4) failure = store_->Flush();
  }
  ASSERT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure.ToString();
  EXPECT_EQ(store_->Flush().code(), StatusCode::kResourceExhausted);
  for (const auto& [id, data] : flushed) CheckReadable(id);
  // Every chunk Put accepted is still readable (from memory if need be).
  for (const auto& [id, data] : accepted) {
    Result<std::string> got = store_->Get(id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, data);
  }

  // Space frees up: the retained chunks and new ones become durable.
  faulty_->ClearFaults();
  chunks_.insert(accepted.begin(), accepted.end());
  Put(RandomBytes(7000, 5000));
  ASSERT_TRUE(store_->Flush().ok());
  CrashAndCheckAll();
}

// Chunk data stops short of the reserve, so what the disk refuses is never the metadata
// beside it: the store's own writes leave at least the reserve free.
TEST_F(PackChunkStoreFaultTest, ChunkDataLeavesTheReserveFree) {
  opts_.reserve_bytes = 64 << 10;
  Open();
  faulty_->SetCapacity(400 << 10);
  Status failure;
  for (int i = 0; i < 200 && failure.ok(); ++i) {
    const std::string data = RandomBytes(7000, 100 + i);
    Result<bool> put = store_->Put(ChunkId::Of(AsBytes(data)), AsBytes(data));
    failure = put.ok() ? store_->Flush() : put.status();
  }
  ASSERT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure.ToString();
  EXPECT_NE(failure.message().find("kept for metadata"), std::string::npos) << failure.message();
  EXPECT_EQ(faulty_->InjectedFailures(), 0u);  // refused before the disk had to refuse
  EXPECT_GE(faulty_->Space(kDir)->available, 64u << 10);
}

// On a full disk a sweep deletes dead packs before it compacts, and a compaction the disk
// cannot hold is cut short without losing a chunk, even across a crash.
TEST_F(PackChunkStoreFaultTest, SweepOnAFullDiskFreesDeadPacksAndLosesNothing) {
  opts_.reserve_bytes = 64 << 10;
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 60; ++i) ids.push_back(Put(RandomBytes(7000, 300 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  // The disk is now full to its reserve.
  const uint64_t used = StoredBytes();
  faulty_->SetCapacity(used + (64 << 10));
  const std::string one_more = RandomBytes(7000, 999);
  Result<bool> refused = store_->Put(ChunkId::Of(AsBytes(one_more)), AsBytes(one_more));
  EXPECT_EQ(refused.ok() ? store_->Flush().code() : refused.status().code(),
            StatusCode::kResourceExhausted);
  // The first 20 go (whole packs), then every other one of the rest (sparse packs).
  std::set<ChunkId> dead(ids.begin(), ids.begin() + 20);
  for (size_t i = 21; i < ids.size(); i += 2) dead.insert(ids[i]);
  const uint64_t free_before = faulty_->Space(kDir)->available;
  Result<SweepStats> swept = store_->Sweep([&](const ChunkId& id) { return !dead.contains(id); });
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_GT(swept->packs_deleted, 0u);
  EXPECT_GT(faulty_->Space(kDir)->available, free_before);
  for (const ChunkId& id : dead) chunks_.erase(id);
  CheckAll();
  CrashAndCheckAll();
}

// Sparse packs only, on a disk with no room for their live records: compaction copies what
// fits and stops; the packs it could not finish keep their chunks across a crash.
TEST_F(PackChunkStoreFaultTest, CompactionCutShortByAFullDiskLosesNothing) {
  opts_.reserve_bytes = 64 << 10;
  Open();
  std::vector<ChunkId> ids;
  for (int i = 0; i < 60; ++i) ids.push_back(Put(RandomBytes(7000, 600 + i)));
  ASSERT_TRUE(store_->Flush().ok());
  const uint64_t used = StoredBytes();
  // Room for about three records beyond the quarter of the reserve compaction keeps.
  faulty_->SetCapacity(used + (16 << 10) + 3 * 7100);
  std::set<ChunkId> dead;
  for (size_t i = 0; i < ids.size(); i += 3) dead.insert(ids[i]);
  for (size_t i = 1; i < ids.size(); i += 3) dead.insert(ids[i]);
  const size_t packs = Files(".dat").size();
  Result<SweepStats> swept = store_->Sweep([&](const ChunkId& id) { return !dead.contains(id); });
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_LT(swept->packs_rewritten + 1, packs);  // cut short
  for (const ChunkId& id : dead) chunks_.erase(id);
  CheckAll();
  // The process dies (what it wrote stays, what it held in memory goes), then the power.
  store_.reset();
  faulty_->ClearFaults();
  Open();
  CheckAll();
  CrashAndCheckAll();
}

TEST_F(PackChunkStoreFaultTest, CrashDuringSweepKeepsLiveChunks) {
  auto fill = [&] {
    Result<std::unique_ptr<ChunkStore>> opened = OpenPackChunkStore(fs(), kDir, opts_);
    ASSERT_TRUE(opened.ok());
    store_ = std::move(opened).value();
    for (int i = 0; i < 40; ++i) Put(RandomBytes(8000, 400 + i));
    ASSERT_TRUE(store_->Flush().ok());
  };
  std::set<ChunkId> live;
  auto is_live = [&](const ChunkId& id) { return live.contains(id); };
  fill();
  for (const auto& [id, data] : chunks_) {
    if (live.size() < chunks_.size() / 3) live.insert(id);  // about a third lives
  }
  const uint64_t start = faulty_->MutatingCalls();
  ASSERT_TRUE(store_->Sweep(is_live).ok());
  const uint64_t calls = faulty_->MutatingCalls() - start;
  ASSERT_GT(calls, 5u);
  for (uint64_t n = 0; n < calls; ++n) {
    SCOPED_TRACE("crash after sweep call " + std::to_string(n));
    FreshDisk();
    fill();
    faulty_->FailAfter(static_cast<int>(n), IoError("injected crash"));
    (void)store_->Sweep(is_live);
    Crash();
    Open();
    for (const ChunkId& id : live) CheckReadable(id);
    std::vector<ChunkProblem> problems;
    ASSERT_TRUE(store_->Verify(&problems).ok());
    ASSERT_TRUE(problems.empty()) << problems[0].status.ToString();
  }
}

}  // namespace
}  // namespace weft
