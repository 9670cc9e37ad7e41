// The six standard prefetch experts of anchors-cache.md §5a, most precise first. Each keeps
// per-job state (a cursor, a read rate) so that Observe is O(1) amortised and Propose costs
// O(limit) plus bounded scanning, never O(dataset).
//
// Memory caps (each expert, whatever the trace):
//   kMaxJobs jobs per expert (the least recently read is forgotten);
//   kMaxHintItems declared items per job; kMaxSetItems items in an epoch set or a per-job read
//   set (beyond it the expert stops recording, so it may re-propose an item already read);
//   kMaxHistoryItems items of cross-run heat (the coldest half is pruned when full);
//   kMaxDirs cached directory listings; kPeerQueue peer candidates per job.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "cache/internal/declared_order.h"
#include "cache/internal/window.h"
#include "cache/prefetch.h"

namespace weft::cache {
namespace {

constexpr size_t kMaxJobs = 64;
constexpr size_t kMaxHintItems = size_t{1} << 20;
constexpr size_t kMaxSetItems = size_t{1} << 21;
constexpr size_t kMaxHistoryItems = size_t{1} << 21;
constexpr size_t kMaxHistorySnapshot = size_t{1} << 16;
constexpr size_t kMaxDirs = 64;
constexpr size_t kPeerQueue = 1024;
constexpr size_t kRecentReads = 4096;  // the dir expert's "just read" memory per job
// A job that has not read for this long proposes nothing: it finished or stalled.
constexpr int64_t kIdleNs = 60'000'000'000;
// Before a job's read rate is known, assume a DataLoader-like 100 reads/s.
constexpr double kDefaultIntervalS = 0.01;

// A job's read rate: the mean gap over its last kPaceWindow reads, pauses left out. A loader's
// reads come in bursts (a batch at once, then a training step), so the pace is what a window
// spanning several steps says; an average of recent gaps would forget the step within one
// burst. A gap of over kMinPauseS that is also far beyond the pace is a pause (evaluation, a
// checkpoint) and counts as one ordinary gap: in full it would put the next epoch's first
// reads seconds away.
class ReadRate {
 public:
  void Tick(int64_t t_ns) {
    if (last_ns_ >= 0 && t_ns >= last_ns_) {
      double gap = static_cast<double>(t_ns - last_ns_) / 1e9;
      const double pace = interval_s();
      if (times_.size() >= kPaceSamples && gap > std::max(kPauseFactor * pace, kMinPauseS)) {
        gap = pace;
      }
      active_ns_ += static_cast<int64_t>(gap * 1e9);
    }
    times_.push_back(active_ns_);
    if (times_.size() > kPaceWindow) times_.pop_front();
    last_ns_ = std::max(last_ns_, t_ns);
  }
  // Seconds until the job's k-th next read (k ≥ 1), counting from its last read.
  double Eta(size_t k, int64_t now_ns) const {
    const double since =
        last_ns_ < 0 ? 0 : static_cast<double>(std::max<int64_t>(0, now_ns - last_ns_)) / 1e9;
    return std::max(0.0, static_cast<double>(k) * interval_s() - since);
  }
  double interval_s() const {
    if (times_.size() < 2) return kDefaultIntervalS;
    return static_cast<double>(times_.back() - times_.front()) / 1e9 /
           static_cast<double>(times_.size() - 1);
  }
  bool Idle(int64_t now_ns) const { return last_ns_ >= 0 && now_ns - last_ns_ > kIdleNs; }
  bool started() const { return last_ns_ >= 0; }

 private:
  static constexpr size_t kPaceWindow = 256;  // reads
  static constexpr size_t kPaceSamples = 16;  // reads before pauses are told apart
  static constexpr double kPauseFactor = 50;
  static constexpr double kMinPauseS = 1.0;

