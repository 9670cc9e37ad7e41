// Byte helpers: big-endian fixed-width encoding (so encoded integers sort like numbers in a
// KV store), varints, hex, base64, and a bounds-checked reader for decoding untrusted bytes.
// All functions are pure; ByteReader is a cursor over a caller-owned buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace weft {

using ByteSpan = std::span<const uint8_t>;

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline std::string_view AsChars(ByteSpan b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

void PutBigEndian64(std::string* out, uint64_t v);
void PutBigEndian32(std::string* out, uint32_t v);
uint64_t GetBigEndian64(const void* p);
uint32_t GetBigEndian32(const void* p);

void PutVarint64(std::string* out, uint64_t v);
// A signed value as the varint of its two's-complement bits (times and the like, where
// negative values are rare; small negative numbers take 10 bytes).
void PutSignedVarint64(std::string* out, int64_t v);
// Length-prefixed (varint) string.
void PutLengthPrefixed(std::string* out, std::string_view s);

std::string ToHex(ByteSpan bytes);
// Returns nullopt if `hex` has odd length or a non-hex character.
std::optional<std::string> FromHex(std::string_view hex);

// RFC 4648 base64: the standard alphabet with '=' padding (S3's Content-MD5, checksums), or
// with `url` the URL-safe alphabet without padding (bearer tokens). Decoding is strict: it
// rejects foreign characters, wrong padding and non-zero leftover bits, so every byte string
// has exactly one accepted encoding.
std::string Base64Encode(std::string_view bytes, bool url = false);
std::optional<std::string> Base64Decode(std::string_view text, bool url = false);

// Decodes values written by the Put* functions; every getter fails (returns false) instead of
// reading past the end, so corrupt input can never crash the decoder.
class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool GetVarint64(uint64_t* v);
  bool GetSignedVarint64(int64_t* v);  // written by PutSignedVarint64
  bool GetBigEndian64(uint64_t* v);
  bool GetBigEndian32(uint32_t* v);
  bool GetByte(uint8_t* v);
  bool GetBytes(size_t n, std::string_view* v);
  bool GetLengthPrefixed(std::string_view* v);

  bool empty() const { return pos_ == data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// "1.5 GiB" style.
std::string HumanBytes(uint64_t bytes);
// "512", "64K", "1.5G", "2TiB" (binary multiples; K/M/G/T with optional "iB" or "B") -> bytes.
// nullopt for anything else, negative values or overflow.
std::optional<uint64_t> ParseByteSize(std::string_view text);

// Whether JSON `text` nests arrays and objects at most `max_depth` deep (strings skipped), so
// a hostile body cannot drive a recursive parser off the stack. Does not validate the JSON.
bool JsonNestingWithin(std::string_view text, int max_depth);

}  // namespace weft
