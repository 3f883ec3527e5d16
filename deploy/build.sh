#!/usr/bin/env bash
# Configures and builds the project into build/ (or $FARM_BUILD_DIR).
# Extra arguments go to cmake's configure step, e.g. -DFARM_TSAN=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FARM_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${FARM_BUILD_TYPE:-RelWithDebInfo}" "$@" >&2
cmake --build "$build" -j"$(nproc)" >&2