  int64_t last_ns_ = -1;
  int64_t active_ns_ = 0;      // time of the job's reads, pauses left out
  std::deque<int64_t> times_;  // active_ns_ at each of the last kPaceWindow reads
};

// Per-job state, ordered by job id so that proposals repeat run to run, bounded to kMaxJobs.
template <typename T>
class JobTable {
 public:
  T& Touch(uint32_t job) {
    auto it = jobs_.find(job);
    if (it == jobs_.end()) {
      if (jobs_.size() >= kMaxJobs) EvictStalest();
      it = jobs_.emplace(job, Entry{}).first;
    }
    it->second.touched = ++clock_;
    return it->second.value;
  }
  T* Find(uint32_t job) {
    auto it = jobs_.find(job);
    return it == jobs_.end() ? nullptr : &it->second.value;
  }
  const T* Find(uint32_t job) const {
    auto it = jobs_.find(job);
    return it == jobs_.end() ? nullptr : &it->second.value;
  }
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [job, e] : jobs_) f(job, e.value);
  }

 private:
  struct Entry {
    T value{};
    uint64_t touched = 0;
  };
  void EvictStalest() {
    auto victim = jobs_.begin();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->second.touched < victim->second.touched) victim = it;
    }
    jobs_.erase(victim);
  }
  std::map<uint32_t, Entry> jobs_;
  uint64_t clock_ = 0;
};

// Merges per-job proposals: soonest first, at most `limit`, ties in job then proposal order.
void AppendSoonest(std::vector<Candidate>* pool, size_t limit, std::vector<Candidate>* out) {
  auto sooner = [](const Candidate& a, const Candidate& b) { return a.eta_s < b.eta_s; };
  if (!std::is_sorted(pool->begin(), pool->end(), sooner)) {
    std::stable_sort(pool->begin(), pool->end(), sooner);
  }
  if (pool->size() > limit) pool->resize(limit);
  out->insert(out->end(), pool->begin(), pool->end());
}

// Cached directory listings (Catalog::ItemsInDir is O(directory)), each indexed by file and
// by item; at most kMaxDirs, the oldest listed is dropped first.
class DirIndex {
 public:
  struct Listing {
    std::vector<Item> items;                          // name order, blocks of a file together
    std::vector<uint32_t> file_begin;                 // index in `items` of each file's first block
    std::unordered_map<uint64_t, uint32_t> file_pos;  // file -> index in file_begin
    std::unordered_map<Key, uint32_t> item_pos;       // key -> index in items

    uint32_t FileEnd(uint32_t f) const {
      return f + 1 < file_begin.size() ? file_begin[f + 1] : static_cast<uint32_t>(items.size());
    }
  };

  explicit DirIndex(const Catalog* catalog) : catalog_(catalog) {}

  const Listing* Get(uint64_t dir) {
    if (catalog_ == nullptr) return nullptr;
    auto it = dirs_.find(dir);
    if (it != dirs_.end()) return &it->second;
    if (dirs_.size() >= kMaxDirs) {
      dirs_.erase(order_.front());
      order_.pop_front();
    }
    Listing& l = dirs_[dir];
    order_.push_back(dir);
    l.items = catalog_->ItemsInDir(dir);
    for (uint32_t i = 0; i < l.items.size(); ++i) {
      const Item& item = l.items[i];
      if (l.file_pos.emplace(item.file, static_cast<uint32_t>(l.file_begin.size())).second) {
        l.file_begin.push_back(i);
      }
      l.item_pos.emplace(item.key, i);
    }
    return &l;
  }

 private:
  const Catalog* catalog_;
  std::unordered_map<uint64_t, Listing> dirs_;
  std::deque<uint64_t> order_;
};

// ---------------------------------------------------------------------------------------------
// 1. Declared hints: each rank of a job declares its own sequence, and the job's reads are
// matched against all of them (internal/declared_order.h). The ranks of a job read at one pace
// (DDP steps them together), so each rank's k-th unread item comes at about the job's
// (k × ranks)-th next read.
class HintExpert final : public Expert {
 public:
  std::string name() const override { return "hints"; }

  void OnHint(const Hint& hint) override { jobs_.Touch(hint.job).order.Declare(hint); }

