#!/usr/bin/env bash
# Installs dependencies, builds with the `ci` preset (release, -Werror) and runs every test
# (unit + integration) with ctest. Exits non-zero on any failure. Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# Layering (no include points up the module stack) and formatting, before the long build.
bash scripts/check-layers.sh --format
cmake --preset ci
cmake --build --preset ci -j "${WEFT_BUILD_JOBS:-2}"
# ctest prints its own summary ("100% tests passed, 0 tests failed out of N") and exits
# non-zero when a test fails.
ctest --preset ci -j "${WEFT_TEST_JOBS:-1}"

# Fuzz targets, ~5 s each after their own build (scripts/fuzz.sh): only where clang can link a
# libFuzzer binary, so a machine without clang still runs everything above.
fuzz_probe="$(mktemp -d)"
if command -v clang++ >/dev/null &&
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
  clang++ -x c++ -fsanitize=fuzzer - -o "$fuzz_probe/probe" >/dev/null 2>&1; then
  rm -rf "$fuzz_probe"
  bash scripts/fuzz.sh "${WEFT_FUZZ_SECONDS:-5}"
else
  rm -rf "$fuzz_probe"
  echo "test.sh: clang with libFuzzer is not installed; skipping scripts/fuzz.sh"
fi
