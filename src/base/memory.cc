#include "base/memory.h"

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

}  // namespace weft
