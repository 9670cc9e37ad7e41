#include "cache/sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "cache/cache.h"
#include "cache/prefetch.h"

namespace weft::cache {

namespace {

// A rank's batch: `count` item reads starting at Stream::reads[first].
struct Batch {
  uint32_t epoch = 0;
  bool val = false;
  uint32_t accesses = 0;
  int64_t compute_ns = 0;
  size_t first = 0;
  size_t count = 0;
};

// One rank of one job: its own accelerator and loader.
struct Stream {
  uint32_t job = 0;  // index into Trace::jobs
  uint32_t rank = 0;
  uint32_t run = 0;  // index into the sorted distinct runs
  int64_t arrival_ns = 0;
  std::vector<size_t> reads;  // indices into PreparedTrace::State::reads, in order
  std::vector<Batch> batches;
};

// Answers the ensemble's catalog questions from the trace's file table.
class TraceCatalog : public Catalog {
 public:
  explicit TraceCatalog(const Trace& trace) : trace_(trace) {
    for (size_t i = 0; i < trace.files.size(); ++i) by_dir_[trace.files[i].dir].push_back(i);
    for (auto& [dir, files] : by_dir_) {
      std::sort(files.begin(), files.end(),
                [&](size_t a, size_t b) { return trace.files[a].path < trace.files[b].path; });
    }
  }
  std::vector<Item> ItemsInDir(uint64_t dir) const override {
    std::vector<Item> out;
    auto it = by_dir_.find(dir);
    if (it == by_dir_.end()) return out;
    for (size_t f : it->second) AppendItems(trace_.files[f], &out);
    return out;
  }
  std::vector<Item> ItemsOfFile(uint64_t file) const override {
    std::vector<Item> out;
    if (const TraceFile* f = trace_.File(file)) AppendItems(*f, &out);
    return out;
  }

 private:
  static void AppendItems(const TraceFile& f, std::vector<Item>* out) {
    const uint64_t blocks = std::max<uint64_t>(1, (f.size + kBlockBytes - 1) / kBlockBytes);
    for (uint64_t b = 0; b < blocks; ++b) {
      Item item;
      item.file = f.id;
      item.block = static_cast<uint32_t>(b);
      item.key = ItemKey(f.id, item.block);
      item.dir = f.dir;
      item.size = std::min(kBlockBytes, f.size - std::min(f.size, b * kBlockBytes));
      out->push_back(item);
    }
  }

