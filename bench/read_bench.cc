// read_bench: random reads of 4 KiB-1 MiB from files stored in a LocalVolume, through
// FileReader::ReadAt, side by side with pread() of the same bytes from ordinary files on the
// same disk, at the same offsets. Both sides are warm in the page cache after the warm-up; it
// measures the engine's read path (manifest lookup, pack read, hash verification), not the
// disk. See bench/README.md.
//
//   read_bench [--dir DIR] [--files N] [--file-mib N] [--reads N] [--pairs N] [--full]
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "vfs/local_volume.h"

namespace weft::bench {
namespace {

struct ReadOp {
  size_t file;
  uint64_t offset;
  uint64_t length;
};

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "read_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

int Main(int argc, char** argv) {
  std::string dir = "bench/out/read";
  size_t files = 8;
  uint64_t file_mib = 32;
  size_t reads = 2000;
  int pairs = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--dir") {
      dir = next();
    } else if (a == "--files") {
      files = std::strtoull(next().c_str(), nullptr, 10);
    } else if (a == "--file-mib") {
      file_mib = std::strtoull(next().c_str(), nullptr, 10);
    } else if (a == "--reads") {
      reads = std::strtoull(next().c_str(), nullptr, 10);
    } else if (a == "--pairs") {
      pairs = std::atoi(next().c_str());
    } else if (a == "--full") {
      files = 16;
      file_mib = 256;
      reads = 10000;
      pairs = 7;
    } else {
      std::fprintf(stderr,
                   "usage: read_bench [--dir DIR] [--files N] [--file-mib N] [--reads N] "
                   "[--pairs N] [--full]\nRandom 4 KiB-1 MiB reads: LocalVolume FileReader vs "
                   "pread of the same bytes on the same disk.\n");
      return 2;
    }
  }
  if (files == 0 || file_mib == 0 || reads == 0 || pairs < 1) {
    std::fprintf(stderr, "read_bench: sizes and counts must be positive\n");
    return 2;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir + "/plain", ec);
  if (ec) Die("creating " + dir, IoError(ec.message()));

  auto opened = OpenLocalVolume(dir + "/weft-data");
  if (!opened.ok()) Die("opening volume", opened.status());
  std::unique_ptr<Volume> vol = std::move(opened).value();
  RequestContext ctx;

  // The same incompressible bytes go to a plain file and into the volume.
  const uint64_t file_size = file_mib << 20;
  std::mt19937_64 rng(7);
  std::vector<uint8_t> piece(1 << 20);
  std::vector<int> fds;
  std::vector<std::unique_ptr<FileReader>> readers;
  for (size_t f = 0; f < files; ++f) {
    std::string plain = dir + "/plain/f" + std::to_string(f);
    std::string path = "/bench/f" + std::to_string(f);
    WriteOptions wo;
    wo.create_parents = true;
    auto writer = vol->OpenWriter(ctx, path, wo);
    if (!writer.ok()) Die("open writer", writer.status());
    int fd = ::open(plain.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) Die("creating " + plain, ErrnoToStatus(errno, plain));
    for (uint64_t off = 0; off < file_size; off += piece.size()) {
      for (size_t i = 0; i + 8 <= piece.size(); i += 8) {
        uint64_t v = rng();
        std::memcpy(&piece[i], &v, 8);
      }
      if (::write(fd, piece.data(), piece.size()) != static_cast<ssize_t>(piece.size())) {
        Die("writing " + plain, ErrnoToStatus(errno, plain));
      }
      Status s = (*writer)->Write(ByteSpan(piece.data(), piece.size()));
      if (!s.ok()) Die("write", s);
    }
    auto info = (*writer)->Commit();
    if (!info.ok()) Die("commit", info.status());
    ::fsync(fd);
    fds.push_back(fd);
    auto reader = vol->OpenReader(ctx, path);
    if (!reader.ok()) Die("open reader", reader.status());
    readers.push_back(std::move(reader).value());
  }

