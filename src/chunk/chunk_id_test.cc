#include "chunk/chunk_id.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace weft {
namespace {

constexpr std::string_view kSha256Abc =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr std::string_view kSha256Empty =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(ChunkIdTest, Sha256KnownVectors) {
  EXPECT_EQ(ChunkId::Of(AsBytes("abc")).ToHex(), kSha256Abc);
  EXPECT_EQ(ChunkId::Of(AsBytes("")).ToHex(), kSha256Empty);
  EXPECT_EQ(ChunkId::Of(AsBytes("abc")).ShortHex(), kSha256Abc.substr(0, 12));
}

TEST(ChunkIdTest, HexAndBytesRoundTrip) {
  const ChunkId id = ChunkId::Of(AsBytes("abc"));
  std::optional<ChunkId> parsed = ChunkId::FromHex(kSha256Abc);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, id);
  std::optional<ChunkId> upper =
      ChunkId::FromHex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  ASSERT_TRUE(upper.has_value());
  EXPECT_EQ(*upper, id);
  std::optional<ChunkId> from_raw = ChunkId::FromBytes(id.raw());
  ASSERT_TRUE(from_raw.has_value());
  EXPECT_EQ(*from_raw, id);
}

TEST(ChunkIdTest, RejectsMalformedInput) {
  EXPECT_FALSE(ChunkId::FromHex("").has_value());
  EXPECT_FALSE(ChunkId::FromHex(kSha256Abc.substr(0, 62)).has_value());
  std::string bad(kSha256Abc);
  bad[10] = 'g';
  EXPECT_FALSE(ChunkId::FromHex(bad).has_value());
  EXPECT_FALSE(ChunkId::FromHex(std::string(kSha256Abc) + "00").has_value());
  EXPECT_FALSE(ChunkId::FromBytes(std::string(31, 'x')).has_value());
  EXPECT_FALSE(ChunkId::FromBytes(std::string(33, 'x')).has_value());
}

TEST(ChunkIdTest, OrderingAndHashing) {
  const ChunkId a = ChunkId::Of(AsBytes("a"));
  const ChunkId b = ChunkId::Of(AsBytes("b"));
  EXPECT_NE(a, b);
  EXPECT_EQ(a < b, a.raw() < b.raw());
  std::unordered_set<ChunkId> set{a, b, a};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(ChunkId().ToHex(), std::string(64, '0'));
}

TEST(Sha256HasherTest, IncrementalMatchesOneShotAndIsReusable) {
  Sha256Hasher hasher;
  hasher.Update(AsBytes("a"));
  hasher.Update(AsBytes(""));
  hasher.Update(AsBytes("bc"));
  std::array<uint8_t, 32> digest = hasher.Finish();
  EXPECT_EQ(ToHex(ByteSpan(digest)), kSha256Abc);
  // Finish re-arms the hasher for the next value.
  digest = hasher.Finish();
  EXPECT_EQ(ToHex(ByteSpan(digest)), kSha256Empty);
}

TEST(Md5Test, KnownVectors) {
  EXPECT_EQ(Md5Hex(AsBytes("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Hex(AsBytes("abc")), "900150983cd24fb0d6963f7d28e17f72");
  Md5Hasher hasher;
  hasher.Update(AsBytes("ab"));
  hasher.Update(AsBytes("c"));
  std::array<uint8_t, 16> digest = hasher.Finish();
  EXPECT_EQ(ToHex(ByteSpan(digest)), "900150983cd24fb0d6963f7d28e17f72");
  digest = hasher.Finish();
  EXPECT_EQ(ToHex(ByteSpan(digest)), "d41d8cd98f00b204e9800998ecf8427e");
}

}  // namespace
}  // namespace weft
