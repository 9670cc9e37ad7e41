// ChunkId: the SHA-256 of a chunk's plaintext, and the hashing helpers built on OpenSSL EVP
// (which uses SHA-NI where the CPU has it). Values are plain and thread-safe; hashers are not.
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

// Incremental hashers over OpenSSL EVP. Not copyable; one thread at a time.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void Update(ByteSpan data);
  std::array<uint8_t, 32> Finish();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

class Md5Hasher {
 public:
  Md5Hasher();
  ~Md5Hasher();
  Md5Hasher(const Md5Hasher&) = delete;
  Md5Hasher& operator=(const Md5Hasher&) = delete;
  void Update(ByteSpan data);
  std::array<uint8_t, 16> Finish();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string Md5Hex(ByteSpan data);
// Lower-case hex SHA-256 of `data` (SigV4's payload and canonical-request hashes).
std::string Sha256Hex(ByteSpan data);

}  // namespace weft

template <>
struct std::hash<weft::ChunkId> : weft::ChunkIdHash {};
