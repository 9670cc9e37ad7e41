// The NeuralCache trace simulator: replays a Trace against a Cache (any MakePolicy policy, Belady
// MIN included) and optionally a prefetch Ensemble or a clairvoyant prefetcher, under a timing
// model (a shared WAN link with bandwidth, RTT and a connection limit; local-disk hits; per-job
// accelerators fed by DataLoader-like loaders), and reports hit ratios, WAN bytes, data stalls
// and prefetch quality (docs/neuralcache.md, "Simulator"). Discrete-event and deterministic.
// Not thread-safe; PreparedTrace is immutable after Prepare and may be shared by threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cache/trace.h"

namespace weft::cache {

struct SimOptions {
  double link_bytes_per_s = 62.5e6;  // 500 Mbit/s
  double rtt_s = 0.040;
  uint32_t connections = 16;      // fetches in flight at once (demand and prefetch)
  double disk_bytes_per_s = 2e9;  // a hit: disk_latency_s + bytes / disk_bytes_per_s
  double disk_latency_s = 100e-6;
  uint32_t loader_batches = 16;  // batches a rank's loader keeps in flight (workers × 2)
  double compute_scale = 1.0;    // multiplies every job's compute time per batch
  double lead_s = 0.5;           // prefetch bytes in flight ≈ bandwidth × (rtt + lead)
  // Share of the capacity that a prefetching config keeps as a staging area for landed,
  // unread prefetches (anchors-cache.md §5b); the policy gets the rest. Demand-only configs
  // have nothing to stage and give the policy all of it. 0: prefetches go through
  // Cache::Insert into the policy's capacity (the old model, for comparison). In [0, 1).
  double staging_fraction = 0.2;
  // The ensemble's prefetches move as a spoke's fetchers move them: up to this many items and
  // bytes per request, one round trip each. 1 item: one request per item.
  uint32_t prefetch_batch_items = 64;
  uint64_t prefetch_batch_bytes = 4 << 20;
  uint64_t seed = 1;  // for policies with random choices
  // A job's ranks take each step together, as data-parallel training (DDP) does; false: each
  // rank runs at its own pace.
  bool sync_ranks = true;
};

enum class PrefetchMode {
  kNone,         // demand fetch only
  kEnsemble,     // the Ensemble with `experts` (all when empty)
  kClairvoyant,  // a bound: fetches the trace's next reads in order, within the same budget
};

struct SimConfig {
  std::string label;
  std::string policy = "lru";
  uint64_t capacity_bytes = 0;
  PrefetchMode prefetch = PrefetchMode::kNone;
  std::vector<std::string> experts;
  // "Hint mode": each rank declares its epoch order at the epoch's start, to the ensemble and
  // to the eviction policy.
  bool hints = false;
};

// Reads, hits and time of one phase: the first epoch of each run, or the later ("steady") ones.
struct PhaseStats {
  uint64_t reads = 0;  // item reads
  uint64_t hits = 0;   // served with no fetch of their own (held, or riding on one in flight)
  uint64_t bytes = 0;  // bytes read
  uint64_t hit_bytes = 0;
  double compute_s = 0;
  double stall_s = 0;        // accelerator time spent waiting for a batch's data
  uint64_t rank_epochs = 0;  // (rank, epoch) pairs, to express stall per epoch

  double hit_ratio() const { return reads == 0 ? 0 : static_cast<double>(hits) / reads; }
  double byte_hit_ratio() const {
    return bytes == 0 ? 0 : static_cast<double>(hit_bytes) / static_cast<double>(bytes);
  }
  double utilisation() const {
    return compute_s + stall_s <= 0 ? 0 : compute_s / (compute_s + stall_s);
  }
  double stall_per_epoch_s() const { return rank_epochs == 0 ? 0 : stall_s / rank_epochs; }
};

struct SimResult {
  std::string label;
  std::string policy;
  uint64_t capacity_bytes = 0;
  PhaseStats all, first, steady;
  std::vector<double> utilisation_per_epoch;  // by epoch index, over all ranks and runs
  uint64_t wan_demand_bytes = 0;
  uint64_t wan_prefetch_bytes = 0;
  uint64_t upload_bytes = 0;  // checkpoint writes (written through; not cached, not timed)
  uint64_t demand_fetches = 0;
  uint64_t prefetch_issued = 0;
  uint64_t prefetch_useful = 0;        // read at least once before leaving the cache
  uint64_t prefetch_timely = 0;        // of those, first read after landing
  uint64_t prefetch_wasted_bytes = 0;  // dropped from staging (or evicted) unread, or never read
  uint64_t staging_bytes = 0;          // the staging area; 0 when prefetches go to the policy
  uint64_t staging_drops = 0;          // staged items dropped unread to make room
  double makespan_s = 0;
  double sim_seconds = 0;  // host time the replay took
  std::string state;       // the policy's and the ensemble's Describe/weights, one line

  uint64_t wan_bytes() const { return wan_demand_bytes + wan_prefetch_bytes; }
  double precision() const {
    return prefetch_issued == 0 ? 0 : static_cast<double>(prefetch_useful) / prefetch_issued;
  }
  // Fraction of the would-be misses that prefetching avoided.
  double coverage() const {
    const uint64_t d = prefetch_useful + demand_fetches;
    return d == 0 ? 0 : static_cast<double>(prefetch_useful) / d;
  }
  double timeliness() const {
    return prefetch_useful == 0 ? 0 : static_cast<double>(prefetch_timely) / prefetch_useful;
  }
};

// A trace resolved for replay: item reads with their next uses, ranks' batches, the catalog.
// Build once, simulate many configurations.
class PreparedTrace {
 public:
  static Result<std::shared_ptr<const PreparedTrace>> Prepare(Trace trace);
  ~PreparedTrace();

  const Trace& trace() const;
  uint64_t unique_bytes() const;      // bytes of all distinct items read
  uint64_t run_unique_bytes() const;  // mean over runs of the bytes of the items a run reads
  uint64_t item_reads() const;

  struct State;
  const State& state() const { return *state_; }

 private:
  explicit PreparedTrace(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

Result<SimResult> Simulate(const PreparedTrace& trace, const SimConfig& config,
                           const SimOptions& options);

// The configurations of one `weft cache-sim` run. `policies`: comma-separated MakePolicy names
// or "all". `prefetch`: "none"; "all" (the ensemble of every expert, with hints); a
// comma-separated list of experts (one ensemble of them; "+hints" adds hint mode); or
// "ablation": each expert alone, the ensemble without and with hints, and the bounds (an
// infinite cache, and clairvoyant prefetch over Belady). Prefetch configs evict with
// `prefetch_policy`. LRU and Belady demand runs are always included, for "gap closed".
Result<std::vector<SimConfig>> BuildConfigs(const PreparedTrace& trace, const std::string& policies,
                                            const std::string& prefetch,
                                            const std::string& prefetch_policy,
                                            uint64_t capacity_bytes);

// (x − LRU) / (Belady − LRU) of the hit ratio, from the "lru" and "belady" demand rows of
// `results`; NaN when either is missing or they are equal.
double GapClosed(const std::vector<SimResult>& results, const SimResult& r);

}  // namespace weft::cache
