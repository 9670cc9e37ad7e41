// ChunkPipeline: hashes (SHA-256) and stores a large stream's chunks on a helper thread, in
// order, while the writer's thread reads and cuts the next ones. Putting a chunk (the zstd
// probe, the checksum, the copy into the pack and its write) costs about what reading and
// cutting it does, and hashing it a third more (perf of `weft put`), so the hashing goes to
// whichever side is behind: a batch is hashed by the writer while the helper has a backlog,
// else by the helper. Chunks are copied into batches of about kBatchBytes and handed over
// through a bounded queue of recycled buffers (one hand-off per batch, not per chunk). The
// first error stops the storing and is returned by every later call.
// One owner thread calls Add/Drain; the helper thread is internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "base/status.h"
#include "chunk/chunk_id.h"

namespace weft {

class ChunkPipeline {
 public:
  using Store = std::function<Status(const ChunkId& id, ByteSpan chunk)>;
  // `store` is called on the helper thread with each chunk, in the order added.
  explicit ChunkPipeline(Store store);
  ~ChunkPipeline();  // drains
  ChunkPipeline(const ChunkPipeline&) = delete;
  ChunkPipeline& operator=(const ChunkPipeline&) = delete;

  // Queues a copy of `chunk`; blocks while the queue is full. Not OK once a store failed.
  Status Add(ByteSpan chunk);
  // Waits until every chunk added is stored; the first failure, if any.
  Status Drain();

 private:
  static constexpr size_t kBatchBytes = 1 << 20;
  static constexpr size_t kMaxQueued = 4;  // batches
  struct Batch {
    std::string bytes;
    std::vector<uint32_t> sizes;  // of its chunks, in order
    std::vector<ChunkId> ids;     // filled by Add when `hashed`, else by the helper
    bool hashed = false;
  };
  void Submit();  // hands `filling_` to the helper
  void Run();

  const Store store_;
  Batch filling_;  // the owner's
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;   // GUARDED_BY(mu_)
  std::vector<Batch> spare_;  // GUARDED_BY(mu_): stored batches' buffers, reused
  bool busy_ = false;         // GUARDED_BY(mu_): the helper is storing a batch
  bool stop_ = false;         // GUARDED_BY(mu_)
  Status error_;              // GUARDED_BY(mu_): the first failure
  std::thread thread_;        // last: starts once the rest exists
};

}  // namespace weft
