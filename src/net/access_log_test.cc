#include "net/access_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace weft::net {
namespace {

AccessRecord Sample() {
  AccessRecord r;
  r.time_ns = 1'796'677'200'123'000'000;
  r.request_id = "0000000000000007";
  r.principal = "alice";
  r.operation = "GET object";
  r.path = "/b/k";
  r.status = 200;
  r.bytes = 1234;
  r.latency_ns = 1'500'000;
  return r;
}

TEST(AccessLogTest, OneLogfmtLinePerRequest) {
  EXPECT_EQ(AccessLog::Format(Sample()),
            "time=2026-12-07T21:00:00.123Z id=0000000000000007 principal=alice op=\"GET object\" "
            "path=/b/k status=200 bytes=1234 ms=1.500");
}

TEST(AccessLogTest, HostilePathsCannotForgeLinesOrFields) {
  AccessRecord r = Sample();
  r.path = "/b/a\nb status=999 \"x\"\\";
  r.principal = "";
  const std::string line = AccessLog::Format(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find(R"(path="/b/a\x0ab status=999 \"x\"\\")"), std::string::npos) << line;
  EXPECT_NE(line.find("principal=\"\""), std::string::npos) << line;
}

TEST(AccessLogTest, AppendsToAFile) {
  char dir[] = "/tmp/weft-access-log-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/access.log";
  {
    auto log = AccessLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    (*log)->Write(Sample());
    (*log)->Write(Sample());
  }
  auto again = AccessLog::Open(path);  // appends, never truncates
  ASSERT_TRUE(again.ok());
  (*again)->Write(Sample());
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(line, AccessLog::Format(Sample()));
    ++lines;
  }
  EXPECT_EQ(lines, 3);
  std::remove(path.c_str());
  rmdir(dir);
  EXPECT_FALSE(AccessLog::Open("/nonexistent-dir/access.log").ok());
}

}  // namespace
}  // namespace weft::net
