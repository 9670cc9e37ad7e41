#include "cache/trace_gen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <unordered_set>
#include <utility>

namespace weft::cache {

namespace {

constexpr uint64_t kKB = 1000;
constexpr uint64_t kMB = 1000 * 1000;
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kRecordBytes = 2048;
constexpr uint32_t kRanksPerNode = 8;

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// SplitMix64 with its own distributions, so traces do not depend on the standard library's
// (implementation-defined) ones.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double Uniform() { return (static_cast<double>(Next() >> 11) + 1.0) * 0x1.0p-53; }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  double Normal() {
    const double u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }
  double Exponential(double mean) { return -std::log(Uniform()) * mean; }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t s_;
};

uint64_t LogNormalBytes(Rng& rng, double mean, double sd, uint64_t min_bytes) {
  const double sigma2 = std::log(1.0 + (sd * sd) / (mean * mean));
  const double mu = std::log(mean) - sigma2 / 2;
  const double v = std::exp(mu + std::sqrt(sigma2) * rng.Normal());
  return std::max<uint64_t>(min_bytes, static_cast<uint64_t>(v));
}

// Draws k of `pool` without replacement, item i with weight rank[i]^-α (Efraimidis–Spirakis),
// returned sorted.
std::vector<uint64_t> ZipfDraw(Rng& rng, const std::vector<uint64_t>& pool,
                               const std::vector<uint64_t>& rank, double alpha, size_t k) {
  k = std::min(k, pool.size());
  std::vector<std::pair<double, uint64_t>> keyed;
  keyed.reserve(pool.size());
  for (uint64_t s : pool) {
    // Smallest -ln(u)/w wins; w = rank^-α, so -ln(u)·rank^α.
    keyed.emplace_back(-std::log(rng.Uniform()) * std::pow(static_cast<double>(rank[s]), alpha), s);
  }
  std::nth_element(keyed.begin(), keyed.begin() + static_cast<ptrdiff_t>(k), keyed.end());
  std::vector<uint64_t> out;
  out.reserve(k);
  for (size_t i = 0; i < k; ++i) out.push_back(keyed[i].second);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Printf(const char* fmt, uint64_t a, uint64_t b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), fmt, static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

// A sample is what the sampler permutes: a file, a record of the token file, or a shard.
struct Dataset {
  Trace trace;
  std::vector<uint64_t> train;  // sample ids (file ids, or record numbers for tokens)
  std::vector<uint64_t> val;
  uint64_t token_file = 0, val_token_file = 0;
};

void AddFile(Trace& t, uint64_t size, uint64_t dir, std::string path) {
  TraceFile f;
  f.id = t.files.size();
  f.size = size;
  f.dir = dir;
  f.path = std::move(path);
  t.files.push_back(std::move(f));
}

Dataset MakeDataset(const GenOptions& o, Rng& rng) {
  Dataset d;
  Trace& t = d.trace;
  const std::string& w = o.workload;
  const uint64_t n = o.files;
  const uint64_t n_val =
      o.validation ? std::max<uint64_t>(1, static_cast<uint64_t>(n * o.validation_fraction)) : 0;
  if (w == "tokens") {
    d.token_file = 0;
    AddFile(t, n * kRecordBytes, 1, "/tokens/train.bin");
    for (uint64_t i = 0; i < n; ++i) d.train.push_back(i);
    if (n_val > 0) {
      d.val_token_file = 1;
      AddFile(t, n_val * kRecordBytes, 1, "/tokens/val.bin");
      for (uint64_t i = 0; i < n_val; ++i) d.val.push_back(i);
    }
    return d;
  }
  // Files per class as in ImageNet (1281), at most 1000 classes.
  const uint64_t classes = std::clamp<uint64_t>(n / 1281, 1, 1000);
  auto size_of = [&]() -> uint64_t {
    if (o.unit_size) return o.unit_bytes;
    if (w == "images" || w == "w1" || w == "w2") {
      return LogNormalBytes(rng, 114.7 * kKB, 136 * kKB, 1 * kKB);
    }
    if (w == "volumes") return LogNormalBytes(rng, 146.6 * kMB, 68.3 * kMB, 1 * kMB);
    if (w == "scientific") {
      return static_cast<uint64_t>(std::max(1.0, 2.83 * kMB + 71.0 * kKB * rng.Normal()));
    }
    // shards: ±10 % around the nominal size
    return static_cast<uint64_t>(o.shard_bytes * (0.9 + 0.2 * rng.Uniform()));
  };
  auto path_of = [&](bool val, uint64_t i) {
    if (w == "shards")
      return Printf(val ? "/shards/val/shard-%06llu.tar" : "/shards/train/shard-%06llu.tar", i);
    if (w == "volumes")
      return Printf(val ? "/volumes/val/case_%05llu.npz" : "/volumes/train/case_%05llu.npz", i);
    if (w == "scientific")
      return Printf(
          val ? "/cosmoflow/val/univ_%07llu.tfrecord" : "/cosmoflow/train/univ_%07llu.tfrecord", i);
    if (val) return Printf("/images/val/%08llu.jpg", i);
    return Printf("/images/train/c%04llu/%08llu.jpg", i % classes, i);
  };
  for (uint64_t i = 0; i < n; ++i) {
    d.train.push_back(t.files.size());
    // Class directories get ids 2.., the validation directory 1.
    const bool classed = (w == "images" || w == "w1" || w == "w2");
    AddFile(t, size_of(), classed ? 2 + i % classes : 2, path_of(false, i));
  }
  for (uint64_t i = 0; i < n_val; ++i) {
    d.val.push_back(t.files.size());
    AddFile(t, size_of(), 1, path_of(true, i));
  }
  return d;
}

// Emits the reads of one sample at nominal time t into `out`.
void EmitSample(const GenOptions& o, const Dataset& d, bool val, uint64_t sample, Rng& rng,
                Access base, std::vector<Access>* out) {
  if (o.workload == "tokens") {
    base.file = val ? d.val_token_file : d.token_file;
    base.offset = sample * kRecordBytes;
    base.len = kRecordBytes;
    out->push_back(base);
    return;
  }
  const TraceFile& f = d.trace.files[sample];
  base.file = f.id;
  if (o.workload != "shards") {
    base.offset = 0;
    base.len = f.size;
    out->push_back(base);
    return;
  }
  // A shard is read front to back in 1–8 MB ranges.
  for (uint64_t off = 0; off < f.size;) {
    const uint64_t len = std::min(f.size - off, (1 + rng.Below(8)) * kMB);
    base.offset = off;
    base.len = len;
    out->push_back(base);
    off += len;
  }
}

struct Defaults {
  uint64_t files;
  uint32_t runs, epochs, batch;
  double subset, zipf, compute_s;
  uint64_t checkpoint_bytes;
};

Result<Defaults> DefaultsFor(const std::string& w) {
  // Compute times: DLIO H100 configs (ResNet-50 0.103 s per 64, UNet3D 0.323 s per 7,
  // CosmoFlow 0.0035 s per sample); tokens and shards are assumptions. Checkpoints: 14 B per
  // parameter (ZeRO's accounting), UNet3D's 499 MB from DLIO.
  if (w == "images") return Defaults{10000, 1, 5, 64, 0.3, 0.8, 0.103, 358 * kMB};
  if (w == "volumes") return Defaults{168, 1, 5, 7, 0.3, 0.8, 0.323, 499 * kMB};
  if (w == "scientific") return Defaults{10000, 1, 5, 16, 0.3, 0.8, 16 * 0.0035, 112 * kMB};
  if (w == "tokens") return Defaults{1 << 20, 1, 1, 64, 0.3, 0.8, 0.2, 1400 * kMB};
  if (w == "shards") return Defaults{64, 1, 5, 4, 0.3, 0.8, 0.26, 358 * kMB};
  if (w == "w1") return Defaults{20000, 1, 10, 64, 1.0, 0.0, 0.103, 358 * kMB};
  if (w == "w2") return Defaults{100000, 5, 5, 64, 0.3, 0.0, 0.103, 358 * kMB};
  return InvalidArgument("unknown workload '" + w +
                         "' (images, volumes, scientific, tokens, shards, w1, w2)");
}

}  // namespace

