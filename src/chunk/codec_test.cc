#include "chunk/codec.h"

#include <gtest/gtest.h>

#include <random>

#include "base/test_util.h"

namespace weft {
namespace {

using testutil::RandomBytes;

std::string Text(size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += "line " + std::to_string(i % 97) + " of some text\n";
  s.resize(n);
  return s;
}

TEST(CodecTest, CompressibleDataUsesZstdAndRoundTrips) {
  const std::string raw = Text(64 * 1024);
  std::string stored;
  ASSERT_EQ(EncodeChunk(AsBytes(raw), 1, &stored), Codec::kZstd);
  EXPECT_LT(stored.size(), raw.size() / 4);
  Result<std::string> decoded = DecodeChunk(Codec::kZstd, AsBytes(stored), raw.size());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, raw);
}

// Chunks of every size, one after another on one thread (which reuses its compression buffer
// up to 4 MiB and gives larger chunks their own), into one string holding the last result.
TEST(CodecTest, SuccessiveChunksOfAnySizeRoundTrip) {
  std::string stored = "left over from an earlier call";
  for (size_t size :
       {size_t{6} << 20, size_t{1} << 20, size_t{100} << 10, size_t{5} << 20, size_t{300} << 10}) {
    const std::string raw = Text(size) + RandomBytes(1000, size);
    ASSERT_EQ(EncodeChunk(AsBytes(raw), 1, &stored), Codec::kZstd) << size;
    Result<std::string> decoded = DecodeChunk(Codec::kZstd, AsBytes(stored), raw.size());
    ASSERT_TRUE(decoded.ok()) << size << ": " << decoded.status().ToString();
    EXPECT_EQ(*decoded, raw) << size;
  }
}

TEST(CodecTest, IncompressibleDataStaysRaw) {
  const std::string raw = RandomBytes(64 * 1024, 1);
  std::string stored;
  EXPECT_EQ(EncodeChunk(AsBytes(raw), 1, &stored), Codec::kRaw);
  Result<std::string> decoded = DecodeChunk(Codec::kRaw, AsBytes(raw), raw.size());
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, raw);
}

TEST(CodecTest, SavingBelowFivePercentStaysRaw) {
  // Random bytes with a small compressible run: zstd saves something, but under 5 %.
  std::string raw = RandomBytes(64 * 1024, 2);
  std::fill(raw.begin(), raw.begin() + 2048, 'a');
  std::string stored;
  EXPECT_EQ(EncodeChunk(AsBytes(raw), 1, &stored), Codec::kRaw);
  // And one that saves well over 5 % compresses.
  std::fill(raw.begin(), raw.begin() + 16 * 1024, 'a');
  EXPECT_EQ(EncodeChunk(AsBytes(raw), 1, &stored), Codec::kZstd);
  EXPECT_LE(stored.size(), raw.size() * 95 / 100);
}

TEST(CodecTest, TinyAndEmptyChunksStayRaw) {
  std::string stored;
  EXPECT_EQ(EncodeChunk(AsBytes(""), 1, &stored), Codec::kRaw);
  EXPECT_EQ(EncodeChunk(AsBytes(std::string(10, 'a')), 1, &stored), Codec::kRaw);
  Result<std::string> decoded = DecodeChunk(Codec::kRaw, AsBytes(""), 0);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->empty());
}

TEST(CodecTest, CorruptInputIsCorruptionNeverACrash) {
  const std::string raw = Text(16 * 1024);
  std::string stored;
  ASSERT_EQ(EncodeChunk(AsBytes(raw), 1, &stored), Codec::kZstd);
  // Wrong expected size.
  EXPECT_EQ(DecodeChunk(Codec::kZstd, AsBytes(stored), raw.size() + 1).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeChunk(Codec::kRaw, AsBytes(raw), raw.size() - 1).status().code(),
            StatusCode::kCorruption);
  // Truncated and bit-flipped frames, and garbage.
  EXPECT_EQ(DecodeChunk(Codec::kZstd, AsBytes(stored).first(stored.size() / 2), raw.size())
                .status()
                .code(),
            StatusCode::kCorruption);
  for (size_t i = 0; i < stored.size(); i += 7) {
    std::string flipped = stored;
    flipped[i] ^= 0x10;
    Result<std::string> r = DecodeChunk(Codec::kZstd, AsBytes(flipped), raw.size());
    // zstd may not notice every flip in the literals; the SHA-256 check above it does.
    if (r.ok()) {
      EXPECT_EQ(r->size(), raw.size());
    }
  }
  EXPECT_EQ(DecodeChunk(Codec::kZstd, AsBytes(RandomBytes(100, 3)), 100).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeChunk(static_cast<Codec>(9), AsBytes(raw), raw.size()).status().code(),
            StatusCode::kCorruption);
  EXPECT_FALSE(IsKnownCodec(9));
  EXPECT_TRUE(IsKnownCodec(0));
  EXPECT_TRUE(IsKnownCodec(1));
}

}  // namespace
}  // namespace weft
