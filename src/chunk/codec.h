// Per-chunk compression for pack files: zstd when it saves at least 5 %, raw otherwise.
// Functions are thread-safe: each thread keeps its own zstd contexts.
#pragma once

#include <cstdint>
#include <string>

#include "base/bytes.h"
#include "base/status.h"

namespace weft {

// Stored on disk in pack records and indexes: values never change meaning.
enum class Codec : uint8_t {
  kRaw = 0,
  kZstd = 1,
};

bool IsKnownCodec(uint8_t value);

// Compresses `raw` with zstd at `level`. Returns kZstd with the frame in *compressed when it
// saves at least `min_saving` (a fraction of raw's size; 5 % by default); otherwise kRaw, and
// the caller stores `raw` itself (*compressed is then unspecified). Incompressible input costs
// one bounded zstd pass that gives up early.
Codec EncodeChunk(ByteSpan raw, int level, std::string* compressed, double min_saving = 0.05);

// The plaintext of a stored chunk; Corruption unless `stored` decodes to exactly `raw_size`
// bytes. Allocates `raw_size` bytes, so the caller bounds it; sizes inside the zstd frame are
// never trusted beyond it.
Result<std::string> DecodeChunk(Codec codec, ByteSpan stored, size_t raw_size);

}  // namespace weft
