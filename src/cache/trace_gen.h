// Synthetic DL-training traces (research/anchors-cache.md §5c): DLIO-like datasets scaled down
// to --files, runs that each read a Zipf-skewed subset overlapping the previous run's, a fresh
// permutation per epoch from seed+epoch split rank::world, optional validation and checkpoint
// traffic, sweeps of concurrent jobs, and the two workloads of §4 (W1, W2) as presets.
// Deterministic: the same options give the same trace, byte for byte. Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "cache/trace.h"

namespace weft::cache {

// Zero (or a negative fraction) means "the workload's default" (see WorkloadDefaults).
struct GenOptions {
  std::string workload = "images";  // images volumes scientific tokens shards w1 w2
  uint64_t files = 0;     // dataset size: files (tokens: 2048-byte records; shards: shards)
  uint32_t runs = 0;      // runs, one after another
  uint32_t epochs = 0;    // epochs per run
  double subset = -1;     // fraction of the dataset each run reads
  double overlap = 0.7;   // fraction of the previous run's subset a run keeps
  double zipf = -1;       // α of the usefulness skew when drawing kept and new samples
  uint32_t jobs = 1;      // concurrent jobs per run: a sweep (same subset, different seeds)
  double arrival_s = 60;  // mean gap between a run's job arrivals (Poisson)
  uint32_t world = 1;     // ranks per job (8 per node)
  uint32_t batch = 0;     // reads per batch and rank
  double compute_s = -1;  // accelerator seconds per batch
  bool validation = false;
  double validation_fraction = 0.05;  // validation files, relative to the training set
  uint32_t checkpoint_every = 0;      // training steps between checkpoint writes (0: none)
  uint64_t checkpoint_bytes = 0;
  bool unit_size = false;  // every file unit_bytes (compares with §4's table)
  uint64_t unit_bytes = 128 << 10;
  uint64_t shard_bytes = 64ull << 20;  // shards workload: 64 MiB (MDS) or 1 GiB (WebDataset)
  uint64_t seed = 1;
};

// `options` with every default filled in for its workload; InvalidArgument for an unknown
// workload or an out-of-range value (the message names the option).
Result<GenOptions> WorkloadDefaults(const GenOptions& options);

// The workload names GenerateTrace accepts.
const std::vector<std::string>& WorkloadNames();

Result<Trace> GenerateTrace(const GenOptions& options);

}  // namespace weft::cache
