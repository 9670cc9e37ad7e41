// Memory helpers that talk to the kernel.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace weft {

// `buffer.reserve(capacity)`, and when that allocated new memory, maps all its pages now, in
// one system call, instead of one page fault per page on first write. For large buffers
// filled right away (a pack's tail, a pipeline batch): a first-touch fault cost ~11 us a page
// on the build VM, populating ~0.7 us. The mapping is only a hint: on a kernel without
// MADV_POPULATE_WRITE the pages fault in as usual.
void ReserveMapped(std::string& buffer, size_t capacity);

// Hands memory the allocator holds but no longer uses back to the kernel (glibc's
// malloc_trim). After a burst of large requests on many threads, the freed buffers otherwise
// stay in the allocator's per-thread arenas, and the process's resident size with them.
void ReturnFreeMemory();

// Calls `trim` (ReturnFreeMemory) once each time the process goes quiet: when `traffic`, a
// running count such as bytes served, grew by less than `quiet_below` over one `period`.
// Nothing more until traffic resumes, so a quiet process is not woken for nothing. The
// caches keep what they hold; this returns only what nothing holds.
class IdleTrimmer {
 public:
  IdleTrimmer(std::function<uint64_t()> traffic, std::chrono::milliseconds period,
              uint64_t quiet_below, std::function<void()> trim = ReturnFreeMemory);
  ~IdleTrimmer();
  IdleTrimmer(const IdleTrimmer&) = delete;
  IdleTrimmer& operator=(const IdleTrimmer&) = delete;

  uint64_t trims() const;

 private:
  void Run();

  const std::function<uint64_t()> traffic_;
  const std::chrono::milliseconds period_;
  const uint64_t quiet_below_;
  const std::function<void()> trim_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  uint64_t trims_ = 0;     // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace weft
