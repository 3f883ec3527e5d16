#!/usr/bin/env bash
# YCSB against a cluster of node processes, next to the same store in one process and
# the baselines, in one invocation per workload: for each round and each of YCSB-C and
# YCSB-B (farm preset) it starts a fresh `deploy/local-cluster` (3 farm_node processes
# serving kv, ZooKeeper) and runs, in this order,
#   resp      over RESP against every node's port (--threads client threads; its load
#             inserts with SET NX, so it goes first, on the empty table)
#   cluster   application threads inside the cluster (a compute-only member, 3 threads;
#             its load overwrites the same records)
#   farm      the same shape in one process: 3 nodes holding the table and a compute-only
#             node running the 3 application threads (the hosting cost is cluster / farm)
#   redis, memcached
# The cluster's table is sized like the in-process one (90% of its slots for the
# records). Prints each invocation's comparison; stops the cluster after each.
# FARM_AUTOGROUP=0 turns the kernel's session autogrouping off for the run (root;
# tools/common/autogroup.sh says why that matters for cluster / farm).
#
#   tools/ycsb/cluster_compare.sh [build dir] [records] [seconds] [rounds]
set -euo pipefail
BUILD=${1:-build}
RECORDS=${2:-100000}
SECONDS_PER_RUN=${3:-3}
ROUNDS=${4:-2}
ZK_PORT=${FARM_ZK_PORT:-2395}
RESP_PORT=${FARM_RESP_PORT:-17450}
DIR=$(mktemp -d /tmp/farm-cluster-compare-XXXXXX)
HERE=$(cd "$(dirname "$0")/../.." && pwd)
source "$HERE/tools/common/autogroup.sh"
trap '"$HERE/deploy/local-cluster" stop --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$DIR"; farm_autogroup_restore' EXIT
# Buckets per node as the in-process runner sizes them: records / 0.9 over 4 slots, 3 nodes.
BUCKETS=$(( RECORDS * 10 / 9 / 12 + 1 ))
ADDRS="127.0.0.1:$RESP_PORT,127.0.0.1:$((RESP_PORT + 1)),127.0.0.1:$((RESP_PORT + 2))"
for round in $(seq 1 "$ROUNDS"); do
  for workload in c b; do
    echo "== round $round, YCSB-${workload^^} (farm preset, zipfian)"
    FARM_BUILD_DIR=$BUILD "$HERE/deploy/local-cluster" start --fresh --nodes 3 --dir "$DIR" --services kv \
      --resp-port "$RESP_PORT" --zk-port "$ZK_PORT" -- --kv_buckets="$BUCKETS" --threads=2 >/dev/null
    "$BUILD/tools/ycsb/ycsb" --backend=resp,cluster,farm,redis,memcached --workload="$workload" \
      --preset=farm --records="$RECORDS" --seconds="$SECONDS_PER_RUN" --threads=3 \
      --farm_nodes=3 --farm_compute_nodes=1 --farm_threads=3 --zookeeper="127.0.0.1:$ZK_PORT" --secret_file="$DIR/secret" \
      --resp_addresses="$ADDRS" 2>/dev/null | sed -n '/^backend /,$p' || echo "(a backend failed)"
    "$HERE/deploy/local-cluster" stop --dir "$DIR" >/dev/null
  done
done
