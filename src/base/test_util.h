// Helpers shared by the unit tests of every module (header-only; tests only).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>

namespace weft::testutil {

// `n` deterministic pseudo-random (incompressible) bytes.
inline std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  for (size_t i = n & ~size_t{7}; i < n; ++i) s[i] = static_cast<char>(rng());
  return s;
}

}  // namespace weft::testutil
