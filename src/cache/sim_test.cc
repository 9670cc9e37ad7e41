#include "cache/sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cache/cache.h"
#include "cache/trace_gen.h"

namespace weft::cache {
namespace {

// A one-job trace over `sizes`, reading `order` (file indices) in batches of `batch`.
Trace HandTrace(const std::vector<uint64_t>& sizes,
                const std::vector<std::vector<uint64_t>>& epochs, uint32_t batch,
                int64_t compute_ns) {
  Trace t;
  TraceJob job;
  job.batch = batch;
  job.compute_ns = compute_ns;
  t.jobs.push_back(job);
  for (size_t i = 0; i < sizes.size(); ++i) {
    t.files.push_back(TraceFile{i, sizes[i], 1, "/d/f" + std::to_string(i)});
  }
  for (uint32_t e = 0; e < epochs.size(); ++e) {
    for (uint64_t f : epochs[e]) {
      Access a;
      a.file = f;
      a.len = sizes[f];
      a.epoch = e;
      t.accesses.push_back(a);
    }
  }
  t.Index();
  return t;
}

std::shared_ptr<const PreparedTrace> Prepare(Trace t) {
  auto p = PreparedTrace::Prepare(std::move(t));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

// A generated trace, prepared; null (with a test failure) if the options are refused.
std::shared_ptr<const PreparedTrace> Generate(const GenOptions& g) {
  Result<Trace> t = GenerateTrace(g);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? Prepare(std::move(t).value()) : nullptr;
}

SimResult Replay(const PreparedTrace& p, SimConfig c, const SimOptions& o) {
  Result<SimResult> r = Simulate(p, c, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

SimOptions SlowLink() {
  SimOptions o;
  o.link_bytes_per_s = 1e6;  // 1 MB/s
  o.rtt_s = 0.05;
  o.connections = 2;
  o.disk_bytes_per_s = 1e9;
  o.disk_latency_s = 1e-4;
  return o;
}

TEST(Simulator, OneMissCostsRttPlusTransferAndAHitCostsTheDisk) {
  // One 1 MB file read in two epochs; 0.1 s of compute per batch.
  auto p = Prepare(HandTrace({1'000'000}, {{0}, {0}}, 1, 100'000'000));
  SimConfig c;
  c.label = "lru";
  c.capacity_bytes = 10'000'000;
  const SimResult r = Replay(*p, c, SlowLink());
  EXPECT_EQ(r.first.reads, 1u);
  EXPECT_EQ(r.first.hits, 0u);
  EXPECT_EQ(r.steady.hits, 1u);
  EXPECT_NEAR(r.first.stall_s, 0.05 + 1.0, 1e-6);  // rtt + size / bandwidth
  // Epoch 2's loader starts when epoch 1's last batch is computed; its hit costs the disk.
  EXPECT_NEAR(r.steady.stall_s, 1e-4 + 1e-3, 1e-9);
  EXPECT_EQ(r.wan_demand_bytes, 1'000'000u);
  EXPECT_NEAR(r.makespan_s, 1.05 + 0.1 + 1.1e-3 + 0.1, 1e-6);
  EXPECT_NEAR(r.first.utilisation(), 0.1 / 1.15, 1e-6);
}

TEST(Simulator, TheLoaderOverlapsFetchesWithCompute) {
  // Three 1 MB misses, one per batch, 0.5 s of compute each. Two batches in flight: the
  // fetches land at 1.05, 2.05 and 3.05 (the pipe is FIFO), so the stalls are 1.05 + 0.5 + 0.5.
  // One batch in flight: each fetch starts when the previous batch is taken: 1.05 + 0.55 + 0.55.
  auto p = Prepare(HandTrace({1'000'000, 1'000'000, 1'000'000}, {{0, 1, 2}}, 1, 500'000'000));
  SimConfig c;
  c.capacity_bytes = 10'000'000;
  SimOptions o = SlowLink();
  o.loader_batches = 2;
  EXPECT_NEAR(Replay(*p, c, o).first.stall_s, 2.05, 1e-6);
  o.loader_batches = 1;
  EXPECT_NEAR(Replay(*p, c, o).first.stall_s, 2.15, 1e-6);
}

TEST(Simulator, ParallelFetchesShareTheLink) {
  // Two 1 MB misses in one batch over two connections: the round trips overlap, the bytes
  // queue: rtt + 2 MB / (1 MB/s). With one connection: two round trips.
  auto p = Prepare(HandTrace({1'000'000, 1'000'000}, {{0, 1}}, 2, 0));
  SimConfig c;
  c.capacity_bytes = 10'000'000;
  EXPECT_NEAR(Replay(*p, c, SlowLink()).first.stall_s, 0.05 + 2.0, 1e-6);
  SimOptions one = SlowLink();
  one.connections = 1;
  EXPECT_NEAR(Replay(*p, c, one).first.stall_s, 0.05 + 1.0 + 0.05 + 1.0, 1e-6);
}

TEST(Simulator, ReadsOfAnItemInFlightWaitForItsFetch) {
  // Two reads of one file in the same batch: one fetch, the second rides on it.
  auto p = Prepare(HandTrace({1'000'000}, {{0, 0}}, 2, 0));
  SimConfig c;
  c.capacity_bytes = 10'000'000;
  const SimResult r = Replay(*p, c, SlowLink());
  EXPECT_EQ(r.demand_fetches, 1u);
  EXPECT_EQ(r.first.hits, 1u);
  EXPECT_NEAR(r.first.stall_s, 1.05, 1e-6);
}

Trace W1(uint64_t files, uint32_t epochs) {
  GenOptions o;
  o.workload = "w1";
  o.files = files;
  o.epochs = epochs;
  o.unit_size = true;
  Result<Trace> t = GenerateTrace(o);
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(Simulator, WithAnInfiniteCacheEveryLaterEpochHits) {
  auto p = Prepare(W1(400, 3));
  SimConfig c;
  c.capacity_bytes = p->unique_bytes();
  EXPECT_EQ(p->unique_bytes(), p->run_unique_bytes());
  const SimResult r = Replay(*p, c, SimOptions{});
  EXPECT_EQ(r.first.hits, 0u);
  EXPECT_EQ(r.steady.reads, 800u);
  EXPECT_EQ(r.steady.hits, 800u);
  EXPECT_EQ(r.wan_bytes(), p->unique_bytes());
}

TEST(Simulator, BeladyReachesTheEpochBound) {
  // One job, cache = half the data, 4 epochs: at most c·(E−1)/E = 0.375 of reads can hit.
  auto p = Prepare(W1(400, 4));
  SimConfig c;
  c.label = "belady";
  c.policy = "belady";
  c.capacity_bytes = p->unique_bytes() / 2;
  const SimResult r = Replay(*p, c, SimOptions{});
  EXPECT_GE(r.all.hit_ratio(), 0.95 * 0.375);
  EXPECT_LE(r.all.hit_ratio(), 0.375 + 1e-9);
}

TEST(Simulator, ClairvoyantPrefetchRemovesSteadyStallsWhenBandwidthSuffices) {
  auto p = Prepare(W1(300, 3));
  SimConfig c;
  c.policy = "belady";
  c.capacity_bytes = p->unique_bytes() / 2;
  c.prefetch = PrefetchMode::kClairvoyant;
  SimOptions o;  // 64 × 128 KiB per 0.103 s: ~81 MB/s and ~620 fetches/s at c = 0
  o.link_bytes_per_s = 1e9;
  o.connections = 64;
  const SimResult r = Replay(*p, c, o);
  EXPECT_GT(r.prefetch_issued, 0u);
  EXPECT_LE(r.steady.stall_s, 0.05 * (r.steady.compute_s + r.steady.stall_s));
  EXPECT_GT(r.precision(), 0.9);

  // LRU on demand stalls at each epoch's start (Belady on demand keeps the epoch's first
  // reads, so it does not).
  SimConfig demand = c;
  demand.policy = "lru";
  demand.prefetch = PrefetchMode::kNone;
  EXPECT_GT(Replay(*p, demand, o).steady.stall_s, r.steady.stall_s + 0.02);
}

TEST(Simulator, RunsFollowEachOtherAndReplayIsDeterministic) {
  GenOptions g;
  g.workload = "w2";
  g.files = 1000;
  g.runs = 3;
  g.epochs = 2;
  g.jobs = 2;
  g.arrival_s = 1;
  auto p = Generate(g);
  ASSERT_NE(p, nullptr);
  SimConfig c;
  c.capacity_bytes = p->run_unique_bytes() / 2;
  const SimResult a = Replay(*p, c, SlowLink());
  const SimResult b = Replay(*p, c, SlowLink());
  EXPECT_EQ(a.all.hits, b.all.hits);
  EXPECT_EQ(a.all.stall_s, b.all.stall_s);
  EXPECT_EQ(a.makespan_s, b.makespan_s);
  // Six jobs of 2 × 300 reads; three runs one after another, each at least its compute time.
  EXPECT_EQ(a.all.reads, 3600u);
  EXPECT_GE(a.makespan_s, 3 * 10 * 0.103);
}

// Eight ranks per job (DistributedSampler dealing), one job after another on overlapping
// subsets: the job is the unit, so eviction with and without the ranks' hints stays near
// Belady's, and hints never make it worse (each rank was its own "job" before, and hints
// of one rank took over another's items and let them die: 0.19 against Belady's 0.47).
TEST(Simulator, MultiRankJobsKeepNearBelady) {
  for (uint64_t seed : {5, 17}) {
    GenOptions g;
    g.workload = "images";
    g.files = 3000;
    g.runs = 3;
    g.epochs = 3;
    g.subset = 0.5;
    g.overlap = 0.5;
    g.world = 8;
    g.seed = seed;
    auto p = Generate(g);
    ASSERT_NE(p, nullptr);
    for (double fraction : {0.5, 1.0}) {
      const uint64_t capacity =
          static_cast<uint64_t>(fraction * static_cast<double>(p->run_unique_bytes()));
      Result<std::vector<SimConfig>> configs =
          BuildConfigs(*p, "neural", "none", "neural", capacity);
      ASSERT_TRUE(configs.ok());
      std::map<std::string, SimResult> by;
      for (const SimConfig& c : *configs) by[c.label] = Replay(*p, c, SimOptions{});
      const double belady = by.at("belady").all.hit_ratio();
      SCOPED_TRACE("seed " + std::to_string(seed) + " cache " + std::to_string(fraction));
      EXPECT_GE(by.at("neural").all.hit_ratio(), 0.8 * belady);
      EXPECT_GE(by.at("neural+hints").all.hit_ratio(), 0.85 * belady);
      EXPECT_GE(by.at("neural+hints").all.hit_ratio(), by.at("neural").all.hit_ratio() - 0.005);
    }
  }
}

// DDP's all-reduce steps a job's ranks together: the rank whose data is slowest sets the pace
// of all of them, and no rank runs ahead of another by a step.
TEST(Simulator, RanksTakeEachStepTogether) {
  GenOptions g;
  g.workload = "images";
  g.files = 800;
  g.epochs = 2;
  g.subset = 1;
  g.world = 4;
  auto p = Generate(g);
  ASSERT_NE(p, nullptr);
  SimConfig c;
  c.policy = "lru";
  c.capacity_bytes = p->unique_bytes() / 4;
  SimOptions together = SlowLink();
  SimOptions apart = SlowLink();
  apart.sync_ranks = false;
  const SimResult a = Replay(*p, c, together);
  const SimResult b = Replay(*p, c, apart);
  // In step, every rank waits for the slowest: more stall in all, never a shorter run.
  EXPECT_GT(a.all.stall_s, b.all.stall_s);
  EXPECT_GT(a.makespan_s, b.makespan_s);
  EXPECT_EQ(a.all.reads, b.all.reads);
}

TEST(Simulator, EnsembleConfigsRunAndReportPrefetches) {
  GenOptions g;
  g.workload = "images";
  g.files = 600;
  g.epochs = 3;
  auto p = Generate(g);
  ASSERT_NE(p, nullptr);
  Result<std::vector<SimConfig>> configs =
      BuildConfigs(*p, "lru,s3fifo", "ablation", "neural", p->run_unique_bytes() / 2);
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  std::vector<SimResult> results;
  for (const SimConfig& c : *configs) results.push_back(Replay(*p, c, SimOptions{}));
  ASSERT_EQ(results.size(), 3u + 8 + 2);  // lru s3fifo belady, experts and ensembles, bounds
  EXPECT_NEAR(GapClosed(results, results[0]), 0, 1e-9);
  EXPECT_NEAR(GapClosed(results, results[2]), 1, 1e-9);
  for (const SimResult& r : results) {
    EXPECT_EQ(r.all.reads, 3u * 180) << r.label;
    EXPECT_LE(r.prefetch_useful, r.prefetch_issued) << r.label;
  }
  const SimResult& infinite = results[results.size() - 2];
  EXPECT_EQ(infinite.label, "bound:infinite");
  EXPECT_EQ(infinite.steady.hits, infinite.steady.reads);
}

TEST(Simulator, PrefetchesLandInStagingAndNeverEvictPinnedItems) {
  // Epoch 0 reads f0, f1 (one batch); epoch 1 reads f0, f1, f2. Compute is 2 s per batch, so
  // the clairvoyant prefetch of f2 (issued at once, landing at 3.05 s) is in before epoch 1.
  auto p =
      Prepare(HandTrace({1'000'000, 1'000'000, 1'000'000}, {{0, 1}, {0, 1, 2}}, 2, 2'000'000'000));
  SimConfig c;
  c.policy = "epoch";
  c.prefetch = PrefetchMode::kClairvoyant;
  c.capacity_bytes = 3'200'000;  // the policy: 2.08 MB (f0, f1); staging: 1.12 MB (f2)
  SimOptions o = SlowLink();
  o.staging_fraction = 0.35;
  const SimResult r = Replay(*p, c, o);
  EXPECT_EQ(r.staging_bytes, 1'120'000u);
  EXPECT_EQ(r.prefetch_issued, 1u);
  EXPECT_EQ(r.prefetch_useful, 1u);
  EXPECT_EQ(r.prefetch_timely, 1u);
  EXPECT_EQ(r.prefetch_wasted_bytes, 0u);
  EXPECT_EQ(r.steady.hits, 3u);  // f0, f1 pinned by the policy; f2 served from staging
  EXPECT_EQ(r.wan_bytes(), 3'000'000u);

  // The old model, with the same policy share: Insert makes "epoch" evict a pinned item
  // (one read this epoch) for f2, and epoch 1 fetches it again.
  c.capacity_bytes = 2'080'000;
  o.staging_fraction = 0;
  const SimResult old = Replay(*p, c, o);
  EXPECT_EQ(old.staging_bytes, 0u);
  EXPECT_EQ(old.prefetch_issued, 1u);
  EXPECT_EQ(old.steady.hits, 2u);
  EXPECT_EQ(old.wan_bytes(), 4'000'000u);

  // Demand-only configs have nothing to stage: the policy gets the whole capacity.
  SimConfig demand = c;
  demand.prefetch = PrefetchMode::kNone;
  demand.capacity_bytes = 3'200'000;
  o.staging_fraction = 0.35;
  const SimResult d = Replay(*p, demand, o);
  EXPECT_EQ(d.staging_bytes, 0u);
  EXPECT_EQ(d.steady.hits, 2u);  // f0, f1; f2 is new in epoch 1
}

TEST(Simulator, PrefetchesMoveInBatchesOfOneRoundTrip) {
  // Twenty 10 KB files, read in two epochs of batches of one, 10 ms of compute each; the
  // hints expert declares each epoch's order. On a 50 ms link with two connections, one
  // request per item moves 10 KB per 30 ms; batches of up to 64 items move them at once.
  std::vector<uint64_t> order(20);
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  auto p = Prepare(HandTrace(std::vector<uint64_t>(20, 10'000), {order, order}, 1, 10'000'000));
  SimConfig c;
  c.policy = "epoch";
  c.prefetch = PrefetchMode::kEnsemble;
  c.experts = {"hints"};
  c.hints = true;
  c.capacity_bytes = 10'000'000;
  SimOptions o = SlowLink();
  o.loader_batches = 1;
  o.prefetch_batch_items = 1;
  const SimResult single = Replay(*p, c, o);
  o.prefetch_batch_items = 64;
  const SimResult batched = Replay(*p, c, o);
  EXPECT_EQ(batched.wan_bytes(), single.wan_bytes());
  EXPECT_LT(batched.first.stall_s, single.first.stall_s);
  EXPECT_GE(batched.first.hits, single.first.hits);
}

TEST(Simulator, AFullStagingAreaStopsPlanningAndUnreadItemsAreWaste) {
  // Ten 1 MB files in one directory; the job reads three of them. The directory expert
  // prefetches its neighbours; at most S = 2 MB of them (staged unread + in flight) at once,
  // so at most two unread items are ever fetched, and they are the waste. (The policy's share,
  // 0.5 MB, has no room for a 1 MB prefetch.)
  auto p = Prepare(HandTrace(std::vector<uint64_t>(10, 1'000'000), {{0, 1, 2}}, 1, 2'000'000'000));
  SimConfig c;
  c.policy = "epoch";
  c.prefetch = PrefetchMode::kEnsemble;
  c.experts = {"dir"};
  c.capacity_bytes = 2'500'000;
  SimOptions o = SlowLink();
  o.staging_fraction = 0.8;
  const SimResult r = Replay(*p, c, o);
  const SimResult again = Replay(*p, c, o);
  EXPECT_EQ(r.staging_bytes, 2'000'000u);
  EXPECT_GT(r.prefetch_issued, 0u);
  EXPECT_LE(r.prefetch_issued, r.prefetch_useful + 2);
  EXPECT_EQ(r.staging_drops, 0u);
  EXPECT_EQ(r.prefetch_wasted_bytes, (r.prefetch_issued - r.prefetch_useful) * 1'000'000);
  EXPECT_EQ(r.wan_prefetch_bytes, r.prefetch_issued * 1'000'000);
  EXPECT_EQ(r.all.hits, again.all.hits);
  EXPECT_EQ(r.all.stall_s, again.all.stall_s);
  EXPECT_EQ(r.prefetch_issued, again.prefetch_issued);

  // A cold cache with room in the policy's share: prefetches go there too (evicting
  // nothing), so the prefetcher runs further ahead than staging alone allows.
  c.capacity_bytes = 10'000'000;
  o.staging_fraction = 0.2;
  const SimResult roomy = Replay(*p, c, o);
  EXPECT_EQ(roomy.staging_bytes, 2'000'000u);
  EXPECT_GT(roomy.prefetch_issued, r.prefetch_issued);
  EXPECT_EQ(roomy.wan_prefetch_bytes, roomy.prefetch_issued * 1'000'000);
  EXPECT_EQ(roomy.prefetch_wasted_bytes,
            (roomy.prefetch_issued - roomy.prefetch_useful) * 1'000'000);
}

TEST(Simulator, BuildConfigsRejectsUnknownNames) {
  auto p = Prepare(W1(10, 1));
  EXPECT_FALSE(BuildConfigs(*p, "lru,nope", "none", "neural", 1).ok());
  EXPECT_FALSE(BuildConfigs(*p, "lru", "epoch,psychic", "neural", 1).ok());
  EXPECT_FALSE(BuildConfigs(*p, "lru", "none", "belady", 1).ok());
  Result<std::vector<SimConfig>> all = BuildConfigs(*p, "all", "none", "neural", 1);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), PolicyNames().size() + 1);  // and neural+hints
  const auto hinted = std::find_if(all->begin(), all->end(),
                                   [](const SimConfig& c) { return c.label == "neural+hints"; });
  ASSERT_NE(hinted, all->end());
  EXPECT_TRUE(hinted->hints);
  EXPECT_EQ(hinted->policy, "neural");
  EXPECT_EQ(hinted->prefetch, PrefetchMode::kNone);
}

}  // namespace
}  // namespace weft::cache
