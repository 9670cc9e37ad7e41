#!/usr/bin/env bash
# Installs every Debian 12 package that Weft's build, tests and benchmarks need.
# Idempotent: when all of them are already installed it does nothing (no apt-get update), so
# reruns are fast. Run as root (or via sudo) on a fresh machine.
set -euo pipefail

PACKAGES=(
  # build; clang and its libFuzzer runtime for the fuzz preset (scripts/fuzz.sh)
  build-essential cmake ninja-build pkg-config clang-format clang libclang-rt-14-dev
  # libraries
  libssl-dev libzstd-dev librocksdb-dev libxxhash-dev libcli11-dev nlohmann-json3-dev
  libspdlog-dev libboost-dev libboost-system-dev libpugixml-dev zlib1g-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3
  # used by the integration tests and benchmarks: tar | zstd reference, mount/umount, sync
  zstd tar coreutils util-linux mount rsync
  # real S3 clients the S3 tests drive, and the reference servers the benchmarks compare with
  python3-boto3 awscli s3cmd rclone curl openssl nginx-light wrk
  # PyTorch's DataLoader reads through a spoke in the NeuralCache test and benchmark
  python3-torch
  # `weft mount` (libfuse3; fusermount3 for non-root users) and the Python package's fsspec
  libfuse3-dev fuse3 python3-fsspec python3-setuptools
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != ii* ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  SUDO=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
