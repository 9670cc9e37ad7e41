#include "frontends/fuse/process_jobs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

namespace weft::fuse {
namespace {

TEST(ProcessJobsTest, ReadsCountAgainstTheDeclaringAncestor) {
  // 1 <- 100 (rank 0) <- 101, 102 (its workers); 1 <- 200 (rank 1) <- 201; 1 <- 300 (no hints)
  std::map<pid_t, pid_t> parent = {{100, 1}, {101, 100}, {102, 100},
                                   {200, 1}, {201, 200}, {300, 1}};
  ProcessJobs jobs([&](pid_t p) { return parent.count(p) ? parent[p] : 0; });
  EXPECT_EQ(jobs.JobOf(101), 0);  // nobody declared anything yet
  jobs.Declare(100);
  jobs.Declare(200);
  EXPECT_EQ(jobs.JobOf(100), 100);
  EXPECT_EQ(jobs.JobOf(101), 100);
  EXPECT_EQ(jobs.JobOf(102), 100);
  EXPECT_EQ(jobs.JobOf(201), 200);
  EXPECT_EQ(jobs.JobOf(300), 0);
  // A worker started later, under rank 1.
  parent[202] = 200;
  EXPECT_EQ(jobs.JobOf(202), 200);
  // A worker that declares hints itself becomes its own job (the cache is redone).
  jobs.Declare(101);
  EXPECT_EQ(jobs.JobOf(101), 101);
  EXPECT_EQ(jobs.JobOf(102), 100);
}

TEST(ProcessJobsTest, ReadsTheRealProcessTree) {
  ProcessJobs jobs;
  jobs.Declare(getppid());
  EXPECT_EQ(jobs.JobOf(getpid()), getppid());
  EXPECT_EQ(jobs.JobOf(1), 0);
}

}  // namespace
}  // namespace weft::fuse