  void Observe(const Request& read, bool /*hit*/) override {
    Job* job = jobs_.Find(read.job);
    if (job == nullptr) return;  // a job that never declared anything
    jobs_.Touch(read.job);
    job->rate.Tick(read.time_ns);
    job->matches.Push(job->order.Consume(read.item.key));
  }

  void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) override {
    std::vector<Candidate> pool;
    jobs_.ForEach([&](uint32_t id, Job& job) {
      if (job.rate.Idle(now_ns)) return;
      // A job that declared an order but never started reading it is idle too, in time.
      if (job.order.empty() || job.rate.started()) {
        job.declared_ns = -1;
      } else if (job.declared_ns < 0) {
        job.declared_ns = now_ns;
      } else if (now_ns - job.declared_ns > kIdleNs) {
        return;
      }
      // Laplace-smoothed match rate: a fresh hint is trusted (p = 1) until reads disagree.
      const double p = static_cast<double>(job.matches.hits() + 1) /
                       static_cast<double>(job.matches.count() + 1);
      // Round robin over the ranks with something declared: each rank's k-th unread item.
      using Cursor = std::deque<internal::DeclaredOrder::Declared>::const_iterator;
      std::vector<std::pair<Cursor, Cursor>> cursors;
      for (const auto& [r, rank] : job.order.ranks()) {
        if (!rank.seq.empty()) cursors.emplace_back(rank.seq.begin(), rank.seq.end());
      }
      const size_t width = std::max<size_t>(1, cursors.size());
      size_t proposed = 0;
      for (size_t k = 1; proposed < limit && !cursors.empty(); ++k) {
        for (size_t c = 0; c < cursors.size() && proposed < limit;) {
          auto& [at, end] = cursors[c];
          while (at != end && at->read) ++at;
          if (at == end) {
            cursors.erase(cursors.begin() + static_cast<ptrdiff_t>(c));
            continue;
          }
          pool.push_back(Candidate{at->item, id, job.rate.Eta(k * width, now_ns), p, -1});
          ++at;
          ++proposed;
          ++c;
        }
      }
    });
    AppendSoonest(&pool, limit, out);
  }

  bool Overrides(uint32_t job_id) const override {
    const Job* job = jobs_.Find(job_id);
    return job != nullptr && job->matches.count() >= kOverrideMinReads &&
           static_cast<double>(job->matches.hits()) >=
               0.99 * static_cast<double>(job->matches.count());
  }

 private:
  static constexpr size_t kMatchWindow = 256;  // "the job's last N reads"
  static constexpr size_t kOverrideMinReads = 100;

  struct Job {
    internal::DeclaredOrder order{kMaxHintItems};
    ReadRate rate;
    int64_t declared_ns = -1;  // first proposal of a declared order nobody has read from yet
    internal::HitWindow matches{kMatchWindow};
  };
  JobTable<Job> jobs_;
};

// ---------------------------------------------------------------------------------------------
// 2. Epoch-set detection. The first epoch ends at the job's first repeated item; its items, in
// first-read order, are the epoch set. In each later epoch every unread item of the set will be
// read before the epoch ends, at a time uniform over what is left of it, so all get the same
// ETA (half the remaining epoch) and are listed in first-epoch order (as good as any shuffle).
// Unread items are found through skip pointers with path compression: O(α) each.
class EpochExpert final : public Expert {
 public:
  std::string name() const override { return "epoch"; }

