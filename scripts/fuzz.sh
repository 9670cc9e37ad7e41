#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (the `fuzz` preset: clang, ASan + UBSan) and runs
# each for N seconds from a copy of its seed corpus (tests/fuzz/corpus/<target>/), so the
# repository is never modified. Exits non-zero if a target fails to build or finds a crash; the
# crashing input is kept and its path printed.
# Usage: bash scripts/fuzz.sh [seconds (default 5)] [target ...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-5}"
shift || true
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: seconds must be a positive number, not '$seconds'" >&2  # 0 would run forever
  exit 2
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(fuzz_sigv4 fuzz_aws_chunked fuzz_s3_xml fuzz_s3_request fuzz_http_head)
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "${WEFT_BUILD_JOBS:-2}"

work="$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")"
# UBSan stops at the first report (the preset builds with -fno-sanitize-recover) and prints
# where; ASan's leak check stays on.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
failed=()
for target in "${targets[@]}"; do
  dir="$work/$target"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  if [[ -d "tests/fuzz/corpus/$target" ]]; then
    cp -R "tests/fuzz/corpus/$target/." "$dir/corpus/"
  fi
  args=(-max_total_time="$seconds" -timeout=30 -print_final_stats=1
        -artifact_prefix="$dir/artifacts/")
  if [[ -f "tests/fuzz/$target.dict" ]]; then
    args+=(-dict="tests/fuzz/$target.dict")
  fi
  if "build/fuzz/tests/fuzz/$target" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1; then
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")"
    echo "fuzz: $target ok (${runs:-?} inputs in ${seconds} s)"
  else
    failed+=("$target")
    echo "fuzz: $target FAILED; last lines of $dir/log:"
    tail -n 80 "$dir/log"
    echo "fuzz: reproducer(s): $(find "$dir/artifacts" -type f | tr '\n' ' ')"
    echo "fuzz: rerun with build/fuzz/tests/fuzz/$target <reproducer>"
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]} (logs and inputs in $work)"
  exit 1
fi
rm -rf "$work"
