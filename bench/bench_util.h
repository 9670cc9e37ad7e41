// Side-by-side measurement helpers for Weft's C++ benchmarks (see BENCHMARKING.md): run Weft
// and its reference alternately (A B A B) after a warm-up, take per-pair ratios, and report
// the median with min and max as one JSON line per benchmark plus a human table.
// Not thread-safe; benchmarks are single-threaded drivers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace weft::bench {

struct PairResult {
  std::string bench;
  std::string unit;          // of the rates, e.g. "GB/s"
  std::vector<double> weft;  // rate per pair (higher is better)
  std::vector<double> reference;
  std::vector<double> ratios;  // weft / reference per pair
  std::string reference_name;
  std::string extra_json;  // more `"key": value` fields, without braces
};

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline double Seconds(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `warmup` unmeasured pairs, then `pairs` measured ones. Each function returns a rate.
inline PairResult RunPairs(const std::string& bench, const std::string& unit,
                           const std::string& reference_name, int warmup, int pairs,
                           const std::function<double()>& weft,
                           const std::function<double()>& reference) {
  PairResult r{bench, unit, {}, {}, {}, reference_name, ""};
  for (int i = 0; i < warmup; ++i) {
    weft();
    reference();
  }
  for (int i = 0; i < pairs; ++i) {
    double a = weft();
    double b = reference();
    r.weft.push_back(a);
    r.reference.push_back(b);
    r.ratios.push_back(b > 0 ? a / b : 0);
  }
  return r;
}

inline void PrintJson(const PairResult& r) {
  std::printf(
      "{\"bench\": \"%s\", \"unit\": \"%s\", \"weft\": %.4f, \"reference\": %.4f, "
      "\"reference_name\": \"%s\", \"ratio\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, "
      "\"pairs\": %zu%s%s}\n",
      r.bench.c_str(), r.unit.c_str(), Median(r.weft), Median(r.reference),
      r.reference_name.c_str(), Median(r.ratios),
      *std::min_element(r.ratios.begin(), r.ratios.end()),
      *std::max_element(r.ratios.begin(), r.ratios.end()), r.ratios.size(),
      r.extra_json.empty() ? "" : ", ", r.extra_json.c_str());
  std::fflush(stdout);
}

inline void PrintTable(const std::vector<PairResult>& results) {
  std::printf("\n%-28s %12s %12s %-22s %8s %8s %8s\n", "bench", "weft", "reference", "(ref)",
              "ratio", "min", "max");
  for (const PairResult& r : results) {
    std::printf("%-28s %9.3f %-2s %9.3f %-2s %-22s %8.3f %8.3f %8.3f\n", r.bench.c_str(),
                Median(r.weft), r.unit.c_str(), Median(r.reference), r.unit.c_str(),
                r.reference_name.c_str(), Median(r.ratios),
                *std::min_element(r.ratios.begin(), r.ratios.end()),
                *std::max_element(r.ratios.begin(), r.ratios.end()));
  }
}

}  // namespace weft::bench
