// ProgressBar: a one-line transfer meter (bytes, rate, files) redrawn in place on a terminal.
// Disabled bars do nothing, so callers need no branches; `weft put` enables it only when
// stderr is a TTY and --quiet is off. Thread-safe: the threads of one transfer share it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace weft::cli {

class ProgressBar {
 public:
  // `total_bytes` = 0 when unknown (stdin); then no percentage is shown.
  ProgressBar(FILE* out, bool enabled, uint64_t total_bytes, uint64_t total_files);

  void AddBytes(uint64_t n);
  void FileDone();
  // Draws the final state and ends the line. Idempotent.
  void Finish();

 private:
  void DrawLocked(bool force);

  std::mutex mu_;  // guards everything below
  FILE* out_;
  bool enabled_;
  uint64_t total_bytes_;
  uint64_t total_files_;
  uint64_t bytes_ = 0;
  uint64_t files_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace weft::cli
