// `weft demo`: a newcomer's first look at a spoke. It starts a hub, a WAN emulator and a spoke
// (child processes of this binary, on loopback), writes a small image-like dataset at the hub,
// and reads shuffled epochs of it through the spoke the way a PyTorch DataLoader would
// (workers fetching whole batches ahead, a fixed compute time per batch; with --ranks, the
// ranks of one job stepping together), printing per epoch the accelerator utilisation, the
// cache hit ratio, the bytes that crossed the WAN, the read latency and what NeuralCache's
// prefetch experts contributed. It removes everything it made when it ends.
#pragma once

#include <cstdint>
#include <string>

#include "cli/commands.h"

namespace weft::cli {

struct DemoOptions {
  uint32_t files = 2000;
  double mean_kb = 115;  // log-normal sizes (ImageNet JPEGs: mean 114.7 KB, sd 136 KB)
  uint32_t classes = 10;
  uint32_t epochs = 3;
  uint32_t batch = 64;
  double compute_ms = 103;  // per batch: ResNet-50 on an H100 (DLIO)
  uint32_t workers = 4;     // per rank
  uint32_t ranks = 1;    // of one job, stepping together; each reads its DistributedSampler share
  double delay_ms = 20;  // one way
  double rate_mbit = 500;
  std::string cache_size;  // empty: 60 % of the dataset
  std::string policy = "neural";
  std::string prefetch = "all";
  bool hints = true;  // declare each epoch's order, as weft.torch.HintingSampler does
  std::string dir;    // where to run; empty: a new directory under $TMPDIR
  bool keep = false;  // leave the directory (and its logs) behind
  uint64_t seed = 42;
};

int RunDemo(CommandEnv& env, const DemoOptions& options);

}  // namespace weft::cli
