// ChunkId: the SHA-256 of a chunk's plaintext (base/hash.h hashes it). A plain value;
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/bytes.h"
#include "base/hash.h"

namespace weft {

class ChunkId {
 public:
  static constexpr size_t kSize = 32;

  ChunkId() { bytes_.fill(0); }
  // Hashes `data`.
  static ChunkId Of(ByteSpan data);
  // From 32 raw bytes; nullopt if the size is wrong.
  static std::optional<ChunkId> FromBytes(std::string_view raw);
  static std::optional<ChunkId> FromHex(std::string_view hex);

  std::string_view raw() const {
    return {reinterpret_cast<const char*>(bytes_.data()), bytes_.size()};
  }
  std::string ToHex() const;
  // First 12 hex digits, for messages.
  std::string ShortHex() const { return ToHex().substr(0, 12); }
  const std::array<uint8_t, kSize>& bytes() const { return bytes_; }

  auto operator<=>(const ChunkId&) const = default;

 private:
  std::array<uint8_t, kSize> bytes_;
};

struct ChunkIdHash {
  size_t operator()(const ChunkId& id) const {
    size_t h;  // the id is already a uniform hash
    std::memcpy(&h, id.bytes().data(), sizeof(h));
    return h;
  }
};

}  // namespace weft

template <>
struct std::hash<weft::ChunkId> : weft::ChunkIdHash {};