const std::vector<std::string>& WorkloadNames() {
  static const std::vector<std::string> kNames = {"images", "volumes", "scientific", "tokens",
                                                  "shards", "w1",      "w2"};
  return kNames;
}

Result<GenOptions> WorkloadDefaults(const GenOptions& options) {
  WEFT_ASSIGN_OR_RETURN(Defaults def, DefaultsFor(options.workload));
  GenOptions o = options;
  if (o.files == 0) o.files = def.files;
  if (o.runs == 0) o.runs = def.runs;
  if (o.epochs == 0) o.epochs = def.epochs;
  if (o.batch == 0) o.batch = def.batch;
  if (o.subset < 0) o.subset = def.subset;
  if (o.zipf < 0) o.zipf = def.zipf;
  if (o.compute_s < 0) o.compute_s = def.compute_s;
  if (o.checkpoint_bytes == 0) o.checkpoint_bytes = def.checkpoint_bytes;
  if (o.subset <= 0 || o.subset > 1) return InvalidArgument("--subset must be in (0, 1]");
  if (o.overlap < 0 || o.overlap > 1) return InvalidArgument("--overlap must be in [0, 1]");
  if (o.zipf > 10) return InvalidArgument("--zipf must be in [0, 10]");
  if (o.jobs == 0 || o.jobs > 1024) return InvalidArgument("--jobs must be in [1, 1024]");
  if (o.world == 0 || o.world > 65536) return InvalidArgument("--world must be in [1, 65536]");
  if (o.files > (uint64_t{1} << 32)) return InvalidArgument("--files must be at most 2^32");
  if (o.runs > 1000 || o.epochs > 1000) return InvalidArgument("--runs/--epochs at most 1000");
  if (o.arrival_s < 0) return InvalidArgument("--arrival-s must be >= 0");
  if (o.validation_fraction <= 0 || o.validation_fraction > 1) {
    return InvalidArgument("validation fraction must be in (0, 1]");
  }
  if (o.unit_bytes == 0) return InvalidArgument("--unit-bytes must be > 0");
  if (o.shard_bytes < 8 * kMiB) return InvalidArgument("--shard-mb must be at least 8");
  return o;
}