  void Observe(const Request& read, bool /*hit*/) override {
    Job& job = jobs_.Touch(read.job);
    job.rate.Tick(read.time_ns);
    const Key key = read.item.key;
    auto it = job.index.find(key);
    if (!job.learned) {
      if (it == job.index.end()) {
        if (job.items.size() < kMaxSetItems) {
          job.index.emplace(key, static_cast<uint32_t>(job.items.size()));
          job.items.push_back(read.item);
          job.stamp.push_back(job.epoch);
        }
        return;
      }
      job.learned = true;  // the first repeat: epoch 1 is complete
      StartEpoch(&job);
    } else if (it == job.index.end()) {
      // Reads outside the set: the job moved to other data; relearn once they are many.
      if (++job.outside > std::max<size_t>(16, job.items.size() / 4)) {
        job = Job{};
        job.rate.Tick(read.time_ns);
        job.index.emplace(key, 0);
        job.items.push_back(read.item);
        job.stamp.push_back(job.epoch);
      }
      return;
    } else if (job.stamp[it->second] == job.epoch || job.remaining == 0) {
      StartEpoch(&job);
    }
    const uint32_t pos = job.index.at(key);
    if (job.stamp[pos] != job.epoch) {
      job.stamp[pos] = job.epoch;
      --job.remaining;
    }
  }

  void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) override {
    std::vector<Candidate> pool;
    jobs_.ForEach([&](uint32_t id, Job& job) {
      if (!job.learned || job.rate.Idle(now_ns)) return;
      const double eta = static_cast<double>(job.remaining) * job.rate.interval_s() / 2;
      // Outside reads are the only sign the set is wrong; otherwise it is (almost) certain.
      const double p =
          0.95 * (1.0 - static_cast<double>(job.outside) /
                            static_cast<double>(std::max<size_t>(1, job.items.size())));
      size_t k = 0;
      for (size_t pos = FirstUnread(&job, 0); pos < job.items.size() && k < limit;
           pos = FirstUnread(&job, pos + 1), ++k) {
        pool.push_back(Candidate{job.items[pos], id, eta, p, -1});
      }
    });
    AppendSoonest(&pool, limit, out);
  }

 private:
  struct Job {
    bool learned = false;
    uint32_t epoch = 1;
    std::unordered_map<Key, uint32_t> index;  // key -> position in items
    std::vector<Item> items;                  // the epoch set, first-read order
    std::vector<uint32_t> stamp;              // the epoch in which each item was last read
    std::vector<uint32_t> next;               // skip pointers over read positions
    size_t remaining = 0;                     // unread items this epoch
    size_t outside = 0;                       // reads outside the set since it was learned
    ReadRate rate;
  };

  static void StartEpoch(Job* job) {
    ++job->epoch;
    job->remaining = job->items.size();
    job->next.resize(job->items.size());
    for (uint32_t i = 0; i < job->next.size(); ++i) job->next[i] = i + 1;
  }

  // The first position ≥ i unread this epoch (items.size() if none).
  static size_t FirstUnread(Job* job, size_t i) {
    const size_t n = job->items.size();
    size_t r = i;
    while (r < n && job->stamp[r] == job->epoch) r = job->next[r];
    while (i < r) {  // every position on the path was read: point it past them all
      const size_t nx = job->next[i];
      job->next[i] = static_cast<uint32_t>(r);
      i = nx;
    }
    return r;
  }

  JobTable<Job> jobs_;
};

// ---------------------------------------------------------------------------------------------
// 3. Sequential and shard readahead. Within a file: blocks read in order (a run of ≥ 2)
// predict the following blocks. Across a directory's files: files read in name order (≥ 2
// steps; small files count) predict the next files in name order; shards read whole in another
// order predict the directory's unread shards (first block only, at lower probability; reading
// it starts a block run).
class ReadaheadExpert final : public Expert {
 public:
  explicit ReadaheadExpert(const Catalog* catalog) : catalog_(catalog), dirs_(catalog) {}
  std::string name() const override { return "readahead"; }

