// DeclaredOrder: what one job's ranks declared they read next, matched against the job's reads.
// Each rank's declaration is a sequence; a rank's hint replaces (or extends) only its own. The
// job's reads do not say which rank made them (storage sees one principal), so a read is
// matched to the unread declaration of its item nearest the front of its rank's sequence,
// anywhere in it (DataLoader workers finish items out of order, and two epochs may be declared
// at once). Entries more than kReorderWindow before a match were skipped by their rank and
// are dropped, so one skipped item cannot stall a rank's cursor. The eviction policy ("epoch")
// and the hints expert both keep one per job. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "cache/item.h"

namespace weft::cache::internal {

class DeclaredOrder {
 public:
  struct Declared {
    Item item;
    bool read = false;
  };
  struct Rank {
    std::deque<Declared> seq;  // from the first unread declared item
    uint64_t base = 0;         // the position of seq.front() in all this rank declared
  };

  // At most `max_items` entries are kept over all ranks; the rest of a hint is dropped.
  explicit DeclaredOrder(size_t max_items) : max_items_(max_items) {}

  // Takes hint.rank's hint (hint.job is the caller's business).
  void Declare(const Hint& hint);
  // The job read `key`: marks the best-matching declaration read. False if none matched.
  bool Consume(Key key);
  // Whether `key` has a declaration not read yet.
  bool Contains(Key key);

  // Declarations not read yet, over all ranks.
  size_t unread() const { return unread_; }
  bool empty() const { return unread_ == 0; }
  const std::map<uint32_t, Rank>& ranks() const { return ranks_; }

 private:
  static constexpr size_t kReorderWindow = 4096;

  // One rank's declarations of a key, ascending positions in all the rank declared; those
  // before `head` are known stale.
  struct RankPositions {
    uint32_t rank = 0;
    uint32_t head = 0;
    std::vector<uint64_t> pos;
  };
  // Drops p's stale front (read, or replaced); true if a live declaration remains.
  bool Live(RankPositions& p);
  void MarkRead(Rank& rank, size_t at);
  void Reindex();

  const size_t max_items_;
  std::map<uint32_t, Rank> ranks_;
  // key -> its declarations not known to be read or replaced (stale ones are dropped when the
  // key is next read, or by Reindex)
  std::unordered_map<Key, std::vector<RankPositions>> index_;  // usually one rank
  size_t live_ = 0;     // entries in the ranks' sequences, read or not
  size_t unread_ = 0;   // of which not read
  size_t indexed_ = 0;  // positions in index_
};

}  // namespace weft::cache::internal
