// Training-I/O traces for the NeuralCache simulator: the dataset's file table, the jobs that
// read it (with the sampler seed only "hint mode" may use) and one record per read or write.
// The text format is in docs/formats/trace.md; the reader treats its input as untrusted and
// names the offending line. Also exports libCacheSim's oracleGeneral binary format so results
// can be cross-checked there. Plain values and pure functions: thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "cache/item.h"

namespace weft::cache {

inline constexpr int kTraceVersion = 1;

struct TraceFile {
  uint64_t id = 0;
  uint64_t size = 0;  // bytes
  uint64_t dir = 0;   // id of the parent directory (files in one class share it)
  std::string path;
};

// One training process group. `seed` and `sampler` are hidden from policies: storage cannot
// see them, so the simulator uses them (through the recorded order) only in hint mode.
struct TraceJob {
  uint32_t id = 0;
  uint32_t run = 0;  // runs follow each other; the jobs of one run (a sweep) overlap
  uint64_t seed = 0;
  std::string sampler = "shuffle";  // shuffle | sequential | shards
  uint32_t world = 1;               // ranks
  uint32_t batch = 1;               // reads per batch of one rank
  int64_t compute_ns = 0;           // accelerator time per batch
  std::string workload;             // images, volumes, ... (a label)
};

enum class Op : uint8_t {
  kRead,     // a training read
  kValRead,  // a read of the validation split (in order, at an epoch's end)
  kWrite,    // a checkpoint write
};

struct Access {
  int64_t t_ns = 0;  // nominal time (arrival + compute only); the simulator derives its own
  uint32_t job = 0;
  uint32_t run = 0;
  uint32_t node = 0;
  uint32_t rank = 0;
  Op op = Op::kRead;
  uint64_t file = 0;
  uint64_t offset = 0;
  uint64_t len = 0;
  uint32_t epoch = 0;  // 0-based within the run
};

struct Trace {
  std::vector<TraceJob> jobs;
  std::vector<TraceFile> files;
  std::vector<Access> accesses;  // in order of t_ns (ties: as generated)

  // Index into `files` by id; rebuilt by Index() (the reader and generator call it).
  std::unordered_map<uint64_t, size_t> file_index;
  void Index();
  const TraceFile* File(uint64_t id) const;
};

// Checks the invariants the reader enforces (unique ids, known files and jobs, ranges inside
// files, times non-decreasing) on a trace built in memory; Index() it first.
Status ValidateTrace(const Trace& trace);

// The text format.
std::string FormatTrace(const Trace& trace);
Result<Trace> ParseTrace(std::string_view text, std::string_view name = "trace");
Status WriteTraceFile(const Trace& trace, const std::string& path);
Result<Trace> ReadTraceFile(const std::string& path);

// One read resolved to the cache items it touches (a read spanning blocks touches several).
struct ItemRead {
  Item item;
  size_t access = 0;   // index into Trace::accesses
  uint64_t bytes = 0;  // bytes of the read inside this item
};
// Every read (training and validation) as item reads, in trace order.
std::vector<ItemRead> ItemReads(const Trace& trace);
// For each item read, the index of the next read of the same item, kNever if none.
std::vector<int64_t> NextUses(const std::vector<ItemRead>& reads);

// libCacheSim oracleGeneral: 24-byte little-endian records {uint32 time_s, uint64 obj_id,
// uint32 obj_size, int64 next_access_vtime (-1: none)}, one per item read.
std::string FormatOracleGeneral(const Trace& trace);
Status WriteOracleGeneralFile(const Trace& trace, const std::string& path);

}  // namespace weft::cache