  void Observe(const Request& read, bool /*hit*/) override {
    Job& job = jobs_.Touch(read.job);
    job.rate.Tick(read.time_ns);
    const Item& item = read.item;
    if (job.has_last && item.file == job.file) {
      if (item.block > job.block && item.block <= job.block + 2) {
        ++job.run;
      } else if (item.block != job.block) {
        job.run = 1;
      }
      job.block = item.block;
      return;
    }
    // A new file: was the previous one read to its end?
    if (job.has_last && job.block + 1 >= job.file_items.size()) {
      ++job.whole_files;
      job.files_done.insert(job.file);
    }
    if (!job.has_last || item.dir != job.dir) {
      job.dir = item.dir;
      job.dir_pos = -1;
      job.name_run = 0;
      job.whole_files = 0;
      job.files_done.clear();
    }
    job.has_last = true;
    job.file = item.file;
    job.block = item.block;
    job.run = 1;
    job.file_items = catalog_ == nullptr ? std::vector<Item>{} : catalog_->ItemsOfFile(item.file);
    if (job.file_items.empty()) job.file_items.push_back(item);
    const DirIndex::Listing* listing = dirs_.Get(item.dir);
    if (listing == nullptr) return;
    auto fp = listing->file_pos.find(item.file);
    const int64_t pos = fp == listing->file_pos.end() ? -2 : int64_t{fp->second};
    job.name_run = (pos >= 0 && pos == job.dir_pos + 1) ? job.name_run + 1 : 0;
    job.dir_pos = pos;
  }

  void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) override {
    std::vector<Candidate> pool;
    jobs_.ForEach([&](uint32_t id, Job& job) {
      if (!job.has_last || job.rate.Idle(now_ns)) return;
      size_t k = 0;
      auto add = [&](const Item& item, double p) {
        ++k;
        pool.push_back(Candidate{item, id, job.rate.Eta(k, now_ns), p, -1});
      };
      // A single-block file counts as read to its end.
      const bool file_done = job.block + 1 >= job.file_items.size();
      if (job.run >= 2) {
        const double p = std::min(0.95, job.run / (job.run + 1.0));
        for (size_t b = job.block + 1; b < job.file_items.size() && k < limit; ++b) {
          add(job.file_items[b], p);
        }
      }
      if (!file_done && job.run < 2) return;
      if (k >= limit) return;
      const DirIndex::Listing* listing = dirs_.Get(job.dir);
      if (listing == nullptr || job.dir_pos < 0) return;
      if (job.name_run >= 2) {
        const double p = std::min(0.95, job.name_run / (job.name_run + 1.0));
        const size_t after = listing->FileEnd(static_cast<uint32_t>(job.dir_pos));
        for (size_t i = after; i < listing->items.size() && k < limit; ++i) {
          add(listing->items[i], p);
        }
      } else if (job.whole_files >= 2 && file_done) {
        size_t shards = 0;
        for (uint32_t f = 0; f < listing->file_begin.size() && shards < kShardsAhead; ++f) {
          const Item& first = listing->items[listing->file_begin[f]];
          if (first.file == job.file || job.files_done.count(first.file) != 0) continue;
          if (k >= limit) break;
          ++shards;
          add(first, 0.5);
        }
      }
    });
    AppendSoonest(&pool, limit, out);
  }

 private:
  static constexpr size_t kShardsAhead = 4;
  struct Job {
    bool has_last = false;
    uint64_t file = 0;
    uint32_t block = 0;
    int run = 0;                   // blocks read in order in `file`
    std::vector<Item> file_items;  // ItemsOfFile(file)
    uint64_t dir = 0;
    int64_t dir_pos = -1;  // index of `file` among the directory's files
    int name_run = 0;      // consecutive steps to the next file in name order
    int whole_files = 0;   // files of `dir` read to their end
    std::unordered_set<uint64_t> files_done;
    ReadRate rate;
  };
  const Catalog* catalog_;
  DirIndex dirs_;
  JobTable<Job> jobs_;
};

// ---------------------------------------------------------------------------------------------
// 4. Cross-run history. Each item's heat counts the jobs that read it, decayed by kHeatDecay
// per job started since (lazily, through the generation stamp). When a job starts, it takes a
// snapshot of the hottest items; until its first re-read (the end of its first epoch) it
// proposes the ones it has not read yet, with p = the fraction of its own first reads that
// were already in the history (Laplace-smoothed).
class HistoryExpert final : public Expert {
 public:
  std::string name() const override { return "history"; }

