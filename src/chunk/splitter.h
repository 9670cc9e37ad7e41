// Content-defined chunking: a FastCDC (Gear hash, normalized chunking) cut-point finder and a
// streaming StreamSplitter that buffers written bytes and hands out chunks. When the stream is
// a tar archive (ustar header at offset 0), every member header and member data start is a
// forced cut, so an unchanged member dedups even when a neighbour changed size.
// Not thread-safe: one writer per splitter.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "base/bytes.h"
#include "base/status.h"

namespace weft {

struct ChunkerOptions {
  uint32_t min_size = 16 * 1024;
  uint32_t avg_size = 64 * 1024;  // a power of two
  uint32_t max_size = 256 * 1024;
  bool tar_aware = true;

  // InvalidArgument unless min <= avg <= max, avg is a power of two, and min >= 64.
  Status Validate() const;
};

// Finds cut points. Stateless apart from its options; thread-safe.
class Chunker {
 public:
  explicit Chunker(const ChunkerOptions& options);
  // Length of the first chunk of `data`: in [min, max] unless data is shorter than min, in
  // which case data.size(). Content-defined: depends only on the bytes, not on `data.size()`
  // once data.size() >= max_size.
  size_t NextCut(ByteSpan data) const;

 private:
  ChunkerOptions options_;
  uint64_t mask_small_;  // harder mask below avg (normalized chunking)
  uint64_t mask_large_;  // easier mask above avg
};

class StreamSplitter {
 public:
  // `sink` receives each chunk in order; a non-OK status from it stops the stream and is
  // returned by the Write/Finish call that triggered it.
  StreamSplitter(const ChunkerOptions& options, std::function<Status(ByteSpan chunk)> sink);

  Status Write(ByteSpan data);
  // Emits the remaining bytes as the last chunk(s). Write must not be called afterwards.
  Status Finish();

  uint64_t bytes_written() const { return total_; }

 private:
  enum class TarState : uint8_t { kUnknown, kActive, kOff };

  // Emits every chunk whose end is already decided; at_eof decides the rest.
  Status Drain(bool at_eof);
  // Parses each tar header whose 512 bytes are buffered and queues its forced cuts.
  void ObserveTarHeaders(bool at_eof);
  uint64_t emitted() const { return buf_start_ + pos_; }

  Chunker chunker_;
  ChunkerOptions options_;
  std::function<Status(ByteSpan)> sink_;
  // buf_[pos_..] is not yet emitted; buf_[0] is stream offset buf_start_. Holds at most
  // capacity_ bytes (2 * max_size + one tar header), which bounds the splitter's memory.
  std::string buf_;
  size_t pos_ = 0;
  uint64_t buf_start_ = 0;
  size_t capacity_;
  uint64_t total_ = 0;
  // Tar tracking. next_tar_header_ is the stream offset of the next header not yet parsed
  // (meaningful while kActive); forced_cuts_ holds known boundaries past emitted(), ascending.
  TarState tar_state_;
  uint64_t next_tar_header_ = 0;
  std::deque<uint64_t> forced_cuts_;
  Status error_;  // first sink error; sticky
  bool finished_ = false;
};

}  // namespace weft