  const Trace& trace_;
  std::unordered_map<uint64_t, std::vector<size_t>> by_dir_;
};

}  // namespace

struct PreparedTrace::State {
  Trace trace;
  std::vector<ItemRead> reads;
  std::vector<int64_t> next_use;
  std::vector<Stream> streams;
  std::vector<std::vector<uint32_t>> run_streams;  // by run index
  uint64_t unique_bytes = 0;
  uint64_t run_unique_bytes = 0;
  uint64_t upload_bytes = 0;
  std::unique_ptr<TraceCatalog> catalog;
};

PreparedTrace::PreparedTrace(std::unique_ptr<State> state) : state_(std::move(state)) {}
PreparedTrace::~PreparedTrace() = default;
const Trace& PreparedTrace::trace() const {
  return state_->trace;
}
uint64_t PreparedTrace::unique_bytes() const {
  return state_->unique_bytes;
}
uint64_t PreparedTrace::run_unique_bytes() const {
  return state_->run_unique_bytes;
}
uint64_t PreparedTrace::item_reads() const {
  return state_->reads.size();
}

Result<std::shared_ptr<const PreparedTrace>> PreparedTrace::Prepare(Trace trace) {
  if (trace.file_index.size() != trace.files.size()) trace.Index();
  WEFT_RETURN_IF_ERROR(ValidateTrace(trace));
  auto s = std::make_unique<State>();
  s->trace = std::move(trace);
  const Trace& t = s->trace;
  s->reads = ItemReads(t);
  s->next_use = NextUses(s->reads);
  s->catalog = std::make_unique<TraceCatalog>(t);

  std::unordered_map<uint32_t, size_t> job_index;
  for (size_t j = 0; j < t.jobs.size(); ++j) job_index.emplace(t.jobs[j].id, j);
  std::vector<uint32_t> runs;
  for (const TraceJob& j : t.jobs) runs.push_back(j.run);
  std::sort(runs.begin(), runs.end());
  runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
  std::unordered_map<uint32_t, uint32_t> run_index;
  for (size_t r = 0; r < runs.size(); ++r) run_index.emplace(runs[r], static_cast<uint32_t>(r));

  std::map<std::pair<uint32_t, uint32_t>, uint32_t> stream_of;  // (job index, rank)
  for (const Access& a : t.accesses) {
    if (a.op == Op::kWrite) s->upload_bytes += a.len;
  }
  for (size_t i = 0; i < s->reads.size(); ++i) {
    const size_t ai = s->reads[i].access;
    const Access& a = t.accesses[ai];
    const size_t job = job_index.at(a.job);
    auto [it, added] = stream_of.try_emplace({static_cast<uint32_t>(job), a.rank},
                                             static_cast<uint32_t>(s->streams.size()));
    if (added) {
      Stream st;
      st.job = static_cast<uint32_t>(job);
      st.rank = a.rank;
      st.run = run_index.at(a.run);
      st.arrival_ns = a.t_ns;
      s->streams.push_back(std::move(st));
    }
    Stream& st = s->streams[it->second];
    const bool val = a.op == Op::kValRead;
    const bool new_access = i == 0 || s->reads[i - 1].access != ai;
    if (new_access) {
      if (st.batches.empty() || st.batches.back().epoch != a.epoch ||
          st.batches.back().val != val || st.batches.back().accesses >= t.jobs[job].batch) {
        Batch b;
        b.epoch = a.epoch;
        b.val = val;
        b.first = st.reads.size();
        st.batches.push_back(b);
      }
      ++st.batches.back().accesses;
    }
    st.reads.push_back(i);
    ++st.batches.back().count;
  }
  s->run_streams.resize(runs.size());
  for (size_t i = 0; i < s->streams.size(); ++i) {
    Stream& st = s->streams[i];
    const TraceJob& job = t.jobs[st.job];
    for (Batch& b : st.batches) {
      b.compute_ns = job.compute_ns * static_cast<int64_t>(b.accesses) / job.batch;
    }
    s->run_streams[st.run].push_back(static_cast<uint32_t>(i));
  }

  std::unordered_map<Key, uint64_t> sizes;
  std::vector<std::unordered_set<Key>> per_run(runs.size());
  for (const ItemRead& r : s->reads) {
    sizes.emplace(r.item.key, r.item.size);
    per_run[run_index.at(t.accesses[r.access].run)].insert(r.item.key);
  }
  for (const auto& [key, size] : sizes) s->unique_bytes += size;
  uint64_t run_sum = 0;
  size_t run_count = 0;
  for (const auto& keys : per_run) {
    if (keys.empty()) continue;
    for (Key k : keys) run_sum += sizes[k];
    ++run_count;
  }
  s->run_unique_bytes = run_count == 0 ? 0 : run_sum / run_count;
  return std::shared_ptr<const PreparedTrace>(new PreparedTrace(std::move(s)));
}

namespace {

// The WAN: `connections` fetches at once, each paying one round trip before its bytes, which
// cross one shared pipe in issue order (FIFO). Reserved at issue, so the landing time is known
// then: a lone fetch lands after rtt + bytes / bandwidth.
class Link {
 public:
  Link(double bytes_per_s, double rtt_s, uint32_t connections)
      : ns_per_byte_(1e9 / bytes_per_s),
        rtt_ns_(static_cast<int64_t>(std::llround(rtt_s * 1e9))),
        slots_(std::max<uint32_t>(1, connections), 0) {}

  int64_t Fetch(int64_t now, uint64_t bytes) {
    auto slot = std::min_element(slots_.begin(), slots_.end());
    const int64_t start = std::max(now, *slot);
    const int64_t data_start = std::max(start + rtt_ns_, free_);
    const int64_t done =
        data_start + static_cast<int64_t>(std::llround(static_cast<double>(bytes) * ns_per_byte_));
    free_ = done;
    *slot = done;
    return done;
  }

 private:
  double ns_per_byte_;
  int64_t rtt_ns_;
  std::vector<int64_t> slots_;  // when each connection is next free
  int64_t free_ = 0;            // when the pipe is next free
};

// kHint first: every rank that starts an epoch at some instant declares its order before any
// rank reads at that instant, as ranks released together by DDP's barrier do (each sampler
// sends its hint, then its loader starts).
enum class EventType : uint8_t { kHint, kIssue, kLand, kStreamEnd };

struct Event {
  int64_t t;
  uint64_t seq;
  EventType type;
  uint32_t stream;
  size_t index;  // batch (kIssue) or prefetch record (kLand)
  bool operator>(const Event& o) const {
    if (t != o.t) return t > o.t;
    if ((type == EventType::kHint) != (o.type == EventType::kHint))
      return o.type == EventType::kHint;
    return seq > o.seq;
  }
};

struct PrefetchRecord {
  Item item;
  int64_t land_ns = 0;
  bool via_ensemble = false;
  uint32_t job = 0;
  int64_t next_use = 0;
};

struct PrefetchState {
  int64_t land_ns = 0;
  bool read = false;
};

class Simulator {
 public:
  Simulator(const PreparedTrace& prepared, const SimConfig& config, const SimOptions& options)
      : p_(prepared.state()),
        config_(config),
        options_(options),
        link_(options.link_bytes_per_s, options.rtt_s, options.connections) {}

