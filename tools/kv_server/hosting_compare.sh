#!/bin/bash
# The kv store over RESP, hosted by 3 farm_node processes (deploy/local-cluster --services kv)
# vs in one process (kv_server --nodes=3) vs redis-server: redis-benchmark -t get,set,hset
# -c 50, with and without -P 16 and with --threads 2, rounds alternated; then YCSB C and B
# over RESP against all three nodes next to Redis and memcached.
#
# Environment (all optional):
#   FARM_BUILD_DIR       the build to measure (default build)
#   FARM_BASELINE_BUILD  a second build measured in the same rounds, alternated (A/B)
#   FARM_NODE_FLAGS      more farm_node flags for the hosted clusters, e.g. "--spin_us=5"
#   FARM_BASELINE_NODE_FLAGS  the baseline's instead (with or without FARM_BASELINE_BUILD:
#                        the same build with other flags is an A/B too)
#   FARM_ROUNDS          rounds (default 3)
#   FARM_LOG_SYNC        farm_node --log_sync (default off: nothing durable, as
#                        redis-server --save '' --appendonly no; "always" fsyncs commits)
#   FARM_PORT_BASE       ports P..P+2 (hosted), P+100 (kv_server), P+599 (redis),
#                        P-15212 (ZooKeeper); default 17400
#   FARM_TESTS           redis-benchmark -t (default get,set,hset)
#   FARM_REQUESTS="N NP NT NPT" requests per test: plain, -P 16, --threads 2, both
#                        (default "100000 1000000 400000 4000000": with --threads 2
#                        redis-benchmark times a run in steps of 250 ms, so those runs
#                        must last seconds)
#   FARM_RB_ARGS         more redis-benchmark arguments for every line, e.g. "-r 100000"
#                        (random keys; without it every request uses one key)
#   FARM_NODE_THREADS    worker threads per node process (default 2)
#   FARM_IN_PROCESS=0    skip kv_server;  FARM_YCSB=0  skip YCSB
#   FARM_AUTOGROUP=0     turns the kernel's session autogrouping off for the run (root;
#                        tools/common/autogroup.sh says why that matters for hosted /
#                        in-process)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source tools/common/autogroup.sh
trap farm_autogroup_restore EXIT
B=${FARM_BUILD_DIR:-build}
base=${FARM_PORT_BASE:-17400}
hosted=$base kvs_port=$((base + 100)) redis_port=$((base + 599)) zk=$((base - 15212))
run=/tmp/lc-bench-$base
# The variants measured in each round, in order: build and farm_node flags.
builds=("$B")
flags=("${FARM_NODE_FLAGS:-}")
if [ -n "${FARM_BASELINE_BUILD:-}" ] || [ -n "${FARM_BASELINE_NODE_FLAGS+x}" ]; then
  builds=("${FARM_BASELINE_BUILD:-$B}" "$B")
  flags=("${FARM_BASELINE_NODE_FLAGS-${FARM_NODE_FLAGS:-}}" "${FARM_NODE_FLAGS:-}")
fi
# requests per second (p50 ms) of each test of one redis-benchmark run, and the number of
# error replies if there were any
rb() {
  local out
  out=$(redis-benchmark -p "$1" -t "${FARM_TESTS:-get,set,hset}" -c 50 -q $2 ${FARM_RB_ARGS:-} 2>&1 | tr '\r' '\n')
  echo "$out" | grep -E "^(GET|SET|HSET): [0-9.]+ requests" |
    sed -E 's/ requests per second, p50=([0-9.]+) msec/ (\1)/' | tr '\n' ' '
  local errors
  errors=$(echo "$out" | grep -c "Error from server")
  [ "$errors" = 0 ] || echo -n "ERRORS: $errors ($(echo "$out" | grep -m1 "Error from server"))"
}
read -r n np nt npt <<< "${FARM_REQUESTS:-100000 1000000 400000 4000000}"
lines=("-n $n" "-n $np -P 16" "-n $nt --threads 2" "-n $npt -P 16 --threads 2")
redis-server --port $redis_port --save '' --appendonly no --daemonize yes > /dev/null
for round in $(seq "${FARM_ROUNDS:-3}"); do
  for v in "${!builds[@]}"; do
    build=${builds[$v]}
    # shellcheck disable=SC2086
    deploy/local-cluster start --fresh --dir $run --cluster bench$base --build-dir "$build" --nodes 3 \
      --services kv --resp-port $hosted --zk-port $zk -- --kv_buckets=65536 --threads="${FARM_NODE_THREADS:-2}" \
      --log_sync="${FARM_LOG_SYNC:-off}" ${flags[$v]} > /dev/null 2>&1 || { echo "cluster start failed ($build)"; exit 1; }
    for line in "${lines[@]}"; do echo "round $round [$line] hosted($build${flags[$v]:+ ${flags[$v]}}): $(rb $hosted "$line")"; done
    deploy/local-cluster stop --dir $run > /dev/null 2>&1
    if [ "${FARM_IN_PROCESS:-1}" != 0 ]; then
      "$build"/tools/kv_server/kv_server --nodes=3 --port=$kvs_port --buckets=65536 --seconds=600 \
        --dir=/tmp/kvs-bench-$base > /tmp/kvs-bench-$base.log 2>&1 &
      kvs=$!
      for _ in $(seq 100); do redis-cli -p $kvs_port PING > /dev/null 2>&1 && break; sleep 0.1; done
      for line in "${lines[@]}"; do echo "round $round [$line] in-process($build): $(rb $kvs_port "$line")"; done
      kill $kvs; wait $kvs 2>/dev/null
    fi
  done
  for line in "${lines[@]}"; do echo "round $round [$line] redis: $(rb $redis_port "$line")"; done
done
if [ "${FARM_YCSB:-1}" != 0 ]; then
  deploy/local-cluster start --fresh --dir $run --cluster bench$base --build-dir "$B" --nodes 3 \
    --services kv --resp-port $hosted --zk-port $zk -- --kv_buckets=65536 --threads=2 \
    --log_sync="${FARM_LOG_SYNC:-off}" > /dev/null 2>&1
  for w in c b; do
    "$B"/tools/ycsb/ycsb --backend=resp,redis,memcached \
      --resp_addresses=127.0.0.1:$hosted,127.0.0.1:$((hosted + 1)),127.0.0.1:$((hosted + 2)) \
      --workload=$w --preset=farm --records=50000 --seconds=3 --threads=6 \
      --properties=insertstart=$([ $w = c ] && echo 0 || echo 1000000) 2>&1 | sed -n '/^backend/,$p'
  done
  deploy/local-cluster stop --dir $run > /dev/null 2>&1
fi
redis-cli -p $redis_port shutdown nosave > /dev/null 2>&1