  void Observe(const Request& read, bool /*hit*/) override {
    Job* job = jobs_.Find(read.job);
    if (job == nullptr) {
      job = &jobs_.Touch(read.job);
      ++generation_;
      job->generation = generation_;
      Snapshot(&job->snapshot);
    } else {
      jobs_.Touch(read.job);
    }
    job->rate.Tick(read.time_ns);
    const Key key = read.item.key;
    if (job->read.count(key) != 0) {
      // The job's second epoch: what it reads is known now (the epoch expert's domain), and
      // the history items it has not read are not in its set.
      job->snapshot.clear();
      return;
    }
    if (job->read.size() < kMaxSetItems) job->read.insert(key);
    ++job->first_reads;
    auto it = heat_.find(key);
    if (it != heat_.end() && it->second.born < job->generation) ++job->in_history;
    if (it == heat_.end()) {
      if (heat_.size() >= kMaxHistoryItems) Prune();
      it = heat_.emplace(key, Heat{read.item, 0, generation_, generation_}).first;
    }
    it->second.heat = Decayed(it->second) + 1;
    it->second.generation = generation_;
  }

  void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) override {
    std::vector<Candidate> pool;
    jobs_.ForEach([&](uint32_t id, Job& job) {
      if (job.snapshot.empty() || job.rate.Idle(now_ns)) return;
      const double p = (static_cast<double>(job.in_history) + 0.5) /
                       (static_cast<double>(job.first_reads) + 1.0);
      while (job.cursor < job.snapshot.size() && job.read.count(job.snapshot[job.cursor].key)) {
        ++job.cursor;
      }
      // Reads of history items fall uniformly over the run; assume it reads about as many
      // as the snapshot holds.
      const size_t left = job.snapshot.size() - job.cursor;
      const double eta = static_cast<double>(left) * job.rate.interval_s() / 2;
      size_t k = 0;
      const size_t scan_end = std::min(job.snapshot.size(), job.cursor + 8 * limit);
      for (size_t i = job.cursor; i < scan_end && k < limit; ++i) {
        const Item& item = job.snapshot[i];
        if (job.read.count(item.key) != 0) continue;
        ++k;
        pool.push_back(Candidate{item, id, eta, p, -1});
      }
    });
    AppendSoonest(&pool, limit, out);
  }

 private:
  static constexpr double kHeatDecay = 0.7;
  static constexpr double kMinHeat = 0.05;

  struct Heat {
    Item item;
    double heat = 0;
    uint64_t generation = 0;  // when `heat` was last brought up to date
    uint64_t born = 0;        // the generation of the job that first read it
  };
  struct Job {
    uint64_t generation = 0;
    std::vector<Item> snapshot;  // hottest first, as of the job's start
    size_t cursor = 0;           // snapshot[0, cursor) all read by the job
    std::unordered_set<Key> read;
    uint64_t first_reads = 0;
    uint64_t in_history = 0;
    ReadRate rate;
  };

  double Decayed(const Heat& h) const {
    return h.heat * std::pow(kHeatDecay, static_cast<double>(generation_ - h.generation));
  }

  // The hottest items born before this generation (the history of previous jobs).
  void Snapshot(std::vector<Item>* out) const {
    std::vector<std::pair<double, const Heat*>> hot;
    for (const auto& [key, h] : heat_) {
      const double d = Decayed(h);
      if (d >= kMinHeat) hot.emplace_back(d, &h);
    }
    auto hotter = [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second->item.key < b.second->item.key;
    };
    const size_t keep = std::min(hot.size(), kMaxHistorySnapshot);
    std::partial_sort(hot.begin(), hot.begin() + static_cast<ptrdiff_t>(keep), hot.end(), hotter);
    out->clear();
    for (size_t i = 0; i < keep; ++i) out->push_back(hot[i].second->item);
  }

  // Drops the colder half of the heat table.
  void Prune() {
    std::vector<double> heats;
    heats.reserve(heat_.size());
    for (const auto& [key, h] : heat_) heats.push_back(Decayed(h));
    auto mid = heats.begin() + static_cast<ptrdiff_t>(heats.size() / 2);
    std::nth_element(heats.begin(), mid, heats.end());
    const double cut = *mid;
    for (auto it = heat_.begin(); it != heat_.end();) {
      it = Decayed(it->second) <= cut ? heat_.erase(it) : std::next(it);
    }
  }

  std::unordered_map<Key, Heat> heat_;
  uint64_t generation_ = 0;
  JobTable<Job> jobs_;
};

