#include "chunk/splitter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>

namespace weft {
namespace {

constexpr uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The Gear table is part of the chunk format: changing the seed changes every cut point and so
// every chunk id. Built at compile time so it can never depend on the machine or the run.
constexpr std::array<uint64_t, 256> MakeGearTable() {
  std::array<uint64_t, 256> table{};
  uint64_t state = 0x5745465447454152ULL;  // "WEFTGEAR"
  for (uint64_t& v : table) v = SplitMix64(&state);
  return table;
}
constexpr std::array<uint64_t, 256> kGear = MakeGearTable();

// Normalized chunking (FastCDC §3.3): two bits harder below avg, two bits easier above, which
// pulls chunk sizes towards avg.
constexpr int kNormalization = 2;

// The Gear hash shifts left, so its high bits mix the last 64 bytes while its low bits see only
// the last few; the masks therefore test high bits.
uint64_t HighBitsMask(int bits) {
  bits = std::clamp(bits, 1, 63);
  return ~uint64_t{0} << (64 - bits);
}

// Rolls the Gear hash over p[i, end) and returns the position just past the first byte where
// (hash & mask) == 0, or 0 if there is none (with *hash updated to continue from end). The
// hand unrolling is worth about 25 %: the loop is bound by its bookkeeping, not by the hash.
inline size_t ScanForCut(const uint8_t* p, size_t i, size_t end, uint64_t mask, uint64_t* hash) {
  uint64_t h = *hash;
  for (; i + 4 <= end; i += 4) {
    h = (h << 1) + kGear[p[i]];
    if ((h & mask) == 0) return i + 1;
    h = (h << 1) + kGear[p[i + 1]];
    if ((h & mask) == 0) return i + 2;
    h = (h << 1) + kGear[p[i + 2]];
    if ((h & mask) == 0) return i + 3;
    h = (h << 1) + kGear[p[i + 3]];
    if ((h & mask) == 0) return i + 4;
  }
  for (; i < end; ++i) {
    h = (h << 1) + kGear[p[i]];
    if ((h & mask) == 0) return i + 1;
  }
  *hash = h;
  return 0;
}

constexpr size_t kTarBlock = 512;
// Sizes beyond this are nonsense for a real archive; rejecting them keeps offset arithmetic far
// from overflow.
constexpr uint64_t kMaxTarMemberSize = uint64_t{1} << 60;

// A tar numeric field: octal digits (leading spaces allowed, ended by NUL or space), or the GNU
// base-256 form flagged by 0x80 in the first byte. nullopt when malformed or negative.
std::optional<uint64_t> ParseTarNumber(const uint8_t* field, size_t len) {
  if (field[0] == 0x80) {
    uint64_t v = 0;
    for (size_t i = 1; i < len; ++i) {
      if (v > (kMaxTarMemberSize >> 8)) return std::nullopt;
      v = (v << 8) | field[i];
    }
    return v;
  }
  if (field[0] & 0x80) return std::nullopt;  // 0xff: negative base-256; others undefined
  size_t i = 0;
  while (i < len && field[i] == ' ') ++i;
  uint64_t v = 0;
  for (; i < len && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v > (kMaxTarMemberSize >> 3)) return std::nullopt;
    v = (v << 3) | static_cast<uint64_t>(field[i] - '0');
  }
  for (; i < len; ++i) {  // only terminators may follow the digits
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  return v;
}

enum class TarBlock { kMember, kEnd, kInvalid };

// Classifies one 512-byte block; for a member, *data_size is the bytes of data that follow the
// header (before padding to 512).
TarBlock ClassifyTarBlock(const uint8_t* block, uint64_t* data_size) {
  if (std::all_of(block, block + kTarBlock, [](uint8_t b) { return b == 0; })) {
    return TarBlock::kEnd;
  }
  if (std::memcmp(block + 257, "ustar", 5) != 0) return TarBlock::kInvalid;
  std::optional<uint64_t> stored_sum = ParseTarNumber(block + 148, 8);
  if (!stored_sum) return TarBlock::kInvalid;
  // The checksum counts its own field as spaces; some old writers summed signed chars.
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i) {
    const uint8_t b = (i >= 148 && i < 156) ? uint8_t{' '} : block[i];
    unsigned_sum += b;
    signed_sum += static_cast<int8_t>(b);
  }
  if (*stored_sum != unsigned_sum && static_cast<int64_t>(*stored_sum) != signed_sum) {
    return TarBlock::kInvalid;
  }
  std::optional<uint64_t> size = ParseTarNumber(block + 124, 12);
  if (!size) return TarBlock::kInvalid;
  switch (block[156]) {
    case '1':  // hard link
    case '2':  // symlink
    case '3':  // character device
    case '4':  // block device
    case '5':  // directory
    case '6':  // fifo
      // No data follows these whatever the size field says (as GNU tar and Python read them).
      *data_size = 0;
      return TarBlock::kMember;
    case 'S':
      // Old GNU sparse members may chain extension headers before the data; rather than follow
      // them, give up tar mode (chunking stays correct, only less aligned).
      if (block[482] != 0) return TarBlock::kInvalid;
      break;
    default:
      break;
  }
  *data_size = *size;
  return TarBlock::kMember;
}

}  // namespace

