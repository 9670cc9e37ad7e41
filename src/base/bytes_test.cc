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

}  // namespace
}  // namespace weft
