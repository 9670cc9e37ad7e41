// The NeuralCache prefetch ensemble (DESIGN.md §5, research/anchors-cache.md §5a). Experts each
// predict reads — (item, ETA, probability) — from what they see; the ensemble ranks the
// candidates by expected stall-seconds saved per WAN byte, weighted by how precise each expert
// has proved, and hands out as many as the bandwidth-delay budget allows. Predictions that were
// not issued are scored too (shadow accounting), so an expert can earn back weight. Not
// thread-safe; the owner locks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/item.h"

namespace weft::cache {

// A prediction that `job` reads `item` in about `eta_s` seconds, with probability
// `probability`. `expert` indexes the ensemble's experts.
struct Candidate {
  Item item;
  uint32_t job = 0;
  double eta_s = 0;
  double probability = 0;
  int expert = -1;
};

// What experts may know of the namespace beyond the reads they saw: the simulator answers from
// the trace's dataset, a spoke from what it has listed.
class Catalog {
 public:
  virtual ~Catalog() = default;
  // The items of the files in a directory, in name order.
  virtual std::vector<Item> ItemsInDir(uint64_t dir) const = 0;
  // The items of one file, in block order.
  virtual std::vector<Item> ItemsOfFile(uint64_t file) const = 0;
};

class Expert {
 public:
  virtual ~Expert() = default;
  virtual std::string name() const = 0;
  // Every demand read, in order.
  virtual void Observe(const Request& read, bool hit) = 0;
  // A declared hint; most experts ignore it.
  virtual void OnHint(const Hint&) {}
  // Appends at most `limit` predictions, soonest first.
  virtual void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) = 0;
  // True while this expert knows `job`'s reads well enough that the ensemble should fetch for
  // that job on its word alone (the hints expert, once its declared stream matched ≥ 99 % of
  // the job's recent reads; anchors-cache.md §5a guardrails).
  virtual bool Overrides(uint32_t /*job*/) const { return false; }
};

struct EnsembleOptions {
  double link_bytes_per_s = 62.5e6;  // the WAN's bandwidth (500 Mbit/s)
  double rtt_s = 0.040;              // and round trip
  // Bytes in flight are kept near bandwidth × (rtt + lead_s): enough to fill the link, no more.
  double lead_s = 0.5;
  double learning_rate = 0.3;  // Hedge's η (adapted as CACHEUS does)
  double retire_below = 0.5;   // an expert whose precision stays below this issues nothing
  size_t proposals_per_expert = 256;
};

struct ExpertStats {
  std::string name;
  double weight = 0;
  double precision = 0;  // useful / scored, over a recent window
  uint64_t issued = 0;   // predictions fetched on this expert's account
  uint64_t useful = 0;   // of those, read before eviction
  uint64_t shadow = 0;   // predictions scored without being issued
  uint64_t shadow_hits = 0;
  bool retired = false;
};

struct EnsembleStats {
  std::vector<ExpertStats> experts;
  uint64_t budget_bytes = 0;
  uint64_t in_flight_bytes = 0;
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_wasted = 0;  // prefetched, then evicted or forgotten unread
  uint64_t prefetches_useful = 0;
  uint64_t prefetches_late = 0;  // read while still in flight
  bool hints_override = false;   // a hint matched ≥ 99 % of recent reads
};

class Ensemble {
 public:
  Ensemble(EnsembleOptions options, const Catalog* catalog,
           std::vector<std::unique_ptr<Expert>> experts);
  ~Ensemble();

  void Observe(const Request& read, bool hit);
  void AddHint(const Hint& hint);
  // Candidates to fetch now, best first, within the budget less the bytes in flight and at
  // most `max_bytes` in all (the room the caller has for them); `cached` says which items
  // need no fetch (held, or in flight).
  std::vector<Candidate> Plan(int64_t now_ns, const std::function<bool(Key)>& cached,
                              uint64_t max_bytes = UINT64_MAX);
  // A planned fetch finished (landed or failed): its bytes leave the in-flight budget.
  void Landed(Key key, uint64_t bytes, bool ok);
  // A prefetched item left the cache; unread, it counts as waste.
  void Evicted(Key key);
  EnsembleStats Stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The standard experts, most precise first (anchors-cache.md §5a).
std::unique_ptr<Expert> MakeHintExpert();
std::unique_ptr<Expert> MakeEpochSetExpert();
std::unique_ptr<Expert> MakeReadaheadExpert(const Catalog* catalog);
std::unique_ptr<Expert> MakeHistoryExpert();
std::unique_ptr<Expert> MakeDirectoryExpert(const Catalog* catalog);
std::unique_ptr<Expert> MakePeerExpert();
// All of the above, or those named in `names` ("hints,epoch,readahead,history,dir,peer").
std::vector<std::unique_ptr<Expert>> MakeExperts(const Catalog* catalog,
                                                 const std::vector<std::string>& names = {});

}  // namespace weft::cache
