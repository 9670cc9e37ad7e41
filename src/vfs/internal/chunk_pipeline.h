// ChunkPipeline: hashes (SHA-256) and stores the chunks of one file on a worker thread while
// the writer's thread reads and cuts the next ones. Ingest of a large file is CPU-bound on the
// writer's thread; moving hashing and the chunk store's copy and write off it lets the cut,
// the MD5 (BackgroundMd5) and the hash-and-store stages share the cores. Small files never
// start the thread: the first kThreadFrom bytes are processed inline.
// Owned and called by one thread; the worker is internal. The put function must be thread-safe.
#pragma once

#include <condition_variable>
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
  struct Ref {
    ChunkId id;
    uint32_t length = 0;
  };
  // Stores one chunk whose id is given; called in stream order.
  using PutFn = std::function<Status(const ChunkId&, ByteSpan)>;

  explicit ChunkPipeline(PutFn put) : put_(std::move(put)) {}
  ~ChunkPipeline();
  ChunkPipeline(const ChunkPipeline&) = delete;
  ChunkPipeline& operator=(const ChunkPipeline&) = delete;

  // Hands a chunk over (copied when the worker runs); blocks while the queue is full. Returns
  // the first error of any earlier chunk; after an error later chunks are not stored.
  Status Add(ByteSpan chunk);
  // Waits until every chunk added so far is stored; returns the first error.
  Status Drain();
  // The chunks added, in order, each recorded before its put was attempted. Read after Drain().
  const std::vector<Ref>& refs() const { return refs_; }

 private:
  static constexpr uint64_t kThreadFrom = 1 << 20;
  static constexpr size_t kMaxQueued = 32;

  Status Store(ByteSpan chunk);  // hash, record, put (worker, or inline)
  void Run();

  PutFn put_;
  uint64_t added_bytes_ = 0;
  std::thread worker_;  // started once added_bytes_ reaches kThreadFrom

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;   // GUARDED_BY(mu_)
  std::vector<std::string> spare_;  // GUARDED_BY(mu_): stored chunks' buffers, for reuse
  bool busy_ = false;               // GUARDED_BY(mu_): the worker holds a chunk
  bool stop_ = false;               // GUARDED_BY(mu_)
  Status error_;                    // GUARDED_BY(mu_): the first failure
  std::vector<Ref> refs_;           // written by whoever stores; read after Drain
};

}  // namespace weft