Status ChunkerOptions::Validate() const {
  if (min_size < 64) return InvalidArgument("chunker min_size must be at least 64");
  if (!(min_size <= avg_size && avg_size <= max_size)) {
    return InvalidArgument("chunker sizes must satisfy min_size <= avg_size <= max_size");
  }
  if (!std::has_single_bit(avg_size)) {
    return InvalidArgument("chunker avg_size must be a power of two");
  }
  return OkStatus();
}

Chunker::Chunker(const ChunkerOptions& options) : options_(options) {
  // Options should have been validated; keep even invalid ones from producing empty chunks.
  options_.min_size = std::max<uint32_t>(options_.min_size, 1);
  options_.max_size = std::max(options_.max_size, options_.min_size);
  const int avg_bits = std::bit_width(std::max<uint32_t>(options_.avg_size, 2)) - 1;
  mask_small_ = HighBitsMask(avg_bits + kNormalization);
  mask_large_ = HighBitsMask(avg_bits - kNormalization);
}

size_t Chunker::NextCut(ByteSpan data) const {
  const size_t size = data.size();
  if (size <= options_.min_size) return size;
  const size_t end = std::min<size_t>(size, options_.max_size);
  const size_t center = std::min<size_t>(end, options_.avg_size);
  // Bytes before min_size cannot end a chunk, so they are not even hashed (FastCDC's skip).
  uint64_t hash = 0;
  if (size_t cut = ScanForCut(data.data(), options_.min_size, center, mask_small_, &hash)) {
    return cut;
  }
  if (size_t cut = ScanForCut(data.data(), center, end, mask_large_, &hash)) return cut;
  return end;
}

StreamSplitter::StreamSplitter(const ChunkerOptions& options,
                               std::function<Status(ByteSpan chunk)> sink)
    : chunker_(options),
      options_(options),
      sink_(std::move(sink)),
      capacity_(2 * static_cast<size_t>(std::max<uint32_t>(options.max_size, 1)) + kTarBlock),
      tar_state_(options.tar_aware ? TarState::kUnknown : TarState::kOff) {}

// The most of one write cut in place at a time: bounds forced_cuts_ (a tar of tiny members
// has a cut every 512 bytes) while each slice's carried end (under max_size) stays a small
// fraction of it.
constexpr size_t kInPlaceSlice = 8 << 20;

StreamSplitter::Window StreamSplitter::Buffered() const {
  return {AsBytes(std::string_view(buf_)), buf_start_};
}

Status StreamSplitter::Write(ByteSpan data) {
  if (finished_) return FailedPrecondition("StreamSplitter::Write after Finish");
  if (!error_.ok()) return error_;
  const size_t max_size = std::max<uint32_t>(options_.max_size, 1);
  uint64_t start = total_;  // stream offset of data[0]
  total_ += data.size();
  while (!data.empty()) {
    if (emitted_ == buf_start_ + buf_.size() && tar_state_ != TarState::kUnknown) {
      // Nothing carried over: cut the caller's bytes where they lie, and keep a copy of only
      // the undecided end. This is the path almost every byte of a large write takes. A huge
      // write goes in slices, so that the tar cuts queued ahead stay few.
      const ByteSpan slice = data.first(std::min(data.size(), kInPlaceSlice));
      error_ = Cut({slice, start}, /*at_eof=*/false);
      if (!error_.ok()) return error_;
      buf_.assign(AsChars(slice.subspan(emitted_ - start)));
      buf_start_ = emitted_;
      data = data.subspan(slice.size());
      start += slice.size();
      continue;
    }
    // Bytes carried over (or the first tar block not seen yet): append what their chunk needs
    // to be decided; once it is emitted, the rest of `data` goes the way above.
    buf_.erase(0, emitted_ - buf_start_);
    buf_start_ = emitted_;
    const size_t take = std::min({data.size(), capacity_ - buf_.size(), max_size + kTarBlock});
    // The carry is under max_size plus a tar header, so there is room; never spin.
    if (take == 0) return error_ = Internal("StreamSplitter buffer did not drain");
    buf_.append(AsChars(data.first(take)));
    error_ = Cut(Buffered(), /*at_eof=*/false);
    if (!error_.ok()) return error_;
    if (emitted_ >= start && tar_state_ != TarState::kUnknown) {
      // The carry is out: copies of data[0, take) past emitted_ are dropped and cut from
      // `data` itself. (Still unknown: nothing can be emitted, so the bytes stay buffered.)
      const uint64_t used = emitted_ - start;
      buf_.clear();
      buf_start_ = emitted_;
      data = data.subspan(used);
      start += used;
    } else {
      data = data.subspan(take);
      start += take;
    }
  }
  return OkStatus();
}