  // Sizes log-uniform in [4 KiB, 1 MiB], offsets uniform: the same list for both sides.
  std::vector<ReadOp> ops;
  std::uniform_real_distribution<double> log_size(std::log(4096.0), std::log(1048576.0));
  uint64_t op_bytes = 0;
  for (size_t i = 0; i < reads; ++i) {
    uint64_t len = static_cast<uint64_t>(std::exp(log_size(rng)));
    uint64_t off = std::uniform_int_distribution<uint64_t>(0, file_size - len)(rng);
    ops.push_back({i % files, off, len});
    op_bytes += len;
  }

  std::string scratch(1 << 20, '\0');
  uint64_t check_weft = 0;
  uint64_t check_ref = 0;
  auto weft_reads = [&] {
    double secs = Seconds([&] {
      for (const ReadOp& op : ops) {
        auto got = readers[op.file]->ReadAt(op.offset, op.length);
        if (!got.ok() || got->size() != op.length) Die("ReadAt", got.status());
        check_weft += static_cast<uint8_t>((*got)[op.length / 2]);
      }
    });
    return static_cast<double>(op_bytes) / secs / 1e6;
  };
  auto pread_reads = [&] {
    double secs = Seconds([&] {
      for (const ReadOp& op : ops) {
        ssize_t n = ::pread(fds[op.file], scratch.data(), op.length, static_cast<off_t>(op.offset));
        if (n != static_cast<ssize_t>(op.length)) Die("pread", ErrnoToStatus(errno, "pread"));
        check_ref += static_cast<uint8_t>(scratch[op.length / 2]);
      }
    });
    return static_cast<double>(op_bytes) / secs / 1e6;
  };
  // Open per read as a stateless GET would: metadata lookup + read, vs open + pread + close.
  auto weft_open_reads = [&] {
    double secs = Seconds([&] {
      for (const ReadOp& op : ops) {
        auto r = vol->OpenReader(ctx, "/bench/f" + std::to_string(op.file));
        if (!r.ok()) Die("OpenReader", r.status());
        auto got = (*r)->ReadAt(op.offset, op.length);
        if (!got.ok() || got->size() != op.length) Die("ReadAt", got.status());
      }
    });
    return static_cast<double>(op_bytes) / secs / 1e6;
  };
  auto plain_open_reads = [&] {
    double secs = Seconds([&] {
      for (const ReadOp& op : ops) {
        std::string p = dir + "/plain/f" + std::to_string(op.file);
        int fd = ::open(p.c_str(), O_RDONLY);
        ssize_t n = ::pread(fd, scratch.data(), op.length, static_cast<off_t>(op.offset));
        if (fd < 0 || n != static_cast<ssize_t>(op.length)) {
          Die("open+pread", ErrnoToStatus(errno, p));
        }
        ::close(fd);
      }
    });
    return static_cast<double>(op_bytes) / secs / 1e6;
  };

  std::vector<PairResult> results;
  results.push_back(RunPairs("random read (open reader)", "MB/s", "pread (open fd)", 1, pairs,
                             weft_reads, pread_reads));
  char extra[200];
  std::snprintf(extra, sizeof(extra),
                "\"files\": %zu, \"file_bytes\": %llu, \"reads\": %zu, \"read_bytes\": %llu, "
                "\"same_bytes\": %s",
                files, static_cast<unsigned long long>(file_size), reads,
                static_cast<unsigned long long>(op_bytes),
                check_weft == check_ref ? "true" : "false");
  results.back().extra_json = extra;
  PrintJson(results.back());
  results.push_back(RunPairs("random read (open per read)", "MB/s", "open+pread+close", 1, pairs,
                             weft_open_reads, plain_open_reads));
  PrintJson(results.back());
  PrintTable(results);
  std::printf(
      "(%zu files x %llu MiB, %zu reads of 4 KiB-1 MiB per run, %d pairs after a "
      "warm-up, page cache warm; one thread)\n",
      files, static_cast<unsigned long long>(file_mib), reads, pairs);
  for (int fd : fds) ::close(fd);
  readers.clear();
  vol.reset();
  std::filesystem::remove_all(dir, ec);
  return check_weft == check_ref ? 0 : 1;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  return weft::bench::Main(argc, argv);
}
