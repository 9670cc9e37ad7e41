// The metadata codecs: every record round-trips, and every truncation, bit flip or random
// value decodes to Corruption (or, rarely, another valid record) — never a crash.
#include "vfs/internal/schema.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "base/test_util.h"

namespace weft::schema {
namespace {

using Decoder = std::function<Status(std::string_view)>;

// Feeds `good` cut at every length, with every single bit flipped, and random bytes.
void Torture(const std::string& good, const Decoder& decode) {
  ASSERT_TRUE(decode(good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    Status s = decode(std::string_view(good).substr(0, n));
    EXPECT_FALSE(s.ok()) << "truncated to " << n << " bytes decoded";
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kCorruption);
    }
  }
  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    std::string bad = good;
    bad[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    Status s = decode(bad);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kCorruption);
    }
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk = testutil::RandomBytes(rng() % 64, rng());
    Status s = decode(junk);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kCorruption);
    }
  }
}

template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

TEST(SchemaTest, InodeAndDirentRoundTripAndResistCorruption) {
  Inode inode;
  inode.type = FileType::kFile;
  inode.mode = 0640;
  inode.uid = 1000;
  inode.gid = 100;
  inode.size = 123456789;
  inode.mtime_ns = 1700000000123456789;
  inode.ctime_ns = -5;  // before 1970 still encodes
  inode.content_seq = 42;
  inode.etag = "0123456789abcdef0123456789abcdef";
  inode.chunks = 7;
  std::string encoded = EncodeInode(9, inode);
  auto back = DecodeInode(encoded);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->seq_begin, 9u);
  EXPECT_EQ(back->value.size, inode.size);
  EXPECT_EQ(back->value.ctime_ns, -5);
  EXPECT_EQ(back->value.etag, inode.etag);
  Torture(encoded, [](std::string_view v) { return StatusOf(DecodeInode(v)); });

  std::string dirent = EncodeDirent(3, Dirent{77, FileType::kSymlink});
  ASSERT_EQ(DecodeDirent(dirent)->value.ino, 77u);
  Torture(dirent, [](std::string_view v) { return StatusOf(DecodeDirent(v)); });

  History<Inode> h{3, 9, 1234, inode};
  std::string hist = EncodeInodeHistory(h);
  ASSERT_EQ(DecodeInodeHistory(hist)->seq_end, 9u);
  Torture(hist, [](std::string_view v) { return StatusOf(DecodeInodeHistory(v)); });
}

TEST(SchemaTest, ManifestChecksItsOwnSize) {
  Manifest m;
  m.etag = "d41d8cd98f00b204e9800998ecf8427e";
  m.mtime_ns = 5;
  for (int i = 0; i < 3; ++i) {
    std::string data = testutil::RandomBytes(100 + i, i);
    m.chunks.push_back({ChunkId::Of(AsBytes(data)), static_cast<uint32_t>(data.size())});
    m.size += data.size();
  }
  std::string encoded = EncodeManifest(m);
  auto back = DecodeManifest(encoded);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->chunks.size(), 3u);
  EXPECT_EQ(back->chunks[2].id, m.chunks[2].id);
  Torture(encoded, [](std::string_view v) { return StatusOf(DecodeManifest(v)); });

  m.size += 1;  // lengths that do not add up to the size are corruption
  EXPECT_EQ(DecodeManifest(EncodeManifest(m)).status().code(), StatusCode::kCorruption);
}

