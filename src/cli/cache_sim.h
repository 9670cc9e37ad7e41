// `weft cache-trace` (generate a synthetic training-I/O trace) and `weft cache-sim` (replay one
// against NeuralCache's policies and prefetchers). Offline tools: they touch no volume.
// Not thread-safe: one command runs at a time in a process.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "cli/commands.h"

namespace weft::cli {

// Registers both commands on `app`; the one the user picks sets `action`.
void AddCacheSimCommands(CLI::App& app, std::function<int(CommandEnv&)>& action);

// "50%" -> percent 50 (bytes 0); "10G", "512M", "1.5T", "4096" -> bytes (K/M/G/T are powers of
// 1024). InvalidArgument otherwise.
struct CacheSize {
  double percent = 0;
  uint64_t bytes = 0;
};
Result<CacheSize> ParseCacheSize(const std::string& text);

}  // namespace weft::cli