// ---------------------------------------------------------------------------------------------
// 5. Directory locality: the kDirAhead items after the job's last read in its directory's name
// order, skipping what the job read recently. p is low: kDirP times how often the job's consecutive
// reads stay in one directory.
class DirectoryExpert final : public Expert {
 public:
  explicit DirectoryExpert(const Catalog* catalog) : dirs_(catalog) {}
  std::string name() const override { return "dir"; }

  void Observe(const Request& read, bool /*hit*/) override {
    Job& job = jobs_.Touch(read.job);
    job.rate.Tick(read.time_ns);
    if (job.has_last) job.same_dir.Push(read.item.dir == job.last.dir);
    job.has_last = true;
    job.last = read.item;
    if (job.recent_order.size() >= kRecentReads) {
      const Key old = job.recent_order.front();
      job.recent_order.pop_front();
      auto it = job.recent.find(old);
      if (it != job.recent.end() && --it->second == 0) job.recent.erase(it);
    }
    job.recent_order.push_back(read.item.key);
    ++job.recent[read.item.key];
  }

  void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) override {
    std::vector<Candidate> pool;
    jobs_.ForEach([&](uint32_t id, Job& job) {
      if (!job.has_last || job.rate.Idle(now_ns)) return;
      const DirIndex::Listing* listing = dirs_.Get(job.last.dir);
      if (listing == nullptr || listing->items.empty()) return;
      auto at = listing->item_pos.find(job.last.key);
      const size_t start = at == listing->item_pos.end() ? 0 : at->second + 1;
      const size_t n = listing->items.size();
      const double p = kDirP * job.same_dir.Rate(0.5);
      const size_t most = std::min(limit, kDirAhead);
      size_t k = 0;
      for (size_t step = 0; step < n && step < 2 * most && k < most; ++step) {
        const Item& item = listing->items[(start + step) % n];
        if (job.recent.count(item.key) != 0) continue;
        ++k;
        pool.push_back(Candidate{item, id, job.rate.Eta(k, now_ns), p, -1});
      }
    });
    AppendSoonest(&pool, limit, out);
  }

 private:
  static constexpr double kDirP = 0.2;
  // Siblings proposed per job: a weak signal is not worth scoring hundreds of guesses a call.
  static constexpr size_t kDirAhead = 32;
  struct Job {
    bool has_last = false;
    Item last;
    internal::HitWindow same_dir{256};
    std::deque<Key> recent_order;
    std::unordered_map<Key, uint32_t> recent;
    ReadRate rate;
  };
  DirIndex dirs_;
  JobTable<Job> jobs_;
};

// ---------------------------------------------------------------------------------------------
// 6. Peer jobs: what other jobs read recently and this job has not read this epoch (an epoch
// ends at the job's first repeated item), oldest first, as a follower in lockstep would. p is
// how often this job's reads were items another job had read within the last kPeerWindow
// reads (Laplace-smoothed).
class PeerExpert final : public Expert {
 public:
  std::string name() const override { return "peer"; }

