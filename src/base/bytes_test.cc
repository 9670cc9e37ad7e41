#include "base/bytes.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(BytesTest, BigEndianSortsLikeNumbers) {
  std::string a, b;
  PutBigEndian64(&a, 255);
  PutBigEndian64(&b, 256);
  EXPECT_LT(a, b);
  EXPECT_EQ(GetBigEndian64(b.data()), 256u);
}

TEST(BytesTest, VarintRoundTripAndTruncation) {
  std::string s;
  PutVarint64(&s, 300);
  PutLengthPrefixed(&s, "hello");
  ByteReader r(s);
  uint64_t v = 0;
  std::string_view str;
  ASSERT_TRUE(r.GetVarint64(&v));
  EXPECT_EQ(v, 300u);
  ASSERT_TRUE(r.GetLengthPrefixed(&str));
  EXPECT_EQ(str, "hello");
  EXPECT_TRUE(r.empty());

  ByteReader truncated(std::string_view(s).substr(0, s.size() - 2));
  ASSERT_TRUE(truncated.GetVarint64(&v));
  EXPECT_FALSE(truncated.GetLengthPrefixed(&str));
}

TEST(BytesTest, Hex) {
  EXPECT_EQ(ToHex(AsBytes("\x01\xab")), "01ab");
  EXPECT_EQ(*FromHex("01AB"), std::string("\x01\xab"));
  EXPECT_FALSE(FromHex("0g").has_value());
  EXPECT_FALSE(FromHex("abc").has_value());
}

TEST(BytesTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
}

TEST(BytesTest, ParseByteSize) {
  EXPECT_EQ(ParseByteSize("512"), 512u);
  EXPECT_EQ(ParseByteSize("64K"), 64u << 10);
  EXPECT_EQ(ParseByteSize("1.5G"), 3ull << 29);
  EXPECT_EQ(ParseByteSize("2TiB"), 2ull << 40);
  EXPECT_EQ(ParseByteSize("10mb"), 10u << 20);
  for (const char* bad : {"", "G", "-1", "1X", "1GG", "1.2.3", ".", "99999999999T"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

TEST(BytesTest, SignedVarint) {
  std::string out;
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1'700'000'000'000'000'000}, INT64_MIN}) {
    out.clear();
    PutSignedVarint64(&out, v);
    ByteReader r(out);
    int64_t got = 7;
    ASSERT_TRUE(r.GetSignedVarint64(&got));
    EXPECT_EQ(got, v);
    EXPECT_TRUE(r.empty());
  }
}

// RFC 4648 §10 test vectors, both alphabets, and strict decoding.
TEST(BytesTest, Base64) {
  const char* vectors[][2] = {{"", ""},
                              {"f", "Zg=="},
                              {"fo", "Zm8="},
                              {"foo", "Zm9v"},
                              {"foob", "Zm9vYg=="},
                              {"fooba", "Zm9vYmE="},
                              {"foobar", "Zm9vYmFy"}};
  for (auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    EXPECT_EQ(Base64Decode(encoded), plain);
  }
  EXPECT_EQ(Base64Encode("\xfb\xff", /*url=*/true), "-_8");
  EXPECT_EQ(Base64Decode("-_8", /*url=*/true), "\xfb\xff");
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  for (const char* bad : {"Zg=", "Zg", "Zh==", "Z===", "Zm9v!A==", "-_8="}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
  EXPECT_FALSE(Base64Decode("+/8", /*url=*/true).has_value());
  EXPECT_FALSE(Base64Decode("Zh", /*url=*/true).has_value());  // non-zero leftover bits
}

}  // namespace
}  // namespace weft
