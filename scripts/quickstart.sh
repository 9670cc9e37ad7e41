#!/usr/bin/env bash
# Weft's main job: installs dependencies, builds the `release` preset and runs the hub,
# `weft serve`, over ./weft-data on 127.0.0.1:9000 (WEFT_LISTEN overrides) until Ctrl-C.
# Root's S3 key comes from WEFT_ROOT_ACCESS_KEY / WEFT_ROOT_SECRET_KEY; without them the first
# start generates a pair and prints it once. Usage: bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
if [[ -z "${WEFT_BIN:-}" ]]; then  # WEFT_BIN=path/to/weft reuses a binary built elsewhere
  cmake --preset release
  cmake --build --preset release -j "${WEFT_BUILD_JOBS:-2}" --target weft
fi
WEFT="${WEFT_BIN:-$PWD/build/release/src/cli/weft}"
LISTEN="${WEFT_LISTEN:-127.0.0.1:9000}"

cat <<HELP

Weft hub on http://$LISTEN (data in ./weft-data). From another terminal, with root's key
exported as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY:
  aws --endpoint-url http://$LISTEN s3 mb s3://datasets
  aws --endpoint-url http://$LISTEN s3 sync ./my-dataset s3://datasets/my-dataset/
  curl http://$LISTEN/_weft/metrics
Ctrl-C stops it after the requests in flight.

HELP
exec "$WEFT" --data "$PWD/weft-data" serve --listen "$LISTEN"
