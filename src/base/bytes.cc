#include "base/bytes.h"

#include <cstdio>
#include <cstdlib>

#include "base/ascii.h"

namespace weft {

void PutBigEndian64(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, 8);
}

void PutBigEndian32(std::string* out, uint32_t v) {
  char buf[4];
  for (int i = 3; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, 4);
}

uint64_t GetBigEndian64(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | b[i];
  return v;
}

uint32_t GetBigEndian32(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | b[i];
  return v;
}

void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint64(out, s.size());
  out->append(s);
}

std::string ToHex(ByteSpan bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.resize(bytes.size() * 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

static int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>((hi << 4) | lo);
  }
  return out;
}

bool ByteReader::GetVarint64(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63; shift += 7) {
    if (pos_ >= data_.size()) return false;
    auto byte = static_cast<uint8_t>(data_[pos_++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool ByteReader::GetBigEndian64(uint64_t* v) {
  if (remaining() < 8) return false;
  *v = weft::GetBigEndian64(data_.data() + pos_);
  pos_ += 8;
  return true;
}

bool ByteReader::GetBigEndian32(uint32_t* v) {
  if (remaining() < 4) return false;
  *v = weft::GetBigEndian32(data_.data() + pos_);
  pos_ += 4;
  return true;
}

bool ByteReader::GetByte(uint8_t* v) {
  if (remaining() < 1) return false;
  *v = static_cast<uint8_t>(data_[pos_++]);
  return true;
}

bool ByteReader::GetBytes(size_t n, std::string_view* v) {
  if (remaining() < n) return false;
  *v = data_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool ByteReader::GetLengthPrefixed(std::string_view* v) {
  uint64_t n = 0;
  if (!GetVarint64(&n) || n > remaining()) return false;
  return GetBytes(static_cast<size_t>(n), v);
}

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  bool dot = false;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || (text[digits] == '.' && !dot))) {
    dot |= text[digits] == '.';
    ++digits;
  }
  if (digits == 0 || text.substr(0, digits) == ".") return std::nullopt;
  std::string_view unit = text.substr(digits);
  int shift = 0;
  if (!unit.empty()) {
    const std::string_view units = "KMGT";
    size_t at = units.find(static_cast<char>(unit[0] & ~0x20));  // upper case
    if (at == std::string_view::npos) return std::nullopt;
    shift = 10 * static_cast<int>(at + 1);
    unit.remove_prefix(1);
    if (!unit.empty() && !EqualsIgnoreCase(unit, "b") && !EqualsIgnoreCase(unit, "ib")) {
      return std::nullopt;
    }
  }
  double value = std::strtod(std::string(text.substr(0, digits)).c_str(), nullptr);
  double bytes = value * static_cast<double>(uint64_t{1} << shift);
  if (bytes >= 18e18) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

void PutSignedVarint64(std::string* out, int64_t v) {
  PutVarint64(out, static_cast<uint64_t>(v));
}

bool ByteReader::GetSignedVarint64(int64_t* v) {
  uint64_t u = 0;
  if (!GetVarint64(&u)) return false;
  *v = static_cast<int64_t>(u);
  return true;
}

namespace {
constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kBase64Url =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
}  // namespace

std::string Base64Encode(std::string_view bytes, bool url) {
  const std::string_view alphabet = url ? kBase64Url : kBase64;
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(alphabet[(acc << (6 - bits)) & 63]);
  if (!url) out.append((4 - out.size() % 4) % 4, '=');
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text, bool url) {
  const std::string_view alphabet = url ? kBase64Url : kBase64;
  if (!url) {
    if (text.size() % 4 != 0) return std::nullopt;
    size_t padding = 0;
    while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
      ++padding;
    }
    text.remove_suffix(padding);
  }
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const size_t v = alphabet.find(c);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

bool JsonNestingWithin(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace weft