TEST(SchemaTest, AttributesRoundTripAndOldRecordsHaveNone) {
  Inode dir;
  dir.type = FileType::kDirectory;
  dir.mode = 0755;
  dir.attributes = {{"weft.keep-versions", "all"}, {"x", std::string("\0\xff", 2)}};
  std::string encoded = EncodeInode(4, dir);
  auto back = DecodeInode(encoded);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->value.attributes, dir.attributes);
  Torture(encoded, [](std::string_view v) { return StatusOf(DecodeInode(v)); });
  History<Inode> h{1, 4, 99, dir};
  std::string hist = EncodeInodeHistory(h);
  EXPECT_EQ(DecodeInodeHistory(hist)->value.attributes, dir.attributes);
  Torture(hist, [](std::string_view v) { return StatusOf(DecodeInodeHistory(v)); });

  Manifest m;
  m.etag = "abc-2";
  std::string data = testutil::RandomBytes(50, 1);
  m.chunks.push_back({ChunkId::Of(AsBytes(data)), 50});
  m.size = 50;
  m.attributes = {{"content-type", "text/plain"}};
  std::string man = EncodeManifest(m);
  EXPECT_EQ(DecodeManifest(man)->attributes, m.attributes);
  Torture(man, [](std::string_view v) { return StatusOf(DecodeManifest(v)); });

  // Without attributes a record is byte-for-byte the format-1 record, which decodes as empty.
  dir.attributes.clear();
  std::string plain = EncodeInode(4, dir);
  EXPECT_EQ(plain[0], 1);
  EXPECT_TRUE(DecodeInode(plain)->value.attributes.empty());
  m.attributes.clear();
  EXPECT_EQ(EncodeManifest(m)[0], 1);

  // Attribute names must be stored in order, once each.
  std::string swapped = encoded;
  size_t at = swapped.find("weft.keep-versions");
  ASSERT_NE(at, std::string::npos);
  swapped[at] = 'z';  // now after "x"
  EXPECT_EQ(DecodeInode(swapped).status().code(), StatusCode::kCorruption);
}

TEST(SchemaTest, AccessTimesDevicesAndLinkCountsRoundTrip) {
  Inode dev;
  dev.type = FileType::kCharDevice;
  dev.mode = 0620;
  dev.mtime_ns = 1700000000000000000;
  dev.atime_ns = -1;  // before 1970, and far from the mtime
  dev.rdev = (uint64_t{136} << 8) | 3;
  std::string encoded = EncodeInode(5, dev);
  EXPECT_EQ(encoded[0], 3);
  auto back = DecodeInode(encoded);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->value.type, FileType::kCharDevice);
  EXPECT_EQ(back->value.atime_ns, -1);
  EXPECT_EQ(back->value.rdev, dev.rdev);
  EXPECT_EQ(back->value.nlink, 0u);
  Torture(encoded, [](std::string_view v) { return StatusOf(DecodeInode(v)); });

  Inode dir;
  dir.type = FileType::kDirectory;
  dir.nlink = 5;
  dir.attributes = {{"a", "b"}};
  History<Inode> h{1, 4, 99, dir};
  std::string hist = EncodeInodeHistory(h);
  auto old = DecodeInodeHistory(hist);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->value.nlink, 5u);
  EXPECT_FALSE(old->value.atime_ns.has_value());
  EXPECT_EQ(old->value.attributes, dir.attributes);
  Torture(hist, [](std::string_view v) { return StatusOf(DecodeInodeHistory(v)); });

  // A type past the last one is corruption.
  std::string bad = EncodeInode(5, dev);
  bad[2] = static_cast<char>(kMaxFileType + 1);
  EXPECT_EQ(DecodeInode(bad).status().code(), StatusCode::kCorruption);
}

TEST(SchemaTest, SnapshotsChangesAndVersionIds) {
  SnapshotInfo snap{"v1", "/data", 17, 99};
  std::string s = EncodeSnapshot(snap);
  ASSERT_EQ(DecodeSnapshot("v1", s)->path, "/data");
  Torture(s, [](std::string_view v) { return StatusOf(DecodeSnapshot("x", v)); });

  Change c{5, 6, "rename", "/a", "/b", "root"};
  std::string e = EncodeChange(c);
  ASSERT_EQ(DecodeChange(5, e)->path2, "/b");
  Torture(e, [](std::string_view v) { return StatusOf(DecodeChange(1, v)); });

  uint64_t ino = 0, seq = 0;
  ASSERT_TRUE(ParseVersionId(MakeVersionId(12, 34), &ino, &seq));
  EXPECT_EQ(ino, 12u);
  EXPECT_EQ(seq, 34u);
  for (const char* bad :
       {"", ".", "1.", ".1", "a.1", "1.b", "1.2.3", "-1.2", "99999999999999999999.1"}) {
    EXPECT_FALSE(ParseVersionId(bad, &ino, &seq)) << bad;
  }
}

}  // namespace
}  // namespace weft::schema
