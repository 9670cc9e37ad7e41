#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace weft {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  WEFT_ASSIGN_OR_RETURN(int h, Half(v));
  return Half(h);
}

Status CheckEven(int v) {
  WEFT_RETURN_IF_ERROR(Half(v).status());
  return OkStatus();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(OkStatus().ok());
  Status s = NotFound("/a/b");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: /a/b");
  EXPECT_EQ(s.WithContext("stat").ToString(), "NotFound: stat: /a/b");
}

TEST(StatusTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_FALSE(CheckEven(3).ok());
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(ErrnoToStatus(ENOSPC, "write").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoToStatus(ENOENT, "open").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoToStatus(EIO, "read").code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace weft
