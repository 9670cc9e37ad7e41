#include "base/memory.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace weft {

void ReserveMapped(std::string& buffer, size_t capacity) {
  const size_t had = buffer.capacity();
  buffer.reserve(capacity);
  if (buffer.capacity() == had) return;  // the memory was there (and mapped) already
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(buffer.data());
  const uintptr_t end = begin + buffer.capacity();
  // Whole pages inside the buffer only: the allocator may own what lies around it.
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = end / page * page;
  if (last <= first) return;
#ifdef MADV_POPULATE_WRITE
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
#endif
}

void ReturnFreeMemory() {
  (void)::malloc_trim(0);
}

IdleTrimmer::IdleTrimmer(std::function<uint64_t()> traffic, std::chrono::milliseconds period,
                         uint64_t quiet_below, std::function<void()> trim)
    : traffic_(std::move(traffic)),
      period_(period),
      quiet_below_(quiet_below),
      trim_(std::move(trim)),
      thread_([this] { Run(); }) {}

IdleTrimmer::~IdleTrimmer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

uint64_t IdleTrimmer::trims() const {
  std::lock_guard lock(mu_);
  return trims_;
}

void IdleTrimmer::Run() {
  uint64_t last = traffic_();
  bool trimmed = false;
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, period_, [this] { return stopping_; })) {
    const uint64_t now = traffic_();
    const bool quiet = now - last < quiet_below_;
    last = now;
    if (!quiet) {
      trimmed = false;
    } else if (!trimmed) {
      trimmed = true;
      lock.unlock();
      trim_();
      lock.lock();
      ++trims_;
    }
  }
}

}  // namespace weft
