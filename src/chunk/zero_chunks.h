// Zero chunks: a run of zero bytes (a hole: a file extended by truncate, the gaps of a sparse
// file) is a list of chunks of 2^k zero bytes, k <= kMaxZeroChunkLog2. Their ids are constants,
// so a writer names a hole without hashing it, and ZeroChunkStore, in front of any store,
// answers them from one shared buffer: a hole is never stored, read from disk or sent to
// another site, and a terabyte of it costs a manifest of 64 Ki entries. A chunk the splitter
// cut from real zeros of such a length (FastCDC's 256 KiB maximum) has the same id and is
// served the same way. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "chunk/chunk_store.h"

namespace weft {

inline constexpr int kMaxZeroChunkLog2 = 24;
inline constexpr uint32_t kMaxZeroChunk = uint32_t{1} << kMaxZeroChunkLog2;  // 16 MiB

// The id of 2^log2 zero bytes, 0 <= log2 <= kMaxZeroChunkLog2.
const ChunkId& ZeroChunkId(int log2);

// The length of the zero chunk `id` names, or nullopt if it names none.
std::optional<uint32_t> ZeroChunkLength(const ChunkId& id);

// The zero chunks a run of `length` zero bytes is cut into, in order: kMaxZeroChunk as often
// as it fits, then the powers of two of the rest, largest first.
void ForEachZeroChunk(uint64_t length, const std::function<void(const ChunkId&, uint32_t)>& fn);

// The plaintext of the zero chunk of `length` bytes (a power of two up to kMaxZeroChunk),
// shared: made once per length and kept for the life of the process.
std::shared_ptr<const std::string> ZeroChunkBytes(uint32_t length);

// A ChunkStore that answers zero chunks itself and passes everything else to `base`.
class ZeroChunkStore final : public ChunkStore {
 public:
  explicit ZeroChunkStore(std::shared_ptr<ChunkStore> base) : base_(std::move(base)) {}

  // A zero chunk is never stored (false: it was already "present").
  Result<bool> Put(const ChunkId& id, ByteSpan data) override;
  Status Flush() override { return base_->Flush(); }
  bool Contains(const ChunkId& id) override;
  Result<std::string> Get(const ChunkId& id) override;
  Result<std::shared_ptr<const std::string>> GetShared(const ChunkId& id) override;
  Result<std::shared_ptr<const std::string>> GetSharedOnce(const ChunkId& id) override;
  Result<std::vector<std::shared_ptr<const std::string>>> GetManyOnce(
      std::span<const ChunkId> ids) override;
  Status LendMany(std::span<const ChunkId> ids, const ChunkUser& use) override;
  void WillNeed(std::span<const ChunkId> ids) override;
  Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) override {
    return base_->Sweep(is_live);
  }
  Status Verify(std::vector<ChunkProblem>* problems) override { return base_->Verify(problems); }
  ChunkStoreStats Stats() override { return base_->Stats(); }

  ChunkStore& base() { return *base_; }

 private:
  const std::shared_ptr<ChunkStore> base_;
};

}  // namespace weft
