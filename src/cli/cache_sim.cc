#include "cli/cache_sim.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cache/sim.h"
#include "cache/trace.h"
#include "cache/trace_gen.h"

namespace weft::cli {

namespace {

using nlohmann::json;

struct TraceArgs {
  cache::GenOptions gen;
  std::string out;
  std::string oracle_general;
  double checkpoint_mb = 0;
  double shard_mb = 64;
  double unit_kb = 128;
};

struct SimArgs {
  std::string trace;
  std::string cache_size = "50%";
  std::string basis = "run";
  std::string policies = "lru,arc,sieve,s3fifo,pin,epoch,neural,belady";
  std::string prefetch = "none";
  std::string prefetch_policy = "neural";
  double link_mbit = 500;
  double rtt_ms = 40;
  uint32_t connections = 16;
  double disk_mb_s = 2000;
  double disk_us = 100;
  uint32_t loader_batches = 16;
  bool async_ranks = false;
  double compute_scale = 1;
  double lead_s = 0.5;
  double staging_fraction = 0.2;
  bool per_epoch = false;
};

std::string Gb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<double>(bytes) / 1e9);
  return buf;
}

std::string Fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

int RunCacheTrace(CommandEnv& env, TraceArgs& args) {
  args.gen.checkpoint_bytes = static_cast<uint64_t>(args.checkpoint_mb * 1e6);
  args.gen.shard_bytes = static_cast<uint64_t>(args.shard_mb * (1 << 20));
  args.gen.unit_bytes = static_cast<uint64_t>(args.unit_kb * 1024);
  Result<cache::Trace> trace = cache::GenerateTrace(args.gen);
  if (!trace.ok()) return env.UsageError("cache-trace", trace.status().message());
  Status written = cache::WriteTraceFile(*trace, args.out);
  if (!written.ok()) return env.Fail("cache-trace", written);
  if (!args.oracle_general.empty()) {
    written = cache::WriteOracleGeneralFile(*trace, args.oracle_general);
    if (!written.ok()) return env.Fail("cache-trace", written);
  }
  uint64_t bytes = 0;
  for (const cache::TraceFile& f : trace->files) bytes += f.size;
  if (env.options().json) {
    json j = {{"out", args.out},
              {"accesses", trace->accesses.size()},
              {"files", trace->files.size()},
              {"jobs", trace->jobs.size()},
              {"dataset_bytes", bytes}};
    std::fprintf(env.out(), "%s\n", j.dump().c_str());
  } else if (!env.options().quiet) {
    std::fprintf(env.out(), "wrote %s: %zu accesses by %zu jobs over %zu files (%s GB)\n",
                 args.out.c_str(), trace->accesses.size(), trace->jobs.size(), trace->files.size(),
                 Gb(bytes).c_str());
  }
  return kExitOk;
}

json PhaseJson(const cache::PhaseStats& p) {
  return {{"reads", p.reads},
          {"hit_ratio", p.hit_ratio()},
          {"byte_hit_ratio", p.byte_hit_ratio()},
          {"stall_s", p.stall_s},
          {"compute_s", p.compute_s},
          {"stall_per_epoch_s", p.stall_per_epoch_s()},
          {"utilisation", p.utilisation()}};
}

