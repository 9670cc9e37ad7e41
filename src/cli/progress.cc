#include "cli/progress.h"

#include "base/bytes.h"
#include "cli/cli_util.h"

namespace weft::cli {

namespace {
// Redrawing more often only costs terminal bandwidth; a tenth of a second reads as smooth.
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
}  // namespace

ProgressBar::ProgressBar(FILE* out, bool enabled, uint64_t total_bytes, uint64_t total_files)
    : out_(out),
      enabled_(enabled),
      total_bytes_(total_bytes),
      total_files_(total_files),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void ProgressBar::AddBytes(uint64_t n) {
  std::lock_guard lock(mu_);
  bytes_ += n;
  DrawLocked(false);
}

void ProgressBar::FileDone() {
  std::lock_guard lock(mu_);
  ++files_;
  DrawLocked(false);
}

void ProgressBar::Finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  DrawLocked(true);
  if (enabled_) std::fputc('\n', out_);
  finished_ = true;
}

void ProgressBar::DrawLocked(bool force) {
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  std::string line = "\r" + HumanBytes(bytes_);
  if (total_bytes_ > 0) {
    line += " / " + HumanBytes(total_bytes_);
    char pct[16];
    std::snprintf(pct, sizeof(pct), " (%3.0f%%)",
                  100.0 * static_cast<double>(bytes_) / static_cast<double>(total_bytes_));
    line += pct;
  }
  line += "  " + FormatRate(bytes_, secs) + "  " + std::to_string(files_);
  if (total_files_ > 0) line += "/" + std::to_string(total_files_);
  line += files_ == 1 && total_files_ <= 1 ? " file" : " files";
  line += "\x1b[K";  // clear what a longer previous line left behind
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
}

}  // namespace weft::cli
