// Hashing over OpenSSL EVP (which uses SHA-NI where the CPU has it): SHA-256 and MD5, whole or
// incremental. The functions are thread-safe; a hasher is used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/bytes.h"

namespace weft {

// Raw HMACs: 32 bytes (SHA-256; SigV4, tokens) and 20 (SHA-1; SigV2).
std::string HmacSha256(std::string_view key, std::string_view data);
std::string HmacSha1(std::string_view key, std::string_view data);

// SHA-256 of `data` into `out` (32 bytes).
void Sha256(ByteSpan data, uint8_t* out);

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
