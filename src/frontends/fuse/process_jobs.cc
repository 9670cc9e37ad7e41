#include "frontends/fuse/process_jobs.h"

#include <cstdio>
#include <string>

namespace weft::fuse {

namespace {

// The fourth field of /proc/PID/stat; the second (the command) may hold spaces and ')'.
pid_t ParentFromProc(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  std::string line(buf, n);
  size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  int ppid = 0;
  char state = 0;
  if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return static_cast<pid_t>(ppid);
}

}  // namespace

ProcessJobs::ProcessJobs(std::function<pid_t(pid_t)> parent_of)
    : parent_of_(parent_of ? std::move(parent_of) : ParentFromProc) {}

void ProcessJobs::Declare(pid_t pid) {
  std::lock_guard lock(mu_);
  declared_.insert(pid);
  cache_.clear();
}

pid_t ProcessJobs::JobOf(pid_t pid) {
  std::lock_guard lock(mu_);
  if (declared_.empty() || pid <= 0) return 0;
  auto cached = cache_.find(pid);
  if (cached != cache_.end()) return cached->second;
  pid_t job = 0;
  // Bounded: a pid cycle in a racing /proc read cannot loop forever.
  for (pid_t p = pid, steps = 0; p > 1 && steps < 64; p = parent_of_(p), ++steps) {
    if (declared_.count(p)) {
      job = p;
      break;
    }
  }
  if (cache_.size() >= kMaxCached) cache_.clear();  // pids of exited processes get reused
  cache_[pid] = job;
  return job;
}

}  // namespace weft::fuse
