#!/bin/bash
# Where the kv service's node processes spend their time under redis-benchmark: starts
# a fresh 3-node cluster (deploy/local-cluster --services kv), drives it with
# redis-benchmark, samples the three farm_node processes with perf (dwarf call graphs),
# and prints the hottest symbols and the callers of malloc and free (each caller's share
# of all samples: the first frame above the allocator that is the project's code).
#
# Usage: tools/kv_server/profile_nodes.sh [build dir] [redis-benchmark arguments]
#   default: build  "-t set -c 50 -P 16 -r 100000 -n 5000000"
# Environment: FARM_PROFILE_SECONDS (default 5), FARM_PORT_BASE (default 17600),
#   FARM_PROFILE_OUT (the perf data file; default /tmp/farm-profile.data).
# Needs perf (Debian: linux-perf) and redis-benchmark (redis-tools).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${1:-build}
args=${2:--t set -c 50 -P 16 -r 100000 -n 5000000}
seconds=${FARM_PROFILE_SECONDS:-5}
port=${FARM_PORT_BASE:-17600}
out=${FARM_PROFILE_OUT:-/tmp/farm-profile.data}
run=/tmp/lc-profile-$port
for tool in perf redis-benchmark; do
  command -v $tool > /dev/null || { echo "profile_nodes: $tool is not installed" >&2; exit 2; }
done
deploy/local-cluster start --fresh --dir $run --cluster profile$port --build-dir "$build" --nodes 3 \
  --services kv --resp-port $port --zk-port $((port - 15212)) -- --kv_buckets=65536 --threads=2 \
  --log_sync=off > /dev/null || { echo "profile_nodes: the cluster did not start" >&2; exit 1; }
trap 'pkill -f "redis-benchmark -p $port" || true; deploy/local-cluster stop --dir $run > /dev/null 2>&1' EXIT
# shellcheck disable=SC2086
redis-benchmark -p $port $args -q > /dev/null 2>&1 &
sleep 2
pids=$(cat $run/pids/node-*.pid 2> /dev/null | paste -sd, || true)
[ -n "$pids" ] || { echo "profile_nodes: no node processes found in $run/pids" >&2; exit 1; }
perf record -F 499 --call-graph dwarf,16384 -p "$pids" -o "$out" -- sleep "$seconds" > /dev/null 2>&1
echo "== hottest symbols (self time, share of the nodes' samples)"
perf report -i "$out" --no-children --sort sym --stdio 2> /dev/null | grep -E "^ +[0-9]" | head -25 || true
echo "== callers of malloc and free (share of all samples)"
perf script -i "$out" -F ip,sym 2> /dev/null | awk '
  function allocator(f) {
    return f ~ /^(malloc|_int_malloc|_int_free|malloc_consolidate|cfree@GLIBC_2.2.5|unlink_chunk.*|free|_int_realloc|realloc|tcache_get)$/ ||
           f ~ /^operator (new|delete)/
  }
  function skipped(f) {
    return allocator(f) || f ~ /^(std::|absl::|__|\[unknown\]|0x)/ || f ~ /allocator|operator/
  }
  function finish() {
    if (n == 0) return
    ++total
    if (allocator(frame[1])) {
      ++in_alloc
      caller = "?"
      for (i = 2; i <= n; ++i) if (!skipped(frame[i])) { caller = substr(frame[i], 1, 110); break }
      ++by[caller]
    }
    n = 0
  }
  NF == 0 { finish(); next }
  { $1 = ""; sub(/^ /, ""); frame[++n] = $0 }
  END {
    finish()
    if (total == 0) { print "no samples"; exit }
    printf "%d samples, %.1f%% in malloc/free with a known caller\n", total, 100 * in_alloc / total
    for (c in by) printf "%6.2f%% %s\n", 100 * by[c] / total, c | "sort -rn | head -15"
  }' || true
