#include "cache/internal/declared_order.h"

#include <algorithm>

namespace weft::cache::internal {

void DeclaredOrder::Declare(const Hint& hint) {
  Rank& rank = ranks_[hint.rank];
  if (hint.replace) {
    for (const Declared& d : rank.seq) unread_ -= d.read ? 0 : 1;
    live_ -= rank.seq.size();
    rank.base += rank.seq.size();
    rank.seq.clear();
  }
  for (const Item& item : hint.next) {
    if (live_ >= max_items_) break;
    std::vector<RankPositions>& by_rank = index_[item.key];
    auto mine = std::find_if(by_rank.begin(), by_rank.end(),
                             [&](const RankPositions& p) { return p.rank == hint.rank; });
    if (mine == by_rank.end())
      mine = by_rank.insert(by_rank.end(), RankPositions{hint.rank, 0, {}});
    mine->pos.push_back(rank.base + rank.seq.size());
    rank.seq.push_back(Declared{item, false});
    ++live_;
    ++unread_;
    ++indexed_;
  }
  // Replaced declarations stay indexed until their key is read; rebuild once they dominate.
  if (indexed_ > 2 * live_ + 1024) Reindex();
}

bool DeclaredOrder::Live(RankPositions& p) {
  const Rank& r = ranks_.at(p.rank);
  while (p.head < p.pos.size() && (p.pos[p.head] < r.base || r.seq[p.pos[p.head] - r.base].read)) {
    ++p.head;
    --indexed_;
  }
  if (p.head > 64 && 2 * p.head > p.pos.size()) {
    p.pos.erase(p.pos.begin(), p.pos.begin() + p.head);
    p.head = 0;
  }
  return p.head < p.pos.size();
}

bool DeclaredOrder::Consume(Key key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  // Each rank's earliest live declaration; the one nearest its rank's cursor wins.
  RankPositions* best = nullptr;
  uint64_t best_ahead = 0;
  for (RankPositions& p : it->second) {
    if (!Live(p)) continue;
    const uint64_t ahead = p.pos[p.head] - ranks_.at(p.rank).base;
    if (best == nullptr || ahead < best_ahead) {
      best = &p;
      best_ahead = ahead;
    }
  }
  if (best == nullptr) {
    index_.erase(it);
    return false;
  }
  Rank& rank = ranks_.at(best->rank);
  ++best->head;
  --indexed_;
  MarkRead(rank, best_ahead);
  return true;
}

bool DeclaredOrder::Contains(Key key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  for (RankPositions& p : it->second) {
    if (Live(p)) return true;
  }
  return false;
}

void DeclaredOrder::MarkRead(Rank& rank, size_t at) {
  auto mark = [&](Declared& d) {
    if (d.read) return;
    d.read = true;
    --unread_;
  };
  mark(rank.seq[at]);
  for (size_t i = 0; i + kReorderWindow < at; ++i) mark(rank.seq[i]);
  while (!rank.seq.empty() && rank.seq.front().read) {
    rank.seq.pop_front();
    ++rank.base;
    --live_;
  }
}

void DeclaredOrder::Reindex() {
  index_.clear();
  indexed_ = 0;
  for (const auto& [r, rank] : ranks_) {
    for (size_t i = 0; i < rank.seq.size(); ++i) {
      if (rank.seq[i].read) continue;
      std::vector<RankPositions>& by_rank = index_[rank.seq[i].item.key];
      if (by_rank.empty() || by_rank.back().rank != r) by_rank.push_back(RankPositions{r, 0, {}});
      by_rank.back().pos.push_back(rank.base + i);
      ++indexed_;
    }
  }
}

}  // namespace weft::cache::internal