  Result<SimResult> Run() {
    const auto host_start = std::chrono::steady_clock::now();
    std::string error;
    // A prefetching config splits the capacity: the policy's share, and a staging area for
    // landed prefetches not read yet (anchors-cache.md §5b), as the spoke does.
    if (config_.prefetch != PrefetchMode::kNone && options_.staging_fraction > 0) {
      staging_bytes_ =
          std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(config_.capacity_bytes) *
                                                      options_.staging_fraction));
      staging_bytes_ = std::min(staging_bytes_, config_.capacity_bytes);
    }
    const uint64_t policy_bytes = config_.capacity_bytes - staging_bytes_;
    auto policy = MakePolicy(config_.policy, policy_bytes, options_.seed, &error);
    if (policy == nullptr) {
      return InvalidArgument("policy '" + config_.policy +
                             "': " + (error.empty() ? std::string("unknown") : error));
    }
    cache_ = std::make_unique<Cache>(policy_bytes, std::move(policy));
    if (config_.prefetch == PrefetchMode::kEnsemble) {
      EnsembleOptions eo;
      eo.link_bytes_per_s = options_.link_bytes_per_s;
      eo.rtt_s = options_.rtt_s;
      eo.lead_s = options_.lead_s;
      auto experts = MakeExperts(p_.catalog.get(), config_.experts);
      if (experts.empty()) return InvalidArgument("no experts named in '" + config_.label + "'");
      ensemble_ = std::make_unique<Ensemble>(eo, p_.catalog.get(), std::move(experts));
    }
    prefetch_budget_ =
        static_cast<uint64_t>(options_.link_bytes_per_s * (options_.rtt_s + options_.lead_s));
    result_.label = config_.label;
    result_.policy = config_.policy;
    result_.capacity_bytes = config_.capacity_bytes;
    result_.upload_bytes = p_.upload_bytes;
    stream_state_.resize(p_.streams.size());
    for (const Stream& st : p_.streams) {
      if (step_ranks_.size() <= st.job) step_ranks_.resize(st.job + 1);
      std::vector<uint32_t>& ranks = step_ranks_[st.job];
      if (ranks.size() < st.batches.size()) ranks.resize(st.batches.size());
      for (size_t k = 0; k < st.batches.size(); ++k) ++ranks[k];
    }

