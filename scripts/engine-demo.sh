#!/usr/bin/env bash
# A tour of the engine through the CLI alone (no server): installs dependencies, builds the
# `release` preset, stores a generated ~50 MB dataset in ./weft-data, snapshots it, changes 10 %
# of it and stores that too, reads the snapshot back and compares it byte for byte with the
# original, then prints `weft du` and `weft fsck`. Safe to rerun: each run uses a new snapshot
# name and a new /quickstart/<run> directory. Usage: bash scripts/engine-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
if [[ -z "${WEFT_BIN:-}" ]]; then  # WEFT_BIN=path/to/weft reuses a binary built elsewhere
  cmake --preset release
  cmake --build --preset release -j "${WEFT_BUILD_JOBS:-2}" --target weft
fi

WEFT="${WEFT_BIN:-$PWD/build/release/src/cli/weft}"
DATA="$PWD/weft-data"
RUN="run-$(date +%Y%m%d-%H%M%S)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/weft-quickstart.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
weft() { "$WEFT" --data "$DATA" "$@"; }

step() { printf '\n== %s\n' "$*"; }

step "generating a ~50 MB mixed dataset (images, tar shards, JSONL, tensors; seed 1)"
/usr/bin/python3 tools/gen_dataset.py --kind mixed --size 50M --seed 1 --out "$WORK/v1"

step "weft put (v1) -> /quickstart/$RUN"
weft put "$WORK/v1" "/quickstart/$RUN"
weft snapshot create "quickstart-$RUN-v1" "/quickstart/$RUN"

step "changing 10 % of the files and storing v2 over v1"
/usr/bin/python3 tools/gen_dataset.py --mutate "$WORK/v1" --change-fraction 0.1 --seed 2 \
  --out "$WORK/v2"
# "v2/." puts v2's contents into the existing directory, as `cp -r v2/. dest` would.
weft put "$WORK/v2/." "/quickstart/$RUN"

step "reading snapshot quickstart-$RUN-v1 back and comparing it with v1, byte for byte"
weft get --snapshot "quickstart-$RUN-v1" "/quickstart/$RUN" "$WORK/restored"
diff -r "$WORK/v1" "$WORK/restored"
echo "identical: $(find "$WORK/v1" -type f | wc -l) files"

step "weft du"
weft du
step "weft fsck"
weft fsck