Result<Trace> GenerateTrace(const GenOptions& options) {
  WEFT_ASSIGN_OR_RETURN(GenOptions o, WorkloadDefaults(options));
  Rng data_rng(Mix(o.seed, 0xda7a));
  Dataset d = MakeDataset(o, data_rng);
  Trace& trace = d.trace;

  // Usefulness rank 1..n over the training samples, fixed per dataset.
  const uint64_t n = d.train.size();
  std::vector<uint64_t> rank_of_index(n);
  std::iota(rank_of_index.begin(), rank_of_index.end(), 1);
  data_rng.Shuffle(rank_of_index);
  std::vector<uint64_t> all(n);
  std::iota(all.begin(), all.end(), 0);  // indices into d.train

  const uint64_t k = std::max<uint64_t>(1, std::llround(o.subset * static_cast<double>(n)));
  const int64_t compute_ns = std::llround(o.compute_s * 1e9);
  std::vector<uint64_t> prev;  // previous run's subset (indices into d.train), sorted
  std::vector<Access> out;
  int64_t run_start = 0;
  uint32_t next_job = 0;
  for (uint32_t run = 0; run < o.runs; ++run) {
    Rng run_rng(Mix(o.seed, 1000 + run));
    std::vector<uint64_t> subset;
    if (run == 0 || o.subset >= 1.0) {
      subset = k >= n ? all : ZipfDraw(run_rng, all, rank_of_index, o.zipf, k);
    } else {
      const size_t keep = std::min<size_t>(prev.size(), std::llround(o.overlap * prev.size()));
      subset = ZipfDraw(run_rng, prev, rank_of_index, o.zipf, keep);
      std::vector<uint64_t> fresh;
      std::set_difference(all.begin(), all.end(), prev.begin(), prev.end(),
                          std::back_inserter(fresh));
      std::vector<uint64_t> added =
          ZipfDraw(run_rng, fresh, rank_of_index, o.zipf, k > keep ? k - keep : 0);
      subset.insert(subset.end(), added.begin(), added.end());
      std::sort(subset.begin(), subset.end());
    }

    int64_t arrival = run_start;
    int64_t run_end = run_start;
    for (uint32_t j = 0; j < o.jobs; ++j) {
      if (j > 0) arrival += std::llround(run_rng.Exponential(o.arrival_s) * 1e9);
      TraceJob job;
      job.id = next_job++;
      job.run = run;
      job.seed = Mix(o.seed, (uint64_t{run} << 20) | j);
      job.sampler = o.workload == "shards" ? "shards" : "shuffle";
      job.world = o.world;
      job.batch = o.batch;
      job.compute_ns = compute_ns;
      job.workload = o.workload;
      trace.jobs.push_back(job);

      Rng io_rng(Mix(job.seed, 77));
      int64_t step = 0;  // batches so far (all ranks step together)
      uint64_t train_steps = 0;
      auto emit_split = [&](const std::vector<uint64_t>& order, bool val, uint32_t epoch) {
        // Rank r takes order[r], order[r + world], ... (DistributedSampler without padding);
        // a batch is `batch` reads of one rank (a shard yields several reads).
        std::vector<std::vector<Access>> per_rank(o.world);
        for (size_t i = 0; i < order.size(); ++i) {
          const uint32_t r = static_cast<uint32_t>(i % o.world);
          Access base;
          base.job = job.id;
          base.run = run;
          base.rank = r;
          base.node = r / kRanksPerNode;
          base.op = val ? Op::kValRead : Op::kRead;
          base.epoch = epoch;
          EmitSample(o, d, val, order[i], io_rng, base, &per_rank[r]);
        }
        size_t longest = 0;
        for (const auto& reads : per_rank) longest = std::max(longest, reads.size());
        const size_t batches = (longest + o.batch - 1) / o.batch;
        for (size_t b = 0; b < batches; ++b) {
          const int64_t t = arrival + step * compute_ns;
          for (uint32_t r = 0; r < o.world; ++r) {
            const size_t end = std::min(per_rank[r].size(), (b + 1) * o.batch);
            for (size_t i = b * o.batch; i < end; ++i) {
              per_rank[r][i].t_ns = t;
              out.push_back(per_rank[r][i]);
            }
          }
          ++step;
          if (!val && o.checkpoint_every > 0 && ++train_steps % o.checkpoint_every == 0) {
            Access w;
            w.t_ns = arrival + step * compute_ns;
            w.job = job.id;
            w.run = run;
            w.op = Op::kWrite;
            w.epoch = epoch;
            w.file = trace.files.size();
            w.len = o.checkpoint_bytes;
            AddFile(trace, o.checkpoint_bytes, 0,
                    Printf("/checkpoints/job%llu/step-%08llu.pt", job.id, train_steps));
            out.push_back(w);
          }
        }
      };
      for (uint32_t e = 0; e < o.epochs; ++e) {
        // A fresh permutation from seed + epoch, as DistributedSampler.set_epoch does.
        Rng perm_rng(job.seed + e);
        std::vector<uint64_t> order;
        order.reserve(subset.size());
        for (uint64_t idx : subset) order.push_back(d.train[idx]);
        perm_rng.Shuffle(order);
        emit_split(order, false, e);
        if (!d.val.empty()) emit_split(d.val, true, e);
      }
      run_end = std::max(run_end, arrival + step * compute_ns);
    }
    run_start = run_end;
    prev = std::move(subset);
  }
  // Merge the jobs by time; stable, so each job keeps its order.
  std::stable_sort(out.begin(), out.end(),
                   [](const Access& a, const Access& b) { return a.t_ns < b.t_ns; });
  trace.accesses = std::move(out);
  trace.Index();
  return std::move(trace);
}

}  // namespace weft::cache
