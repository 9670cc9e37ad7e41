// BackgroundMd5: computes a stream's MD5 (the S3 ETag) on a helper thread while the writer's
// thread chunks and hashes the same bytes. MD5 is the slowest per-byte stage of ingest
// (~0.7 GB/s, one sequential stream), so it gets its own thread and is fed copies of the
// pieces through a bounded queue: it never waits for the writer to read the next piece.
// Small pieces are hashed inline until the stream is large enough to pay for a thread.
// One owner thread calls Update/Finish; the helper thread is internal.
#pragma once

#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/bytes.h"
#include "chunk/chunk_id.h"

namespace weft {

class BackgroundMd5 {
 public:
  BackgroundMd5() = default;
  ~BackgroundMd5();
  BackgroundMd5(const BackgroundMd5&) = delete;
  BackgroundMd5& operator=(const BackgroundMd5&) = delete;

  // Adds `data` to the stream (copied if the helper thread runs); blocks while the queue is
  // full.
  void Update(ByteSpan data);
  // Waits for every queued piece and returns the digest of the whole stream.
  std::array<uint8_t, 16> Finish();

 private:
  static constexpr uint64_t kThreadFrom = 1 << 20;  // bytes before the helper thread starts
  static constexpr size_t kMaxQueued = 8;           // pieces (of up to a few MiB each)
  void Run();

  Md5Hasher md5_;  // the owner's until the thread starts, then the helper's until Finish
  uint64_t bytes_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;  // GUARDED_BY(mu_)
  // Hashed pieces' buffers, reused: a fresh MiB-sized allocation per piece would be an mmap
  // and 256 page faults each time.
  std::vector<std::string> spare_;  // GUARDED_BY(mu_)
  bool busy_ = false;               // GUARDED_BY(mu_): the helper is hashing a piece
  bool stop_ = false;               // GUARDED_BY(mu_)
};

}  // namespace weft