    // Runs follow each other: run r starts when the last rank of run r−1 finishes, its jobs
    // keeping the trace's arrival gaps.
    StartRun(0, p_.streams.empty() ? 0 : FirstArrival(0));
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      switch (e.type) {
        case EventType::kHint:
          SendHint(p_.streams[e.stream], e.index);
          break;
        case EventType::kIssue:
          Issue(e.stream, e.index, e.t);
          break;
        case EventType::kLand:
          Land(e.index, e.t);
          break;
        case EventType::kStreamEnd:
          StreamEnded(e.stream, e.t);
          break;
      }
      Prefetch(e.t);
    }
    // Whatever the prefetcher fetched and nobody read is waste.
    for (const auto& [key, st] : prefetched_) {
      if (!st.read) result_.prefetch_wasted_bytes += SizeOfPrefetched(key);
    }
    for (const auto& [key, st] : staged_) result_.prefetch_wasted_bytes += st.size;
    result_.staging_bytes = staging_bytes_;
    if (ensemble_ != nullptr) {
      const EnsembleStats es = ensemble_->Stats();
      for (const ExpertStats& x : es.experts) {
        char buf[160];
        std::snprintf(buf, sizeof(buf), "%s%s w=%.2f p=%.2f issued=%llu; ", x.name.c_str(),
                      x.retired ? "(retired)" : "", x.weight, x.precision,
                      static_cast<unsigned long long>(x.issued));
        result_.state += buf;
      }
    }
    result_.state += cache_->policy().Describe();
    for (size_t e = 0; e < epoch_compute_.size(); ++e) {
      const double total = epoch_compute_[e] + epoch_stall_[e];
      result_.utilisation_per_epoch.push_back(total <= 0 ? 0 : epoch_compute_[e] / total);
    }
    result_.all = Sum(result_.first, result_.steady);
    result_.makespan_s = static_cast<double>(makespan_) / 1e9;
    result_.sim_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
    return result_;
  }

 private:
  struct StreamState {
    int64_t start = 0;
    int64_t gpu_free = 0;  // when the accelerator finished its last batch
  };
  // A synchronised step of one job that some of its ranks are ready for.
  struct SyncStep {
    int64_t begin = 0;              // the latest of their data and previous steps
    std::vector<uint32_t> streams;  // the ranks that issued it
  };

  static PhaseStats Sum(const PhaseStats& a, const PhaseStats& b) {
    PhaseStats s;
    s.reads = a.reads + b.reads;
    s.hits = a.hits + b.hits;
    s.bytes = a.bytes + b.bytes;
    s.hit_bytes = a.hit_bytes + b.hit_bytes;
    s.compute_s = a.compute_s + b.compute_s;
    s.stall_s = a.stall_s + b.stall_s;
    s.rank_epochs = a.rank_epochs + b.rank_epochs;
    return s;
  }

  int64_t FirstArrival(size_t run) const {
    int64_t first = std::numeric_limits<int64_t>::max();
    for (uint32_t s : p_.run_streams[run]) first = std::min(first, p_.streams[s].arrival_ns);
    return first;
  }

  void Push(int64_t t, EventType type, uint32_t stream, size_t index) {
    events_.push(Event{t, seq_++, type, stream, index});
    if (type != EventType::kIssue || !config_.hints) return;
    const Stream& st = p_.streams[stream];
    const Batch& batch = st.batches[index];
    if (!batch.val && (index == 0 || st.batches[index - 1].epoch != batch.epoch)) {
      events_.push(Event{t, seq_++, EventType::kHint, stream, index});
    }
  }

  void StartRun(size_t run, int64_t at) {
    if (run >= p_.run_streams.size()) return;
    if (p_.run_streams[run].empty()) return StartRun(run + 1, at);
    const int64_t first = FirstArrival(run);
    running_in_run_ = p_.run_streams[run].size();
    current_run_ = run;
    for (uint32_t s : p_.run_streams[run]) {
      const Stream& st = p_.streams[s];
      StreamState& ss = stream_state_[s];
      ss.start = at + (st.arrival_ns - first);
      ss.gpu_free = ss.start;
      for (size_t b = 0;
           b < st.batches.size() && b < options_.loader_batches &&
           st.batches[b].epoch == st.batches[0].epoch && st.batches[b].val == st.batches[0].val;
           ++b) {
        Push(ss.start, EventType::kIssue, s, b);
      }
      if (st.batches.empty()) Push(ss.start, EventType::kStreamEnd, s, 0);
    }
  }

  void StreamEnded(uint32_t /*stream*/, int64_t t) {
    makespan_ = std::max(makespan_, t);
    if (--running_in_run_ == 0) StartRun(current_run_ + 1, makespan_);
  }

  void HandleEvicted(int64_t /*now*/) {
    for (Key k : evicted_) {
      inflight_.erase(k);
      auto it = prefetched_.find(k);
      if (it != prefetched_.end()) {
        if (!it->second.read) result_.prefetch_wasted_bytes += SizeOfPrefetched(k);
        prefetched_.erase(it);
        if (ensemble_ != nullptr) ensemble_->Evicted(k);
      }
    }
    evicted_.clear();
  }

  uint64_t SizeOfPrefetched(Key k) const {
    auto it = prefetch_size_.find(k);
    return it == prefetch_size_.end() ? 0 : it->second;
  }

  // The rank declares what it reads from `batch` on. Reads and hints name the job, not the
  // stream: storage sees a job's ranks as one reader (one principal), and each rank's hint
  // replaces only its own share of the job's declared order.
  void SendHint(const Stream& st, size_t batch) {
    Hint hint;
    hint.job = st.job;
    hint.rank = st.rank;
    hint.world = p_.trace.jobs[st.job].world;
    hint.replace = true;
    const uint32_t epoch = st.batches[batch].epoch;
    Key last = 0;
    bool any = false;
    for (size_t b = batch; b < st.batches.size(); ++b) {
      const Batch& bb = st.batches[b];
      if (bb.epoch > epoch + 1) break;
      if (bb.val) continue;
      for (size_t i = bb.first; i < bb.first + bb.count; ++i) {
        const Item& item = p_.reads[st.reads[i]].item;
        if (any && item.key == last) continue;
        hint.next.push_back(item);
        last = item.key;
        any = true;
      }
    }
    if (ensemble_ != nullptr) ensemble_->AddHint(hint);
    cache_->policy().OnHint(hint);
  }

  void Issue(uint32_t s, size_t k, int64_t t) {
    const Stream& st = p_.streams[s];
    StreamState& ss = stream_state_[s];
    const Batch& batch = st.batches[k];
    PhaseStats& phase = batch.epoch == 0 ? result_.first : result_.steady;
    int64_t ready = t;
    for (size_t j = batch.first; j < batch.first + batch.count; ++j) {
      const size_t i = st.reads[j];
      const ItemRead& r = p_.reads[i];
      frontier_ = std::max(frontier_, i);
      Request req;
      req.item = r.item;
      req.job = st.job;
      req.time_ns = t;
      req.next_use = p_.next_use[i];
      const Key key = r.item.key;
      const bool held = cache_->Contains(key);
      // With a staging area: a landed prefetch is served from staging, one in flight is
      // waited for; either way the read takes it out of staging's hands, and the policy then
      // sees an ordinary miss (it admits or bypasses; the bytes are local either way).
      auto staged = held ? staged_.end() : staged_.find(key);
      auto coming =
          held || staged != staged_.end() ? staging_inflight_.end() : staging_inflight_.find(key);
      if (coming != staging_inflight_.end() && coming->second.taken) {
        coming = staging_inflight_.end();  // already handed over by an earlier read
      }
      const Outcome outcome = cache_->Read(req, &evicted_);
      int64_t item_ready;
      bool hit = held;
      bool local = held;  // served here: held, staged, or on its own prefetch's way here
      if (staged != staged_.end()) {
        item_ready = t + disk_latency_ns_ +
                     static_cast<int64_t>(static_cast<double>(r.bytes) * disk_ns_per_byte_);
        hit = local = true;
        ++result_.prefetch_useful;
        ++result_.prefetch_timely;
        Unstage(staged);
      } else if (coming != staging_inflight_.end()) {
        item_ready = coming->second.land_ns;  // a delayed hit: wait for the prefetch
        hit = local = true;
        ++result_.prefetch_useful;
        coming->second.taken = true;
        if (outcome == Outcome::kAdmitted) {
          inflight_[key] = item_ready;
        } else {
          bypassed_[key] = item_ready;
        }
      } else if (held) {
        auto in = inflight_.find(key);
        if (in != inflight_.end() && in->second > t) {
          item_ready = in->second;  // a delayed hit: wait for the fetch in flight
        } else {
          if (in != inflight_.end()) inflight_.erase(in);
          item_ready = t + disk_latency_ns_ +
                       static_cast<int64_t>(static_cast<double>(r.bytes) * disk_ns_per_byte_);
        }
        auto pf = prefetched_.find(key);
        if (pf != prefetched_.end() && !pf->second.read) {
          pf->second.read = true;
          ++result_.prefetch_useful;
          if (pf->second.land_ns <= t) ++result_.prefetch_timely;
        }
      } else {
        auto by = bypassed_.find(key);
        if (by != bypassed_.end() && by->second > t) {
          item_ready = by->second;  // a bypassed fetch of it is still in flight: share it
          hit = true;
        } else {
          item_ready = link_.Fetch(t, r.item.size);
          result_.wan_demand_bytes += r.item.size;
          ++result_.demand_fetches;
          if (outcome == Outcome::kAdmitted) {
            inflight_[key] = item_ready;
          } else {
            bypassed_[key] = item_ready;
          }
        }
      }
      HandleEvicted(t);
      if (ensemble_ != nullptr) ensemble_->Observe(req, local);
      ++phase.reads;
      phase.bytes += r.bytes;
      if (hit) {
        ++phase.hits;
        phase.hit_bytes += r.bytes;
      }
      ready = std::max(ready, item_ready);
    }
    // The accelerator takes the batch once its data is in and the previous batch is done.
    if (!options_.sync_ranks) return Take(s, k, std::max(ready, ss.gpu_free));
    // Data-parallel ranks take step k together: once every rank has its batch and every rank
    // finished step k − 1 (the gradient all-reduce ends a step for all ranks at once), so the
    // slowest rank's data sets the pace, as in DDP.
    auto [step, added] = steps_.try_emplace(std::make_pair(st.job, k));
    step->second.begin = std::max({step->second.begin, ready, ss.gpu_free});
    step->second.streams.push_back(s);
    if (step->second.streams.size() < step_ranks_[st.job][k]) return;
    const SyncStep done = std::move(step->second);
    steps_.erase(step);
    for (uint32_t r : done.streams) Take(r, k, done.begin);
  }

  // Stream s's accelerator takes its batch k at `begin`; its loader asks for what follows.
  void Take(uint32_t s, size_t k, int64_t begin) {
    const Stream& st = p_.streams[s];
    StreamState& ss = stream_state_[s];
    const Batch& batch = st.batches[k];
    PhaseStats& phase = batch.epoch == 0 ? result_.first : result_.steady;
    const int64_t stall = begin - ss.gpu_free;
    const int64_t compute =
        static_cast<int64_t>(std::llround(batch.compute_ns * options_.compute_scale));
    ss.gpu_free = begin + compute;
    phase.stall_s += static_cast<double>(stall) / 1e9;
    phase.compute_s += static_cast<double>(compute) / 1e9;
    if (!batch.val && (k == 0 || st.batches[k - 1].epoch != batch.epoch)) ++phase.rank_epochs;
    if (epoch_compute_.size() <= batch.epoch) {
      epoch_compute_.resize(batch.epoch + 1);
      epoch_stall_.resize(batch.epoch + 1);
    }
    epoch_compute_[batch.epoch] += static_cast<double>(compute) / 1e9;
    epoch_stall_[batch.epoch] += static_cast<double>(stall) / 1e9;
    // Taking batch k frees a loader slot for batch k + depth of the same epoch (and split).
    // A DataLoader starts a fresh iterator per epoch: the next segment's first batches are
    // requested once the last batch of this one has been computed.
    auto same_segment = [&](size_t other) {
      return st.batches[other].epoch == batch.epoch && st.batches[other].val == batch.val;
    };
    const size_t next = k + options_.loader_batches;
    if (next < st.batches.size() && same_segment(next)) Push(begin, EventType::kIssue, s, next);
    if (k + 1 == st.batches.size()) {
      Push(ss.gpu_free, EventType::kStreamEnd, s, 0);
    } else if (!same_segment(k + 1)) {
      const Batch& first = st.batches[k + 1];
      for (size_t j = k + 1; j < st.batches.size() && j < k + 1 + options_.loader_batches &&
                             st.batches[j].epoch == first.epoch && st.batches[j].val == first.val;
           ++j) {
        Push(ss.gpu_free, EventType::kIssue, s, j);
      }
    }
  }

  void Land(size_t record, int64_t t) {
    const PrefetchRecord& pr = records_[record];
    prefetch_inflight_bytes_ -= pr.item.size;
    if (pr.via_ensemble && ensemble_ != nullptr) ensemble_->Landed(pr.item.key, pr.item.size, true);
    if (staging_bytes_ == 0) return;
    const Key key = pr.item.key;
    auto it = staging_inflight_.find(key);
    const bool taken = it != staging_inflight_.end() && it->second.taken;
    if (it != staging_inflight_.end()) staging_inflight_.erase(it);
    // Read on its way here (the read handed it to the policy), or held already: not staged.
    if (taken || cache_->Contains(key) || staged_.count(key) != 0) return;
    // While the policy's share has free room (a cold cache), the spoke admits a landed
    // prefetch into it, evicting nothing; staging takes the rest.
    Request arrival;
    arrival.item = pr.item;
    arrival.job = pr.job;
    arrival.time_ns = t;
    arrival.next_use = pr.next_use;
    if (cache_->InsertIfRoom(arrival)) {
      prefetched_[key] = PrefetchState{pr.land_ns, false};
      prefetch_size_[key] = pr.item.size;
      return;
    }
    staged_order_.emplace(next_stage_, key);
    staged_.emplace(key, StagedItem{pr.item.size, next_stage_++});
    staged_bytes_ += pr.item.size;
    // Staging is a ring: the oldest staged items go first, unread (waste).
    while (staged_bytes_ > staging_bytes_ && !staged_order_.empty()) {
      auto oldest = staged_.find(staged_order_.begin()->second);
      result_.prefetch_wasted_bytes += oldest->second.size;
      ++result_.staging_drops;
      const Key dropped = oldest->first;
      Unstage(oldest);
      if (ensemble_ != nullptr) ensemble_->Evicted(dropped);
    }
  }

  struct StagedItem {
    uint64_t size = 0;
    uint64_t order = 0;
  };

  void Unstage(std::unordered_map<Key, StagedItem>::iterator it) {
    staged_bytes_ -= it->second.size;
    staged_order_.erase(it->second.order);
    staged_.erase(it);
  }

  // Room left for prefetches: staging and the policy's free room, less what is staged and
  // what is on its way.
  uint64_t StagingRoom() const {
    const uint64_t used = staged_bytes_ + prefetch_inflight_bytes_;
    const uint64_t room = staging_bytes_ + cache_->free_bytes();
    return used >= room ? 0 : room - used;
  }

  // Fetches `item` ahead of its read; false if the cache would not admit it.
  bool StartPrefetch(const Item& item, uint32_t job, int64_t next_use, int64_t now,
                     bool via_ensemble) {
    if (!AdmitPrefetch(item, job, next_use, now)) return false;
    Launched(item, job, next_use, link_.Fetch(now, item.size), via_ensemble);
    return true;
  }

  // Without staging a prefetch enters the policy's capacity before it is fetched; false if
  // the policy refuses it.
  bool AdmitPrefetch(const Item& item, uint32_t job, int64_t next_use, int64_t now) {
    if (staging_bytes_ != 0) return true;
    Request req;
    req.item = item;
    req.job = job;
    req.time_ns = now;
    req.prefetch = true;
    req.next_use = next_use;
    const bool admitted = cache_->Insert(req, &evicted_);
    HandleEvicted(now);
    return admitted;
  }

  // Records a prefetch of `item` on its way, landing at `land`.
  void Launched(const Item& item, uint32_t job, int64_t next_use, int64_t land, bool via_ensemble) {
    if (staging_bytes_ == 0) {
      inflight_[item.key] = land;
      prefetched_[item.key] = PrefetchState{land, false};
      prefetch_size_[item.key] = item.size;
    } else {
      staging_inflight_[item.key] = StagingFetch{land, false};
    }
    result_.wan_prefetch_bytes += item.size;
    ++result_.prefetch_issued;
    prefetch_inflight_bytes_ += item.size;
    records_.push_back(PrefetchRecord{item, land, via_ensemble, job, next_use});
    Push(land, EventType::kLand, 0, records_.size() - 1);
  }

  // Needs no prefetch: held, staged, or a prefetch of it is on its way.
  bool Cached(Key key) const {
    return cache_->Contains(key) || staged_.count(key) != 0 || staging_inflight_.count(key) != 0;
  }

  void Prefetch(int64_t now) {
    // Prefetches land in staging: plan only while it has room for them.
    const bool staging = staging_bytes_ != 0;
    if (staging && StagingRoom() == 0) return;
    if (config_.prefetch == PrefetchMode::kEnsemble) {
      const std::vector<Candidate> plan = ensemble_->Plan(
          now, [this](Key key) { return Cached(key); }, staging ? StagingRoom() : UINT64_MAX);
      // The plan moves in batches, each one request (a round trip, then its bytes), and
      // every item of a batch lands when the batch does, as a spoke's fetchers move them.
      std::vector<const Candidate*> batch;
      uint64_t batch_bytes = 0;
      auto send = [&] {
        if (batch.empty()) return;
        const int64_t land = link_.Fetch(now, batch_bytes);
        for (const Candidate* c : batch) Launched(c->item, c->job, kNever, land, true);
        batch.clear();
        batch_bytes = 0;
      };
      for (const Candidate& c : plan) {
        if (Cached(c.item.key) || !AdmitPrefetch(c.item, c.job, kNever, now)) {
          ensemble_->Landed(c.item.key, c.item.size, false);
          continue;
        }
        if (!batch.empty() && (batch.size() >= options_.prefetch_batch_items ||
                               batch_bytes + c.item.size > options_.prefetch_batch_bytes)) {
          send();
        }
        batch.push_back(&c);
        batch_bytes += c.item.size;
      }
      send();
    } else if (config_.prefetch == PrefetchMode::kClairvoyant) {
      // The trace's next reads in order, while the budget allows; stop at the first the cache
      // refuses (Belady keeps everything it holds for sooner), and retry at the next event.
      if (cursor_ <= frontier_) cursor_ = frontier_ + 1;
      while (prefetch_inflight_bytes_ < prefetch_budget_ && cursor_ < p_.reads.size()) {
        const Item& item = p_.reads[cursor_].item;
        if (staging && !Cached(item.key) && item.size > StagingRoom()) {
          if (item.size <= staging_bytes_) break;  // wait for room
          ++cursor_;                               // larger than staging: it could only be dropped
          continue;
        }
        if (!Cached(item.key) &&
            !StartPrefetch(item, 0, static_cast<int64_t>(cursor_), now, false)) {
          break;
        }
        ++cursor_;
      }
    }
  }

  const PreparedTrace::State& p_;
  const SimConfig& config_;
  const SimOptions& options_;
  Link link_;
  const int64_t disk_latency_ns_ = std::llround(options_.disk_latency_s * 1e9);
  const double disk_ns_per_byte_ = 1e9 / options_.disk_bytes_per_s;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<Ensemble> ensemble_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  std::vector<StreamState> stream_state_;
  std::vector<std::vector<uint32_t>> step_ranks_;          // per job, per step: ranks that take it
  std::map<std::pair<uint32_t, size_t>, SyncStep> steps_;  // (job, step) waiting for ranks
  size_t running_in_run_ = 0;
  size_t current_run_ = 0;
  int64_t makespan_ = 0;
  std::vector<Key> evicted_;
  std::unordered_map<Key, int64_t> inflight_;          // admitted, landing at
  std::unordered_map<Key, int64_t> bypassed_;          // fetched but not admitted, landing at
  std::unordered_map<Key, PrefetchState> prefetched_;  // prefetches in the policy (no staging)
  // With a staging area (staging_bytes_ > 0):
  struct StagingFetch {
    int64_t land_ns = 0;
    bool taken = false;  // a read waited for it and handed it to the policy
  };
  uint64_t staging_bytes_ = 0;
  std::unordered_map<Key, StagingFetch> staging_inflight_;  // prefetches on their way
  std::unordered_map<Key, StagedItem> staged_;              // landed, not read yet
  std::map<uint64_t, Key> staged_order_;                    // oldest first
  uint64_t staged_bytes_ = 0;
  uint64_t next_stage_ = 0;
  std::unordered_map<Key, uint64_t> prefetch_size_;
  std::vector<PrefetchRecord> records_;
  uint64_t prefetch_inflight_bytes_ = 0;
  uint64_t prefetch_budget_ = 0;
  size_t frontier_ = 0;  // furthest item read issued so far
  size_t cursor_ = 0;    // the clairvoyant prefetcher's position
  std::vector<double> epoch_compute_, epoch_stall_;
  SimResult result_;
};

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string part = s.substr(i, j - i);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    if (!part.empty()) out.push_back(part);
    i = j + 1;
  }
  return out;
}

