// HitWindow: the fraction of true outcomes over the last N, in O(1) per outcome and N bytes.
// Used for an expert's windowed precision and a hint stream's match rate. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::cache::internal {

class HitWindow {
 public:
  explicit HitWindow(size_t capacity) : ring_(capacity == 0 ? 1 : capacity, 0) {}

  void Push(bool hit) {
    if (count_ == ring_.size()) {
      hits_ -= ring_[next_];
    } else {
      ++count_;
    }
    ring_[next_] = hit ? 1 : 0;
    hits_ += ring_[next_];
    next_ = (next_ + 1) % ring_.size();
  }

  size_t count() const { return count_; }
  size_t hits() const { return hits_; }
  size_t capacity() const { return ring_.size(); }
  // hits / count, or `empty` before the first outcome.
  double Rate(double empty = 0) const {
    return count_ == 0 ? empty : static_cast<double>(hits_) / static_cast<double>(count_);
  }

 private:
  std::vector<uint8_t> ring_;
  size_t next_ = 0;
  size_t count_ = 0;
  size_t hits_ = 0;
};

}  // namespace weft::cache::internal
