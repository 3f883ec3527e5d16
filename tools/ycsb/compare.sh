#!/usr/bin/env bash
# The YCSB comparison: YCSB-C and YCSB-B, uniform and Zipfian, on a 2- and a
# 3-node local FaRM cluster (one application thread per node), with memcached and Redis
# driven by the same generator in the same invocation. Prints each invocation's
# comparison table; the JSON of every run goes to $OUT (default /tmp/ycsb-compare).
#
#   tools/ycsb/compare.sh [build dir] [records] [seconds]
set -euo pipefail
BUILD=${1:-build}
RECORDS=${2:-100000}
SECONDS_PER_RUN=${3:-3}
OUT=${OUT:-/tmp/ycsb-compare}
mkdir -p "$OUT"
for nodes in 2 3; do
  for workload in c b; do
    for dist in uniform zipfian; do
      echo "== ${nodes} nodes, YCSB-${workload^^}, ${dist}"
      "$BUILD/tools/ycsb/ycsb" --backend=farm,memcached,redis --workload="$workload" --preset=farm \
        --distribution="$dist" --records="$RECORDS" --seconds="$SECONDS_PER_RUN" --threads=2 \
        --farm_threads=1 --farm_nodes="$nodes" --json="$OUT/${nodes}n-${workload}-${dist}.json" 2>/dev/null |
        sed -n '/^backend /,$p;/figures: nodes/p;/^  READ /p;/^  UPDATE /p'
    done
  done
done
