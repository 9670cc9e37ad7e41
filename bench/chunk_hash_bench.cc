// chunk_hash_bench: in-memory FastCDC chunking + SHA-256 chunk ids, the CPU work of every
// ingest, in GB/s on one core (goal >= 1 GB/s), side by side with plain SHA-256 of the same
// bytes (the floor: chunking can only add to it). See bench/README.md.
//
//   chunk_hash_bench [--bytes N] [--pairs N] [--full]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chunk/chunk_id.h"
#include "chunk/splitter.h"

namespace weft::bench {
namespace {

constexpr size_t kPiece = 1 << 20;  // what FileWriter::Write typically receives from the CLI

double GBps(size_t bytes, double secs) {
  return static_cast<double>(bytes) / secs / 1e9;
}

int Main(int argc, char** argv) {
  size_t bytes = size_t{256} << 20;
  int pairs = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--pairs" && i + 1 < argc) {
      pairs = std::atoi(argv[++i]);
    } else if (a == "--full") {
      bytes = size_t{2} << 30;
      pairs = 7;
    } else {
      std::fprintf(stderr,
                   "usage: chunk_hash_bench [--bytes N] [--pairs N] [--full]\n"
                   "Chunk (FastCDC, 64 KiB average) + SHA-256 per chunk, vs SHA-256 alone, "
                   "in GB/s on one core.\n");
      return 2;
    }
  }
  if (pairs < 1) pairs = 1;
  // Incompressible, never-repeating bytes: the chunker sees no shortcuts.
  std::vector<uint8_t> data(bytes);
  std::mt19937_64 rng(42);
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(&data[i], &v, 8);
  }

  ChunkerOptions opts;  // the defaults LocalVolume uses
  uint64_t chunks = 0;
  uint64_t sink_check = 0;
  auto chunk_and_hash = [&] {
    chunks = 0;
    double secs = Seconds([&] {
      StreamSplitter splitter(opts, [&](ByteSpan chunk) {
        ChunkId id = ChunkId::Of(chunk);
        sink_check += id.bytes()[0];
        ++chunks;
        return OkStatus();
      });
      for (size_t off = 0; off < data.size(); off += kPiece) {
        size_t n = std::min(kPiece, data.size() - off);
        if (!splitter.Write(ByteSpan(data.data() + off, n)).ok()) std::abort();
      }
      if (!splitter.Finish().ok()) std::abort();
    });
    return GBps(data.size(), secs);
  };
  auto chunk_only = [&] {
    Chunker chunker(opts);
    double secs = Seconds([&] {
      size_t off = 0;
      while (off < data.size()) {
        off += chunker.NextCut(ByteSpan(data.data() + off, data.size() - off));
      }
      sink_check += off;
    });
    return GBps(data.size(), secs);
  };
  auto sha_only = [&] {
    double secs = Seconds([&] {
      Sha256Hasher h;
      for (size_t off = 0; off < data.size(); off += kPiece) {
        h.Update(ByteSpan(data.data() + off, std::min(kPiece, data.size() - off)));
      }
      sink_check += h.Finish()[0];
    });
    return GBps(data.size(), secs);
  };

  std::vector<PairResult> results;
  results.push_back(
      RunPairs("chunk+hash", "GB/s", "sha256 only", 1, pairs, chunk_and_hash, sha_only));
  char extra[256];
  std::snprintf(extra, sizeof(extra),
                "\"bytes\": %zu, \"chunks\": %llu, \"avg_chunk\": %llu, \"goal_gbps\": 1.0, "
                "\"meets_goal\": %s",
                data.size(), static_cast<unsigned long long>(chunks),
                static_cast<unsigned long long>(chunks ? data.size() / chunks : 0),
                Median(results.back().weft) >= 1.0 ? "true" : "false");
  results.back().extra_json = extra;
  PrintJson(results.back());
  results.push_back(
      RunPairs("chunk only (FastCDC)", "GB/s", "sha256 only", 1, pairs, chunk_only, sha_only));
  PrintJson(results.back());
  PrintTable(results);
  std::printf("(one core, %zu MiB in memory, %d pairs after a warm-up; checksum %llu)\n",
              data.size() >> 20, pairs, static_cast<unsigned long long>(sink_check % 10));
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  return weft::bench::Main(argc, argv);
}
