#include "base/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace weft {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  for (std::string s : {std::string(""), std::string("plain/key.txt"), std::string("caf\xC3\xA9"),
                        std::string("\xE2\x82\xAC 100"), std::string("\xF0\x9F\x98\x80"),
                        std::string("\xF4\x8F\xBF\xBF"), std::string("nul\0inside", 10)}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
  }
}

TEST(Utf8Test, RefusesWhatRfc3629Forbids) {
  for (std::string s : {std::string("\xFF"), std::string("\x80"), std::string("caf\xC3"),
                        std::string("\xC0\xAF"),          // overlong '/'
                        std::string("\xE0\x80\xAF"),      // overlong, three bytes
                        std::string("\xED\xA0\x80"),      // a surrogate
                        std::string("\xF4\x90\x80\x80"),  // past U+10FFFF
                        std::string("\xE2\x82"), std::string("ok\xC3(")}) {
    EXPECT_FALSE(IsValidUtf8(s)) << testing::PrintToString(s);
  }
}

}  // namespace
}  // namespace weft
