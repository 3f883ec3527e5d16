#!/usr/bin/env bash
# LinkBench on the graph of a local cluster, two ways, next to MariaDB, in one linkbench
# invocation: starts a fresh `deploy/local-cluster` (ZooKeeper and --nodes farm_node
# processes serving the graph on ports GRAPH_PORT..), then runs, in this order,
#   farm        application threads of this process joined as a compute-only member
#               (--farm_threads worker threads; one GraphClient each)
#   graph-resp  the nodes' graph service over RESP (one connection per loader and
#               requester, round-robin over the nodes; LINK.LOAD in the load)
#   mariadb     LinkBench's MySQL store on a private mariadbd
# and prints linkbench's report and its comparison (ratios against the last backend),
# then stops the cluster. farm and graph-resp share the cluster's graph, each in an id
# space of its own (tools/linkbench/id_space.h): each loads and runs on a fresh graph.
#
#   tools/linkbench/compare.sh [build dir] [linkbench flags...]
#   tools/linkbench/compare.sh build --nodes=10000 --requesters=10 --requests=5000
# Environment: FARM_NODES (3), FARM_ZK_PORT (2396), FARM_GRAPH_PORT (17480),
# FARM_NODE_FLAGS (extra farm_node flags, e.g. "--threads=2 --log_sync=off"; the id
# index is sized from --nodes: --graph_index_buckets here overrides it),
# LINKBENCH_BACKENDS (farm,graph-resp,mariadb).
set -euo pipefail
BUILD=${1:-build}
[ $# -gt 0 ] && shift
NODES=${FARM_NODES:-3}
ZK_PORT=${FARM_ZK_PORT:-2396}
GRAPH_PORT=${FARM_GRAPH_PORT:-17480}
BACKENDS=${LINKBENCH_BACKENDS:-farm,graph-resp,mariadb}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$BUILD/tools/linkbench/linkbench" ] || { echo "compare.sh: no $BUILD/tools/linkbench/linkbench (make linkbench)" >&2; exit 2; }
[ -x "$BUILD/farm/node/farm_node" ] || { echo "compare.sh: no $BUILD/farm/node/farm_node (make farm_node_bin)" >&2; exit 2; }
DIR=$(mktemp -d /tmp/farm-linkbench-compare-XXXXXX)
trap '"$HERE/deploy/local-cluster" stop --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT

# The graph's id index: each farm backend (farm, graph-resp) loads --nodes ids of its
# own; past its buckets (4 ids each) the index chains, and inserts into a nearly full
# one write many buckets. Size it for half full, at least farm_node's default.
GRAPH_NODES=$(printf '%s\n' "$@" | sed -n 's/^--nodes=\([0-9]*\)$/\1/p' | tail -1)
GRAPH_NODES=${GRAPH_NODES:-10000}
INDEX_BUCKETS=$(( (2 * GRAPH_NODES * 2 / 4 + NODES - 1) / NODES ))
[ "$INDEX_BUCKETS" -lt 65536 ] && INDEX_BUCKETS=65536
ADDRS=""
for ((k = 0; k < NODES; k++)); do ADDRS="$ADDRS${ADDRS:+,}127.0.0.1:$((GRAPH_PORT + k))"; done
# shellcheck disable=SC2086
FARM_BUILD_DIR=$BUILD "$HERE/deploy/local-cluster" start --fresh --nodes "$NODES" --dir "$DIR" --services graph \
  --graph-port "$GRAPH_PORT" --zk-port "$ZK_PORT" -- --graph_index_buckets="$INDEX_BUCKETS" ${FARM_NODE_FLAGS:-} >/dev/null
echo "compare.sh: cluster of $NODES nodes (graph on $ADDRS, $INDEX_BUCKETS id index buckets each), ZooKeeper 127.0.0.1:$ZK_PORT"
status=0
"$BUILD/tools/linkbench/linkbench" --backend="$BACKENDS" --zookeeper="127.0.0.1:$ZK_PORT" \
  --secret_file="$DIR/secret" --graph_resp="$ADDRS" --progress=false "$@" || status=$?
# The nodes' logs after the run: records written and the syncs they took.
if [ -x "$BUILD/tools/farm_admin/farm_admin" ]; then
  echo "compare.sh: the nodes' logs"
  "$BUILD/tools/farm_admin/farm_admin" --zookeeper="127.0.0.1:$ZK_PORT" storage | cut -c1-50 || true
fi
"$HERE/deploy/local-cluster" stop --dir "$DIR" >/dev/null
if [ "$status" -ne 0 ] && [ -d "$DIR/logs" ]; then
  # The run failed: keep the node processes' logs (not their data) for a look.
  KEPT=$(mktemp -d /tmp/farm-linkbench-failed-XXXXXX)
  cp -r "$DIR/logs" "$KEPT/"
  echo "compare.sh: the run failed; the nodes' logs are in $KEPT/logs" >&2
fi
exit $status
