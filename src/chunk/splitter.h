// Content-defined chunking: a FastCDC (Gear hash, normalized chunking) cut-point finder and a
// streaming StreamSplitter that hands out chunks of the bytes written to it: cut where the
// caller's buffer holds them, so only a chunk that spans two writes is copied. When the stream is
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
  // `sink` receives each chunk in order, as a view valid only during the call (often of the
  // bytes the current Write was given); a non-OK status from it stops the stream and is
  // returned by the Write/Finish call that triggered it.
  StreamSplitter(const ChunkerOptions& options, std::function<Status(ByteSpan chunk)> sink);

  Status Write(ByteSpan data);
  // Emits the remaining bytes as the last chunk(s). Write must not be called afterwards.
  Status Finish();

  uint64_t bytes_written() const { return total_; }

 private:
  enum class TarState : uint8_t { kUnknown, kActive, kOff };
  // Stream bytes [start, start + bytes.size()) that the splitter may cut: buf_, or a caller's
  // write when nothing is carried over.
  struct Window {
    ByteSpan bytes;
    uint64_t start;
    uint64_t end() const { return start + bytes.size(); }
  };

  Window Buffered() const;
  // Parses each tar header whose 512 bytes lie in `w` and queues its forced cuts, then emits
  // every chunk of `w` whose end is already decided; at_eof decides the rest.
  Status Cut(const Window& w, bool at_eof);
  void ObserveTarHeaders(const Window& w, bool at_eof);
  Status Drain(const Window& w, bool at_eof);

  Chunker chunker_;
  ChunkerOptions options_;
  std::function<Status(ByteSpan)> sink_;
  uint64_t emitted_ = 0;  // stream offset of the first byte not yet handed to sink_
  // Bytes carried between writes: buf_[0] is stream offset buf_start_, and the bytes from
  // emitted_ on are the undecided end of the stream so far (under max_size plus a tar header).
  std::string buf_;
  uint64_t buf_start_ = 0;
  size_t capacity_;
  uint64_t total_ = 0;
  // Tar tracking. next_tar_header_ is the stream offset of the next header not yet parsed
  // (meaningful while kActive); forced_cuts_ holds known boundaries past emitted_, ascending.
  TarState tar_state_;
  uint64_t next_tar_header_ = 0;
  std::deque<uint64_t> forced_cuts_;
  Status error_;  // first sink error; sticky
  bool finished_ = false;
};

}  // namespace weft
