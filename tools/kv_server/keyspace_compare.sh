#!/bin/bash
# The keyspace commands over RESP — KEYS *, a whole scan (redis-cli --scan, SCAN with
# its default COUNT of 10 until cursor 0) and FLUSHALL — on the kv store hosted by 3
# farm_node processes (deploy/local-cluster --services kv) vs redis-server, the same
# keys (redis-benchmark -t set -r R -n N), rounds alternated. Prints seconds per command
# and the keys each listed.
#
# Environment (all optional):
#   FARM_BUILD_DIR   the build to measure (default build)
#   FARM_ROUNDS      rounds (default 3)
#   FARM_KEYS        redis-benchmark -n and -r for the keys (default 100000: about 63k
#                    distinct keys)
#   FARM_PORT_BASE   ports P..P+2 (hosted), P+599 (redis), P-15212 (ZooKeeper);
#                    default 17500
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
B=${FARM_BUILD_DIR:-build}
base=${FARM_PORT_BASE:-17500}
hosted=$base redis_port=$((base + 599)) zk=$((base - 15212))
run=/tmp/lc-keyspace-$base
n=${FARM_KEYS:-100000}
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" > /tmp/keyspace-out.$base; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'; }
measure() {  # port label
  redis-benchmark -p "$1" -t set -n "$n" -r "$n" -c 50 -P 16 -q > /dev/null 2>&1
  local keys scan flush listed scanned
  keys=$(seconds redis-cli -p "$1" KEYS '*'); listed=$(wc -l < /tmp/keyspace-out.$base)
  scan=$(seconds redis-cli -p "$1" --scan); scanned=$(sort -u /tmp/keyspace-out.$base | wc -l)
  flush=$(seconds redis-cli -p "$1" FLUSHALL)
  echo "$2: KEYS ${keys}s ($listed keys), --scan ${scan}s ($scanned keys), FLUSHALL ${flush}s," \
       "then DBSIZE $(redis-cli -p "$1" DBSIZE)"
}
redis-server --port $redis_port --save '' --appendonly no --daemonize yes > /dev/null
for _ in $(seq 50); do redis-cli -p $redis_port PING > /dev/null 2>&1 && break; sleep 0.1; done
for round in $(seq "${FARM_ROUNDS:-3}"); do
  deploy/local-cluster start --fresh --dir $run --cluster keyspace$base --build-dir "$B" --nodes 3 \
    --services kv --resp-port $hosted --zk-port $zk -- --kv_buckets=65536 --threads=2 --log_sync=off \
    > /dev/null 2>&1 || { echo "cluster start failed ($B)"; exit 1; }
  measure $hosted "round $round hosted"
  deploy/local-cluster stop --dir $run > /dev/null 2>&1
  measure $redis_port "round $round redis"
done
redis-cli -p $redis_port shutdown nosave > /dev/null 2>&1
rm -f /tmp/keyspace-out.$base
