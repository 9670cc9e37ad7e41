// ProcessJobs: which training job a reading process belongs to, for NeuralCache.
//
// NeuralCache attributes reads (and hints) to jobs by principal. On a GPU node every rank of a
// training run reads through one mount as one user, and each rank's DataLoader workers are
// its child processes. So a process that declares hints (writes /.weft/cache/hints) becomes a
// job of its own, and a read from it or any of its descendants counts against that job: eight
// ranks on one node keep eight declared orders instead of overwriting one. Thread-safe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace weft::fuse {

class ProcessJobs {
 public:
  // `parent_of(pid)` is the parent's pid, or 0 when unknown (default: /proc/PID/stat).
  explicit ProcessJobs(std::function<pid_t(pid_t)> parent_of = nullptr);

  // `pid` declared hints: it and its descendants are one job from now on.
  void Declare(pid_t pid);
  // The declaring process `pid` descends from (itself included), or 0 for none.
  pid_t JobOf(pid_t pid);

 private:
  static constexpr size_t kMaxCached = 4096;
  std::function<pid_t(pid_t)> parent_of_;
  std::mutex mu_;
  std::unordered_set<pid_t> declared_;
  std::unordered_map<pid_t, pid_t> cache_;  // pid -> JobOf(pid); cleared on every Declare
};

}  // namespace weft::fuse