const std::vector<std::string>& ExpertNames() {
  static const std::vector<std::string> kNames = {"hints",   "epoch", "readahead",
                                                  "history", "dir",   "peer"};
  return kNames;
}

}  // namespace

Result<SimResult> Simulate(const PreparedTrace& trace, const SimConfig& config,
                           const SimOptions& options) {
  if (options.link_bytes_per_s <= 0 || options.disk_bytes_per_s <= 0 || options.rtt_s < 0 ||
      options.disk_latency_s < 0 || options.loader_batches == 0 || options.compute_scale < 0) {
    return InvalidArgument("link and disk bandwidth must be > 0, latencies >= 0, loader >= 1");
  }
  if (!(options.staging_fraction >= 0 && options.staging_fraction < 1)) {
    return InvalidArgument("staging fraction must be in [0, 1)");
  }
  Simulator sim(trace, config, options);
  return sim.Run();
}

Result<std::vector<SimConfig>> BuildConfigs(const PreparedTrace& trace, const std::string& policies,
                                            const std::string& prefetch,
                                            const std::string& prefetch_policy,
                                            uint64_t capacity_bytes) {
  std::vector<SimConfig> out;
  auto demand = [&](const std::string& name) {
    SimConfig c;
    c.label = name;
    c.policy = name;
    c.capacity_bytes = capacity_bytes;
    return c;
  };
  std::vector<std::string> names = policies == "all" ? PolicyNames() : SplitList(policies);
  for (const std::string& n : names) {
    if (std::find(PolicyNames().begin(), PolicyNames().end(), n) == PolicyNames().end()) {
      std::string known;
      for (const std::string& k : PolicyNames()) known += (known.empty() ? "" : ", ") + k;
      return InvalidArgument("unknown policy '" + n + "' (known: " + known + ", all)");
    }
  }
  // The baselines of "gap closed".
  if (std::find(names.begin(), names.end(), "lru") == names.end())
    names.insert(names.begin(), "lru");
  if (std::find(names.begin(), names.end(), "belady") == names.end()) names.push_back("belady");
  for (const std::string& n : names) {
    out.push_back(demand(n));
    if (n == "neural") {
      // NeuralCache as a spoke runs it when the job sends its sampler's order: eviction that
      // knows each rank's epoch order, still without prefetching.
      out.push_back(demand(n));
      out.back().label = "neural+hints";
      out.back().hints = true;
    }
  }

  if (std::find(PolicyNames().begin(), PolicyNames().end(), prefetch_policy) ==
      PolicyNames().end()) {
    return InvalidArgument("unknown --prefetch-policy '" + prefetch_policy + "'");
  }
  if (prefetch_policy == "belady") {
    return InvalidArgument(
        "--prefetch-policy belady needs next uses of prefetched items; the "
        "clairvoyant bound in '--prefetch ablation' uses it");
  }
  auto ensemble = [&](const std::string& label, std::vector<std::string> experts, bool hints) {
    SimConfig c;
    c.label = label;
    c.policy = prefetch_policy;
    c.capacity_bytes = capacity_bytes;
    c.prefetch = PrefetchMode::kEnsemble;
    c.experts = std::move(experts);
    c.hints = hints;
    return c;
  };
  if (prefetch == "none" || prefetch.empty()) return out;
  if (prefetch == "all") {
    out.push_back(ensemble("ens+hints", ExpertNames(), true));
    return out;
  }
  if (prefetch == "ablation") {
    for (const std::string& e : ExpertNames()) {
      out.push_back(ensemble("only:" + e, {e}, e == "hints"));
    }
    out.push_back(ensemble("ens-hints", ExpertNames(), false));
    out.push_back(ensemble("ens+hints", ExpertNames(), true));
    SimConfig inf = demand("lru");
    inf.label = "bound:infinite";
    inf.capacity_bytes = std::max<uint64_t>(1, trace.unique_bytes());
    out.push_back(inf);
    SimConfig oracle = demand("belady");
    oracle.label = "bound:clairvoyant";
    oracle.prefetch = PrefetchMode::kClairvoyant;
    out.push_back(oracle);
    return out;
  }
  std::vector<std::string> experts;
  bool hints = false;
  for (const std::string& e : SplitList(prefetch)) {
    const std::string& name = e;
    if (name == "clairvoyant") {
      SimConfig oracle = demand("belady");
      oracle.label = "bound:clairvoyant";
      oracle.prefetch = PrefetchMode::kClairvoyant;
      out.push_back(oracle);
      continue;
    }
    if (std::find(ExpertNames().begin(), ExpertNames().end(), name) == ExpertNames().end()) {
      return InvalidArgument("unknown expert '" + name +
                             "' (hints, epoch, readahead, history, dir, peer, clairvoyant; or "
                             "none, all, ablation)");
    }
    if (name == "hints") hints = true;
    experts.push_back(name);
  }
  if (!experts.empty()) {
    std::string label = "ens:";
    for (size_t i = 0; i < experts.size(); ++i) label += (i ? "," : "") + experts[i];
    out.push_back(ensemble(label, experts, hints));
  }
  return out;
}

double GapClosed(const std::vector<SimResult>& results, const SimResult& r) {
  const SimResult* lru = nullptr;
  const SimResult* belady = nullptr;
  for (const SimResult& x : results) {
    if (x.label == "lru") lru = &x;
    if (x.label == "belady") belady = &x;
  }
  if (lru == nullptr || belady == nullptr) return std::nan("");
  const double span = belady->all.hit_ratio() - lru->all.hit_ratio();
  if (std::abs(span) < 1e-12) return std::nan("");
  return (r.all.hit_ratio() - lru->all.hit_ratio()) / span;
}

}  // namespace weft::cache