Status StreamSplitter::Finish() {
  if (finished_) return FailedPrecondition("StreamSplitter::Finish called twice");
  if (!error_.ok()) return error_;
  finished_ = true;
  error_ = Cut(Buffered(), /*at_eof=*/true);
  buf_.clear();
  buf_.shrink_to_fit();
  buf_start_ = emitted_;
  return error_;
}

Status StreamSplitter::Cut(const Window& w, bool at_eof) {
  ObserveTarHeaders(w, at_eof);
  return Drain(w, at_eof);
}

void StreamSplitter::ObserveTarHeaders(const Window& w, bool at_eof) {
  if (tar_state_ == TarState::kUnknown) {
    if (w.end() < kTarBlock) {
      if (at_eof) tar_state_ = TarState::kOff;
      return;
    }
    // Nothing is emitted while the state is unknown, so the first block is still in buf_.
    uint64_t size = 0;
    tar_state_ = w.start == 0 && ClassifyTarBlock(w.bytes.data(), &size) == TarBlock::kMember
                     ? TarState::kActive
                     : TarState::kOff;
    next_tar_header_ = 0;
  }
  auto push_cut = [this](uint64_t offset) {
    if (offset > emitted_ && (forced_cuts_.empty() || offset > forced_cuts_.back())) {
      forced_cuts_.push_back(offset);
    }
  };
  while (tar_state_ == TarState::kActive && next_tar_header_ + kTarBlock <= w.end()) {
    // A pending header is a forced cut, so emission stops before it; this guards the invariant
    // (and that the window holds it) rather than trusting it with an out-of-range read.
    if (next_tar_header_ < emitted_ || next_tar_header_ < w.start) {
      tar_state_ = TarState::kOff;
      break;
    }
    const uint8_t* block = w.bytes.data() + (next_tar_header_ - w.start);
    uint64_t data_size = 0;
    switch (ClassifyTarBlock(block, &data_size)) {
      case TarBlock::kMember: {
        const uint64_t data_start = next_tar_header_ + kTarBlock;
        const uint64_t padded = (data_size + kTarBlock - 1) / kTarBlock * kTarBlock;
        push_cut(next_tar_header_);
        push_cut(data_start);
        next_tar_header_ = data_start + padded;
        break;
      }
      case TarBlock::kEnd:
      case TarBlock::kInvalid:
        // Whatever follows, the previous member's data ends here.
        push_cut(next_tar_header_);
        tar_state_ = TarState::kOff;
        break;
    }
  }
  if (at_eof && tar_state_ == TarState::kActive) {
    if (next_tar_header_ < w.end()) push_cut(next_tar_header_);  // a header cut short
    tar_state_ = TarState::kOff;
  }
}

Status StreamSplitter::Drain(const Window& w, bool at_eof) {
  const size_t max_size = std::max<uint32_t>(options_.max_size, 1);
  while (emitted_ < w.end()) {
    // Until the first 512 bytes are seen we do not know whether the stream is a tar.
    if (tar_state_ == TarState::kUnknown && !at_eof) break;
    const uint64_t cur = emitted_;
    while (!forced_cuts_.empty() && forced_cuts_.front() <= cur) forced_cuts_.pop_front();
    const size_t avail = w.end() - cur;
    size_t limit = std::min(avail, max_size);
    bool forced = false;
    if (!forced_cuts_.empty() && forced_cuts_.front() - cur <= limit) {
      limit = static_cast<size_t>(forced_cuts_.front() - cur);
      forced = true;
    }
    // A header not parsed yet (its 512 bytes are not all here) may add a cut inside the span.
    if (!at_eof && tar_state_ == TarState::kActive && next_tar_header_ < cur + limit) break;
    // Without a forced cut, a content-defined decision needs max_size bytes (or the end).
    if (!forced && !at_eof && limit < max_size) break;
    const ByteSpan span = w.bytes.subspan(cur - w.start, limit);
    size_t cut = chunker_.NextCut(span);
    if (cut == 0 || cut > limit) cut = limit;
    emitted_ += cut;
    WEFT_RETURN_IF_ERROR(sink_(span.first(cut)));
  }
  return OkStatus();
}

}  // namespace weft
