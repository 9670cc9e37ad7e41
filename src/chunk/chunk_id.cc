#include "chunk/chunk_id.h"

#include <cstring>

namespace weft {

ChunkId ChunkId::Of(ByteSpan data) {
  ChunkId id;
  Sha256(data, id.bytes_.data());
  return id;
}

std::optional<ChunkId> ChunkId::FromBytes(std::string_view raw) {
  if (raw.size() != kSize) return std::nullopt;
  ChunkId id;
  std::memcpy(id.bytes_.data(), raw.data(), kSize);
  return id;
}

std::optional<ChunkId> ChunkId::FromHex(std::string_view hex) {
  if (hex.size() != 2 * kSize) return std::nullopt;
  std::optional<std::string> raw = weft::FromHex(hex);
  if (!raw) return std::nullopt;
  return FromBytes(*raw);
}

std::string ChunkId::ToHex() const {
  return weft::ToHex(ByteSpan(bytes_));
}

}  // namespace weft