  void Observe(const Request& read, bool /*hit*/) override {
    const Key key = read.item.key;
    const uint64_t seq = ++seq_;
    Job& job = jobs_.Touch(read.job);
    job.rate.Tick(read.time_ns);
    job.last_seq = seq;
    auto seen = recent_.find(key);
    const bool peer_read = seen != recent_.end() && seen->second.job != read.job;
    job.overlap.Push(peer_read);
    if (job.epoch_read.count(key) != 0) job.epoch_read.clear();  // a new epoch
    if (job.epoch_read.size() < kMaxSetItems) job.epoch_read.insert(key);
    jobs_.ForEach([&](uint32_t id, Job& other) {
      if (id == read.job || seq - other.last_seq > kPeerWindow) return;
      if (other.queue.size() >= kPeerQueue) other.queue.pop_front();
      other.queue.push_back(read.item);
    });
    recent_[key] = Seen{read.job, seq};
    ring_.push_back({key, seq});
    if (ring_.size() > kPeerWindow) {
      auto [old, old_seq] = ring_.front();
      ring_.pop_front();
      auto it = recent_.find(old);
      if (it != recent_.end() && it->second.seq == old_seq) recent_.erase(it);
    }
  }

  void Propose(int64_t now_ns, size_t limit, std::vector<Candidate>* out) override {
    std::vector<Candidate> pool;
    jobs_.ForEach([&](uint32_t id, Job& job) {
      if (job.rate.Idle(now_ns)) return;
      while (!job.queue.empty() && job.epoch_read.count(job.queue.front().key) != 0) {
        job.queue.pop_front();
      }
      const double p = static_cast<double>(job.overlap.hits() + 1) /
                       static_cast<double>(job.overlap.count() + 2);
      std::unordered_set<Key> dup;
      size_t k = 0;
      for (const Item& item : job.queue) {
        if (k >= limit) break;
        if (job.epoch_read.count(item.key) != 0 || !dup.insert(item.key).second) continue;
        ++k;
        pool.push_back(Candidate{item, id, job.rate.Eta(k, now_ns), p, -1});
      }
    });
    AppendSoonest(&pool, limit, out);
  }

 private:
  static constexpr uint64_t kPeerWindow = 8192;
  struct Seen {
    uint32_t job = 0;
    uint64_t seq = 0;
  };
  struct Job {
    uint64_t last_seq = 0;
    std::deque<Item> queue;  // other jobs' reads, oldest first
    std::unordered_set<Key> epoch_read;
    internal::HitWindow overlap{512};
    ReadRate rate;
  };
  uint64_t seq_ = 0;
  std::unordered_map<Key, Seen> recent_;  // last reader of each key in the window
  std::deque<std::pair<Key, uint64_t>> ring_;
  JobTable<Job> jobs_;
};

}  // namespace

std::unique_ptr<Expert> MakeHintExpert() {
  return std::make_unique<HintExpert>();
}
std::unique_ptr<Expert> MakeEpochSetExpert() {
  return std::make_unique<EpochExpert>();
}
std::unique_ptr<Expert> MakeReadaheadExpert(const Catalog* catalog) {
  return std::make_unique<ReadaheadExpert>(catalog);
}
std::unique_ptr<Expert> MakeHistoryExpert() {
  return std::make_unique<HistoryExpert>();
}
std::unique_ptr<Expert> MakeDirectoryExpert(const Catalog* catalog) {
  return std::make_unique<DirectoryExpert>(catalog);
}
std::unique_ptr<Expert> MakePeerExpert() {
  return std::make_unique<PeerExpert>();
}

// Unknown names are skipped: the caller (a flag parser) reports them, this cannot.
std::vector<std::unique_ptr<Expert>> MakeExperts(const Catalog* catalog,
                                                 const std::vector<std::string>& names) {
  static const char* const kAll[] = {"hints", "epoch", "readahead", "history", "dir", "peer"};
  std::vector<std::unique_ptr<Expert>> experts;
  for (const char* name : kAll) {
    if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
    const std::string n = name;
    if (n == "hints") experts.push_back(MakeHintExpert());
    if (n == "epoch") experts.push_back(MakeEpochSetExpert());
    if (n == "readahead") experts.push_back(MakeReadaheadExpert(catalog));
    if (n == "history") experts.push_back(MakeHistoryExpert());
    if (n == "dir") experts.push_back(MakeDirectoryExpert(catalog));
    if (n == "peer") experts.push_back(MakePeerExpert());
  }
  return experts;
}

}  // namespace weft::cache
