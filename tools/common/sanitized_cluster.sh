#!/usr/bin/env bash
# The node processes under a sanitizer, serving real workloads: starts a fresh 3-node
# `deploy/local-cluster` (kv and graph services) from a build made with -DFARM_ASAN=ON or
# -DFARM_TSAN=ON, drives it with LinkBench (tools/linkbench: the farm backend, a
# compute-only member, and/or graph-resp, the graph service over RESP) and with
# redis-benchmark against the kv service (plain, pipelined, --threads 2, hashes), stops
# it with SIGTERM, and fails if any process — the nodes or the driver — printed a
# sanitizer report. The unit and stress tests run under the sanitizers too (README,
# "Building by hand"); this covers what only the hosted processes do: services, their
# sessions and hosts, the compute-only member, shutdown.
#
#   tools/common/sanitized_cluster.sh <build dir> [linkbench flags...]
#   tools/common/sanitized_cluster.sh build-asan --nodes=2000 --requesters=20 --requests=2000
#
# Needs the build's farm_node_bin and linkbench targets, and redis-benchmark.
# Environment: LINKBENCH_BACKENDS (farm,graph-resp under ASan; graph-resp under TSan,
# whose shadow memory makes two LinkBench graphs — each with its hub of ~962k links —
# too much for a 24 GB machine), FARM_NODE_FLAGS (more farm_node flags; ZooKeeper
# sessions get 10 s, sanitized processes being slow), FARM_PORT_BASE (17700: the kv
# service on P..P+2, graph on P+10.., ZooKeeper on P-15200), FARM_KEEP_DIR (keep the run
# directory; its logs are kept anyway when a report is found).
# Exit: 0 clean, 1 a sanitizer report (the files named), 2 the workload failed.
set -uo pipefail
BUILD=${1:?usage: sanitized_cluster.sh <build dir> [linkbench flags...]}
shift
HERE=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
for bin in farm/node/farm_node tools/linkbench/linkbench; do
  [ -x "$BUILD/$bin" ] || { echo "sanitized_cluster.sh: no $BUILD/$bin (make farm_node_bin linkbench)" >&2; exit 2; }
done
command -v redis-benchmark > /dev/null || { echo "sanitized_cluster.sh: no redis-benchmark (redis-tools)" >&2; exit 2; }
if grep -q '^FARM_TSAN:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  SANITIZER=tsan
  DEFAULT_BACKENDS=graph-resp
elif grep -q '^FARM_ASAN:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  SANITIZER=asan
  DEFAULT_BACKENDS=farm,graph-resp
else
  echo "sanitized_cluster.sh: $BUILD is built without FARM_ASAN or FARM_TSAN" >&2
  exit 2
fi
BACKENDS=${LINKBENCH_BACKENDS:-$DEFAULT_BACKENDS}
[ $# -gt 0 ] || set -- --nodes=2000 --requesters=20 --requests=2000
# Reports go to each process's stderr, which local-cluster keeps in its logs; a report
# does not stop the process, so one run finds all it can.
export TSAN_OPTIONS="suppressions=$HERE/tests/tsan_suppressions.txt halt_on_error=0 history_size=4 ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1 halt_on_error=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 ${UBSAN_OPTIONS:-}"

P=${FARM_PORT_BASE:-17700}
DIR=$(mktemp -d /tmp/farm-sanitized-XXXXXX)
cleanup() {
  "$HERE/deploy/local-cluster" stop --dir "$DIR" > /dev/null 2>&1 || true
  [ -n "${FARM_KEEP_DIR:-}" ] || rm -rf "$DIR"
}
trap cleanup EXIT
echo "sanitized_cluster.sh: $SANITIZER build $BUILD; run directory $DIR"

# shellcheck disable=SC2086
if ! FARM_BUILD_DIR=$BUILD "$HERE/deploy/local-cluster" start --fresh --nodes 3 --dir "$DIR" --services kv,graph \
  --resp-port "$P" --graph-port "$((P + 10))" --zk-port "$((P - 15200))" -- --session_timeout_ms=10000 \
  ${FARM_NODE_FLAGS:-} > "$DIR/start.out" 2>&1; then
  cat "$DIR/start.out" >&2
  FARM_KEEP_DIR=1
  exit 2
fi
failed=0
GRAPH=127.0.0.1:$((P + 10)),127.0.0.1:$((P + 11)),127.0.0.1:$((P + 12))
echo "sanitized_cluster.sh: linkbench --backend=$BACKENDS $*"
"$BUILD/tools/linkbench/linkbench" --backend="$BACKENDS" --zookeeper="127.0.0.1:$((P - 15200))" \
  --secret_file="$DIR/secret" --graph_resp="$GRAPH" --progress=false "$@" > "$DIR/linkbench.out" 2>&1 || failed=1
grep -E "COMPLETED|failed" "$DIR/linkbench.out"

# The kv service: random keys (-r) so that updates meet in batches and split; every
# line on another node.
RB=(redis-benchmark -c 20 -r 1000 -q)
{
  "${RB[@]}" -p "$P" -t get,set,incr,hset,mset -n 5000 &&
    "${RB[@]}" -p "$((P + 1))" -t get,set -n 20000 -P 16 &&
    "${RB[@]}" -p "$((P + 2))" -t get,set -n 10000 --threads 2
} > "$DIR/redis-benchmark.out" 2>&1 || failed=1
tr '\r' '\n' < "$DIR/redis-benchmark.out" | grep -E "requests per second|ERR" | sed 's/^/  /'

"$HERE/deploy/local-cluster" stop --dir "$DIR" > /dev/null 2>&1
reports=$(grep -l -E "WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:" \
  "$DIR"/logs/node-*.log "$DIR/linkbench.out" 2> /dev/null)
if [ -n "$reports" ]; then
  KEPT=$(mktemp -d /tmp/farm-sanitized-report-XXXXXX)
  cp -r "$DIR/logs" "$DIR/linkbench.out" "$DIR/redis-benchmark.out" "$KEPT/"
  echo "sanitized_cluster.sh: sanitizer reports in (copies kept in $KEPT):" >&2
  echo "$reports" >&2
  exit 1
fi
if [ "$failed" -ne 0 ]; then
  echo "sanitized_cluster.sh: no sanitizer report, but a workload failed (outputs in $DIR)" >&2
  FARM_KEEP_DIR=1
  exit 2
fi
echo "sanitized_cluster.sh: no sanitizer report from the nodes or the driver"