int RunCacheSim(CommandEnv& env, const SimArgs& args) {
  Result<CacheSize> size = ParseCacheSize(args.cache_size);
  if (!size.ok()) return env.UsageError("cache-sim", size.status().message());
  if (args.basis != "run" && args.basis != "trace") {
    return env.UsageError("cache-sim", "--cache-basis must be run or trace");
  }
  if (args.link_mbit <= 0 || args.rtt_ms < 0 || args.connections == 0 || args.disk_mb_s <= 0 ||
      args.disk_us < 0 || args.loader_batches == 0 || args.compute_scale < 0 || args.lead_s < 0) {
    return env.UsageError("cache-sim",
                          "link, disk, connections and loader must be > 0, latencies >= 0");
  }
  if (!(args.staging_fraction >= 0 && args.staging_fraction < 1)) {
    return env.UsageError("cache-sim", "--staging-fraction must be in [0, 1)");
  }
  Result<cache::Trace> trace = cache::ReadTraceFile(args.trace);
  if (!trace.ok()) return env.Fail("cache-sim", trace.status());
  auto prepared = cache::PreparedTrace::Prepare(std::move(trace).value());
  if (!prepared.ok()) return env.Fail("cache-sim", prepared.status());
  const cache::PreparedTrace& p = **prepared;

  const uint64_t basis = args.basis == "run" ? p.run_unique_bytes() : p.unique_bytes();
  const uint64_t capacity =
      size->bytes != 0 ? size->bytes
                       : static_cast<uint64_t>(static_cast<double>(basis) * size->percent / 100);
  Result<std::vector<cache::SimConfig>> configs =
      cache::BuildConfigs(p, args.policies, args.prefetch, args.prefetch_policy, capacity);
  if (!configs.ok()) return env.UsageError("cache-sim", configs.status().message());

  cache::SimOptions o;
  o.link_bytes_per_s = args.link_mbit * 1e6 / 8;
  o.rtt_s = args.rtt_ms / 1e3;
  o.connections = args.connections;
  o.disk_bytes_per_s = args.disk_mb_s * 1e6;
  o.disk_latency_s = args.disk_us / 1e6;
  o.loader_batches = args.loader_batches;
  o.sync_ranks = !args.async_ranks;
  o.compute_scale = args.compute_scale;
  o.lead_s = args.lead_s;
  o.staging_fraction = args.staging_fraction;

  std::vector<cache::SimResult> results;
  for (const cache::SimConfig& c : *configs) {
    Result<cache::SimResult> r = cache::Simulate(p, c, o);
    if (!r.ok()) return env.Fail("cache-sim " + c.label, r.status());
    results.push_back(std::move(r).value());
  }
  const cache::SimResult* belady = nullptr;
  for (const cache::SimResult& r : results) {
    if (r.label == "belady") belady = &r;
  }
  auto wan_vs_belady = [&](const cache::SimResult& r) {
    return belady == nullptr || belady->wan_bytes() == 0
               ? std::nan("")
               : static_cast<double>(r.wan_bytes()) / static_cast<double>(belady->wan_bytes());
  };

  if (env.options().json) {
    json rows = json::array();
    for (const cache::SimResult& r : results) {
      rows.push_back(
          {{"config", r.label},
           {"policy", r.policy},
           {"capacity_bytes", r.capacity_bytes},
           {"all", PhaseJson(r.all)},
           {"first_epoch", PhaseJson(r.first)},
           {"steady", PhaseJson(r.steady)},
           {"utilisation_per_epoch", r.utilisation_per_epoch},
           {"wan_demand_bytes", r.wan_demand_bytes},
           {"wan_prefetch_bytes", r.wan_prefetch_bytes},
           {"wan_vs_belady", std::isnan(wan_vs_belady(r)) ? json() : json(wan_vs_belady(r))},
           {"upload_bytes", r.upload_bytes},
           {"prefetch_issued", r.prefetch_issued},
           {"prefetch_precision", r.precision()},
           {"prefetch_coverage", r.coverage()},
           {"prefetch_timeliness", r.timeliness()},
           {"prefetch_wasted_bytes", r.prefetch_wasted_bytes},
           {"staging_bytes", r.staging_bytes},
           {"staging_drops", r.staging_drops},
           {"gap_closed",
            std::isnan(cache::GapClosed(results, r)) ? json() : json(cache::GapClosed(results, r))},
           {"makespan_s", r.makespan_s},
           {"host_seconds", r.sim_seconds},
           {"state", r.state}});
    }
    json j = {{"trace", args.trace},
              {"item_reads", p.item_reads()},
              {"unique_bytes", p.unique_bytes()},
              {"run_unique_bytes", p.run_unique_bytes()},
              {"capacity_bytes", capacity},
              {"results", rows}};
    std::fprintf(env.out(), "%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    return kExitOk;
  }

  std::fprintf(env.out(),
               "trace %s: %llu item reads, %s GB unique, %s GB per run; cache %s GB; link %g "
               "Mbit/s, rtt %g ms, %u connections\n",
               args.trace.c_str(), static_cast<unsigned long long>(p.item_reads()),
               Gb(p.unique_bytes()).c_str(), Gb(p.run_unique_bytes()).c_str(), Gb(capacity).c_str(),
               args.link_mbit, args.rtt_ms, args.connections);
  std::fprintf(env.out(), "%-18s %6s %6s %6s %6s %8s %6s %8s %8s %5s %5s %5s %5s %5s %7s %6s\n",
               "config", "hit", "hit1", "hitSS", "bhit", "WAN_GB", "xBel", "stall1", "stallSS",
               "util1", "utilSS", "prec", "cov", "tmly", "wasteGB", "gap");
  double host = 0;
  for (const cache::SimResult& r : results) {
    host += r.sim_seconds;
    const bool pf = r.prefetch_issued > 0;
    std::fprintf(
        env.out(), "%-18s %6s %6s %6s %6s %8s %6s %8s %8s %5s %5s %5s %5s %5s %7s %6s\n",
        r.label.c_str(), Fixed(r.all.hit_ratio(), 3).c_str(), Fixed(r.first.hit_ratio(), 3).c_str(),
        Fixed(r.steady.hit_ratio(), 3).c_str(), Fixed(r.all.byte_hit_ratio(), 3).c_str(),
        Gb(r.wan_bytes()).c_str(), Fixed(wan_vs_belady(r), 2).c_str(),
        Fixed(r.first.stall_per_epoch_s(), 2).c_str(),
        Fixed(r.steady.stall_per_epoch_s(), 2).c_str(), Fixed(r.first.utilisation(), 2).c_str(),
        Fixed(r.steady.utilisation(), 2).c_str(), pf ? Fixed(r.precision(), 2).c_str() : "-",
        pf ? Fixed(r.coverage(), 2).c_str() : "-", pf ? Fixed(r.timeliness(), 2).c_str() : "-",
        pf ? Gb(r.prefetch_wasted_bytes).c_str() : "-",
        Fixed(cache::GapClosed(results, r), 2).c_str());
  }
  if (args.per_epoch) {
    std::fprintf(env.out(), "utilisation per epoch:\n");
    for (const cache::SimResult& r : results) {
      std::string line;
      for (double u : r.utilisation_per_epoch) line += " " + Fixed(u, 2);
      std::fprintf(env.out(), "  %-18s%s\n", r.label.c_str(), line.c_str());
    }
  }
  if (!env.options().quiet) {
    std::fprintf(env.out(),
                 "(%zu configs, %llu item reads each, %.2f s host time, %.2f M reads/s)\n",
                 results.size(), static_cast<unsigned long long>(p.item_reads()), host,
                 host <= 0 ? 0 : static_cast<double>(p.item_reads()) * results.size() / host / 1e6);
  }
  return kExitOk;
}

}  // namespace

