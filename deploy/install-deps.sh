#!/usr/bin/env bash
# Installs the Debian packages the project builds, tests and runs with, and only those
# that are missing. Idempotent: a second run changes nothing and touches no network.
#
# Usage: deploy/install-deps.sh            (uses sudo when not root)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake pkg-config
  # rdma-core: the verbs backend builds everywhere
  rdma-core ibverbs-providers libibverbs-dev librdmacm-dev
  # the Soft-RoCE suite (tests/softroce): a qemu guest with rxe devices, perftest to
  # compare with; the guest kernel is downloaded into a cache, not installed
  qemu-system-x86 busybox-static iproute2 perftest rdmacm-utils ibverbs-utils
  cpio xz-utils util-linux  # the guest image is unpacked and packed with these
  # ZooKeeper: C client for membership, server for local clusters and tests
  libzookeeper-mt-dev zookeeper
  # libraries
  libabsl-dev libprotobuf-dev protobuf-compiler libsodium-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # allocation benchmark's comparison column (tools/alloc_bench; optional at build time)
  libmimalloc-dev
  # transaction benchmark's baseline (tools/tx_bench): hiredis client, Redis server
  libhiredis-dev redis-server libmemcached-dev memcached  # and tools/ycsb's memcached baseline
  # the failover benchmark's and LinkBench driver's plots (tools/failover_bench, tools/linkbench)
  gnuplot-nox
  # LinkBench's baseline: MariaDB started by the driver, reached through libmariadb (tools/linkbench)
  mariadb-server libmariadb-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the package lists first: a fresh machine's lists may be
# enough, and it keeps a second run offline.
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
  "${sudo[@]}" apt-get update -q >&2
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
