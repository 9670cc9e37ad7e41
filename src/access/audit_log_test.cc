// Unit tests of AuditLog on a real file in a temporary directory: what it writes verifies, and
// every kind of tampering (an edited value, a removed, moved or cut-off line) is found.
#include "access/audit_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "io/test_file_system.h"

namespace weft::access {
namespace {

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = dir_.root() + "/audit.log"; }

  AuditRecord Record(int i) {
    AuditRecord r;
    r.time_ns = 1'700'000'000'000'000'000 + i;
    r.principal = i % 3 == 0 ? "alice" : "bob";
    r.protocol = "s3";
    r.site = "local";
    r.operation = i % 2 == 0 ? "GetObject" : "PutObject";
    r.path = "/b/k" + std::to_string(i);
    r.status = i % 5 == 0 ? 403 : 200;
    r.bytes_out = 100 * i;
    r.request_id = "R" + std::to_string(i);
    r.client = "127.0.0.1:5000";
    return r;
  }
  void Write(int n) {
    auto log = AuditLog::Open(path_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int i = 1; i <= n; ++i) ASSERT_TRUE((*log)->Append(Record(i), i % 2 == 0).ok());
  }
  std::vector<std::string> Lines() {
    std::ifstream in(path_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  void Rewrite(const std::vector<std::string>& lines) {
    std::ofstream out(path_, std::ios::trunc);
    for (const std::string& line : lines) out << line << "\n";
  }
  std::string Problem() {
    auto report = VerifyAuditLog(path_);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? report->problem : "unreadable";
  }

  TestFileSystem dir_{/*posix=*/true, ""};
  std::string path_;
};

TEST_F(AuditLogTest, WhatItWritesVerifiesAndContinuesAfterAReopen) {
  Write(10);
  Write(5);
  auto report = VerifyAuditLog(path_);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->problem, "");
  EXPECT_EQ(report->records, 15u);
  EXPECT_EQ(report->last_seq, 15u);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 15u);
  auto first = ParseAuditRecord(lines[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->principal, "bob");
  EXPECT_EQ(first->prev, std::string(64, '0'));
  EXPECT_NE(lines[3].find("\"time\":\"2023-11-14T22:13:20"), std::string::npos) << lines[3];
}

TEST_F(AuditLogTest, EveryKindOfTamperingIsFound) {
  Write(8);
  const std::vector<std::string> good = Lines();
  ASSERT_EQ(Problem(), "");
  // An edited value.
  std::vector<std::string> edited = good;
  edited[3].replace(edited[3].find("\"status\":200"), 12, "\"status\":201");
  Rewrite(edited);
  EXPECT_NE(Problem().find("line 4: its hash does not match"), std::string::npos) << Problem();
  // A deleted line.
  std::vector<std::string> deleted = good;
  deleted.erase(deleted.begin() + 3);
  Rewrite(deleted);
  EXPECT_NE(Problem().find("line 4:"), std::string::npos) << Problem();
  // Two lines swapped.
  std::vector<std::string> swapped = good;
  std::swap(swapped[2], swapped[5]);
  Rewrite(swapped);
  EXPECT_NE(Problem().find("line 3:"), std::string::npos) << Problem();
  // The first line removed.
  Rewrite(std::vector<std::string>(good.begin() + 1, good.end()));
  EXPECT_NE(Problem().find("line 1: the log starts at record 2"), std::string::npos) << Problem();
  // The last lines cut off: the head file still names record 8.
  Rewrite(std::vector<std::string>(good.begin(), good.end() - 2));
  EXPECT_NE(Problem().find("ends at record 6 but record 8 was written"), std::string::npos)
      << Problem();
  // A line re-hashed after an edit still breaks the chain to the next one.
  std::vector<std::string> rehashed = good;
  auto r = ParseAuditRecord(rehashed[2]);
  ASSERT_TRUE(r.ok());
  r->principal = "mallory";
  r->hash = AuditHash(*r);
  rehashed[2] = FormatAuditRecord(*r);
  Rewrite(rehashed);
  EXPECT_NE(Problem().find("line 4: it does not chain"), std::string::npos) << Problem();
  Rewrite(good);
  EXPECT_EQ(Problem(), "");
}

TEST_F(AuditLogTest, OpenCutsATornTailAndRefusesATamperedEnd) {
  Write(3);
  {
    std::ofstream out(path_, std::ios::app);
    out << "{\"seq\":4,\"time";  // a crash in the middle of a write
  }
  EXPECT_NE(Problem().find("torn"), std::string::npos);
  Write(1);
  EXPECT_EQ(Problem(), "");
  EXPECT_EQ(Lines().size(), 4u);
  std::vector<std::string> lines = Lines();
  lines.back().replace(lines.back().find("bob"), 3, "eve");
  Rewrite(lines);
  auto reopened = AuditLog::Open(path_);
  EXPECT_EQ(reopened.status().code(), StatusCode::kCorruption);
}

// Open reads only the end of the log: a long log, and a last line longer than the first
// window read, continue the chain all the same.
TEST_F(AuditLogTest, ALongLogAndALongLastLineContinue) {
  Write(2000);
  {
    auto log = AuditLog::Open(path_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    AuditRecord huge = Record(1);
    huge.path = "/b/" + std::string(200 << 10, 'p');
    ASSERT_TRUE((*log)->Append(huge, true).ok());
  }
  Write(3);
  auto report = VerifyAuditLog(path_);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->problem, "");
  EXPECT_EQ(report->last_seq, 2004u);
}

TEST_F(AuditLogTest, QueriesFilterAndPage) {
  Write(30);
  auto log = AuditLog::Open(path_);
  ASSERT_TRUE(log.ok());
  AuditQuery alice;
  alice.principal = "alice";
  EXPECT_EQ((*log)->Query(alice)->size(), 10u);
  AuditQuery denied;
  denied.denied = true;
  auto refused = (*log)->Query(denied);
  ASSERT_EQ(refused->size(), 6u);
  for (const AuditRecord& r : *refused) EXPECT_EQ(r.status, 403);
  AuditQuery page;
  page.limit = 7;
  page.after_seq = 20;
  page.operation = "GetObject";
  auto got = (*log)->Query(page);
  ASSERT_EQ(got->size(), 5u);
  EXPECT_EQ(got->front().seq, 22u);
  AuditQuery prefix;
  prefix.path_prefix = "/b/k2";
  prefix.since_ns = 1'700'000'000'000'000'000 + 21;
  EXPECT_EQ((*log)->Query(prefix)->size(), 9u);  // k21..k29
}

}  // namespace
}  // namespace weft::access