Result<CacheSize> ParseCacheSize(const std::string& text) {
  const Status bad = InvalidArgument("--cache-size '" + text +
                                     "': expected a percentage (50%) or a size (4096, 512M, 10G)");
  if (text.empty()) return bad;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit(end);
  if (end == text.c_str() || !(v > 0) || !std::isfinite(v)) return bad;
  CacheSize size;
  if (unit == "%") {
    size.percent = v;
    return size;
  }
  double mult = 1;
  if (unit.empty() || unit == "B") {
    mult = 1;
  } else if (unit == "K" || unit == "k") {
    mult = 1024.0;
  } else if (unit == "M" || unit == "m") {
    mult = 1024.0 * 1024;
  } else if (unit == "G" || unit == "g") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "t") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return bad;
  }
  if (v * mult > 1.8e19 || v * mult < 1) return bad;
  size.bytes = static_cast<uint64_t>(v * mult);
  return size;
}

void AddCacheSimCommands(CLI::App& app, std::function<int(CommandEnv&)>& action) {
  auto targs = std::make_shared<TraceArgs>();
  CLI::App* gen = app.add_subcommand(
      "cache-trace",
      "Generate a synthetic DL-training I/O trace for 'weft cache-sim' (format:\n"
      "docs/formats/trace.md). Workloads: images (ImageNet-like JPEGs, log-normal 114.7 KB),\n"
      "volumes (UNet3D, 146.6 MB), scientific (CosmoFlow, 2.83 MB), tokens (one file of\n"
      "2048-byte records), shards (tar shards read in 1-8 MB ranges), and the presets w1 (one\n"
      "job, 20k files, 10 epochs, all data) and w2 (100k files, 5 runs of 30 % subsets with\n"
      "70 % overlap, 5 epochs). Each run reads a --subset of the files, keeping --overlap of\n"
      "the previous run's; each epoch is a fresh permutation from seed+epoch split across\n"
      "--world ranks. Unset options take the workload's defaults.");
  gen->footer(
      "Examples:\n"
      "  weft cache-trace --workload w1 --files 20000 --unit-size --out w1.trace\n"
      "  weft cache-trace --workload w2 --overlap 0.3 --out w2.trace --oracle-general w2.bin\n"
      "  weft cache-trace --workload images --files 20000 --runs 3 --jobs 2 --validation \\\n"
      "      --checkpoint-every 100 --out images.trace");
  cache::GenOptions& g = targs->gen;
  gen->add_option("--workload", g.workload, "images|volumes|scientific|tokens|shards|w1|w2")
      ->capture_default_str();
  gen->add_option("--files", g.files, "Files in the dataset (tokens: records; shards: shards)");
  gen->add_option("--runs", g.runs, "Runs, one after another");
  gen->add_option("--epochs", g.epochs, "Epochs per run");
  gen->add_option("--subset", g.subset, "Fraction of the dataset each run reads (default 0.3)");
  gen->add_option("--overlap", g.overlap, "Fraction of the previous run's subset kept")
      ->capture_default_str();
  gen->add_option("--zipf", g.zipf, "Usefulness skew α for drawing subsets (w2: 0, else 0.8)");
  gen->add_option("--jobs", g.jobs, "Concurrent jobs per run (a sweep: same subset)")
      ->capture_default_str();
  gen->add_option("--arrival-s", g.arrival_s, "Mean gap between a run's job arrivals (Poisson)")
      ->capture_default_str();
  gen->add_option("--world", g.world, "Ranks per job")->capture_default_str();
  gen->add_option("--batch", g.batch, "Reads per batch and rank");
  gen->add_option("--compute-s", g.compute_s, "Accelerator seconds per batch");
  gen->add_flag("--validation", g.validation, "Read a validation split in order after each epoch");
  gen->add_option("--checkpoint-every", g.checkpoint_every, "Write a checkpoint every K steps");
  gen->add_option("--checkpoint-mb", targs->checkpoint_mb, "Checkpoint size (default per model)");
  gen->add_flag("--unit-size", g.unit_size, "Every file --unit-kb (compare with research §4)");
  gen->add_option("--unit-kb", targs->unit_kb, "File size with --unit-size")->capture_default_str();
  gen->add_option("--shard-mb", targs->shard_mb, "Shard size (64 MDS, 1024 WebDataset)")
      ->capture_default_str();
  gen->add_option("--seed", g.seed, "Seed; the same options and seed give the same trace")
      ->capture_default_str();
  gen->add_option("--out", targs->out, "Trace file to write")->required();
  gen->add_option("--oracle-general", targs->oracle_general,
                  "Also write libCacheSim's oracleGeneral binary trace here");
  gen->callback([targs, &action] {
    action = [targs](CommandEnv& env) { return RunCacheTrace(env, *targs); };
  });

  auto sargs = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand(
      "cache-sim",
      "Replay a trace against NeuralCache's eviction policies and prefetchers under a WAN\n"
      "timing model, and print one row per configuration: hit ratio (all, first epoch of\n"
      "each run, later epochs), byte hit ratio, WAN GB and its ratio to Belady's, data stall\n"
      "per rank-epoch (s) and accelerator utilisation (first, steady), prefetch precision,\n"
      "coverage, timeliness and waste, and the gap to Belady closed over LRU. LRU and Belady\n"
      "always run. See docs/neuralcache.md ('Simulator') for the model.");
  sim->footer(
      "Examples:\n"
      "  weft cache-sim w1.trace --cache-size 10% --policy all\n"
      "  weft cache-sim w2.trace --cache-size 50% --policy lru,s3fifo,epoch,neural,belady\n"
      "  weft cache-sim images.trace --cache-size 30% --prefetch ablation --link-mbit 500 \\\n"
      "      --rtt-ms 40 --per-epoch\n"
      "  weft --json cache-sim images.trace --cache-size 20G --prefetch hints,epoch");
  sim->add_option("trace", sargs->trace, "Trace file (from 'weft cache-trace')")->required();
  sim->add_option("--cache-size", sargs->cache_size,
                  "Percent of --cache-basis (50%) or bytes (512M, 10G; powers of 1024)")
      ->capture_default_str();
  sim->add_option("--cache-basis", sargs->basis,
                  "What a percentage is of: run (mean bytes one run reads) or trace (all "
                  "distinct bytes read)")
      ->capture_default_str();
  sim->add_option("--policy", sargs->policies,
                  "Comma-separated eviction policies, or all; neural also runs as neural+hints "
                  "(ranks declare their epoch order)")
      ->capture_default_str();
  sim->add_option("--prefetch", sargs->prefetch,
                  "none; all (every expert, with hints); experts (hints,epoch,readahead,\n"
                  "history,dir,peer,clairvoyant); or ablation (each expert alone, the ensemble\n"
                  "without and with hints, and the infinite-cache and clairvoyant bounds)")
      ->capture_default_str();
  sim->add_option("--prefetch-policy", sargs->prefetch_policy, "Eviction policy under prefetch")
      ->capture_default_str();
  sim->add_option("--link-mbit", sargs->link_mbit, "WAN bandwidth, Mbit/s")->capture_default_str();
  sim->add_option("--rtt-ms", sargs->rtt_ms, "WAN round trip, ms")->capture_default_str();
  sim->add_option("--connections", sargs->connections, "Fetches in flight at once")
      ->capture_default_str();
  sim->add_option("--disk-mb-s", sargs->disk_mb_s, "Local disk bandwidth for hits, MB/s")
      ->capture_default_str();
  sim->add_option("--disk-us", sargs->disk_us, "Local disk latency per hit, µs")
      ->capture_default_str();
  sim->add_option("--loader-batches", sargs->loader_batches,
                  "Batches a rank's loader keeps in flight (workers × prefetch_factor)")
      ->capture_default_str();
  sim->add_flag("--async-ranks", sargs->async_ranks,
                "Let each rank run at its own pace (default: a job's ranks take each step\n"
                "together, as DDP's all-reduce makes them)");
  sim->add_option("--compute-scale", sargs->compute_scale, "Multiply every job's compute time")
      ->capture_default_str();
  sim->add_option("--lead-s", sargs->lead_s, "Prefetch bytes in flight ≈ bandwidth × (rtt + lead)")
      ->capture_default_str();
  sim->add_option("--staging-fraction", sargs->staging_fraction,
                  "Share of the cache a prefetching config keeps for landed, unread prefetches\n"
                  "(the policy gets the rest); 0: prefetches enter the policy's cache")
      ->capture_default_str();
  sim->add_flag("--per-epoch", sargs->per_epoch, "Also print utilisation per epoch");
  sim->callback(
      [sargs, &action] { action = [sargs](CommandEnv& env) { return RunCacheSim(env, *sargs); }; });
}

}  // namespace weft::cli
