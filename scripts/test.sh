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
