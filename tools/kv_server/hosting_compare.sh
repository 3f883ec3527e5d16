#!/bin/bash
# The kv store over RESP, hosted by 3 farm_node processes (deploy/local-cluster --services kv)
# vs in one process (kv_server --nodes=3) vs redis-server: redis-benchmark -t get,set with and
# without -P 16, three rounds alternated; then YCSB C and B over RESP against all three nodes
# next to Redis and memcached. Ports 17400-17402, 17500-17502, 17999, ZooKeeper 2188.
# FARM_AUTOGROUP=0 turns the kernel's session autogrouping off for the run (root;
# tools/common/autogroup.sh says why that matters for hosted / in-process).
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source tools/common/autogroup.sh
trap farm_autogroup_restore EXIT
B=${FARM_BUILD_DIR:-build}
rb() { redis-benchmark -p $1 -t get,set -n 40000 -c 50 -q $2 2>/dev/null | tr '\r' '\n' | grep -E "^(GET|SET): [0-9.]+ requests" | sed 's/ requests per second.*//' | tr '\n' ' '; }
redis-server --port 17999 --save '' --appendonly no --daemonize yes > /dev/null
deploy/local-cluster start --fresh --dir /tmp/lc-bench --nodes 3 --services kv --resp-port 17400 --zk-port 2188 -- --kv_buckets=65536 --threads=2 > /dev/null 2>&1
$B/tools/kv_server/kv_server --nodes=3 --port=17500 --buckets=65536 --seconds=600 --dir=/tmp/kvs-bench > /tmp/kvs-bench.log 2>&1 &
kvs=$!
for _ in $(seq 100); do redis-cli -p 17500 PING >/dev/null 2>&1 && break; sleep 0.1; done
for round in 1 2 3; do
  for P in "" "-P 16"; do
    echo "round $round ${P:-no pipelining}: hosted(farm_node) $(rb 17400 "$P") | in-process(kv_server) $(rb 17500 "$P") | redis $(rb 17999 "$P")"
  done
done
for w in c b; do
  $B/tools/ycsb/ycsb --backend=resp,redis,memcached --resp_addresses=127.0.0.1:17400,127.0.0.1:17401,127.0.0.1:17402 \
    --workload=$w --preset=farm --records=50000 --seconds=3 --threads=6 \
    --properties=insertstart=$([ $w = c ] && echo 0 || echo 1000000) 2>&1 | sed -n '/^backend/,$p'
done
kill $kvs; wait $kvs 2>/dev/null
redis-cli -p 17999 shutdown nosave >/dev/null 2>&1
deploy/local-cluster stop --dir /tmp/lc-bench > /dev/null 2>&1
