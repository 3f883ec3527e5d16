#!/usr/bin/env bash
# Every binary's --help lists its own flags (Abseil's default listed none for a main.cc).
# Usage: help_test.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: help_test.sh BUILD_DIR}
# binary (path under the build directory) and one flag it defines
checks=(
  farm/node/farm_node:--node_id
  tools/kv_server/kv_server:--password
  tools/kv_bench/kv_bench:--churn_h
  tools/log_bench/log_bench:--log_sync
  tools/ycsb/ycsb:--farm_nodes
  tools/tx_bench/tx_bench:--replication
  tools/one_sided_bench/one_sided_bench:--backends
  tools/alloc_bench/alloc_bench:--heaps
  tools/fabric_bench/fabric_bench:--serve
  tools/farm_admin/farm_admin:--zookeeper
  tools/cluster_demo/cluster_demo:--node_id
  tools/failover_bench/failover_bench:--victim
)
failed=0
for check in "${checks[@]}"; do
  bin=$build/${check%%:*}
  flag=${check#*:}
  out=$("$bin" --help 2>&1)
  if ! grep -q -- "^ *$flag" <<<"$out" || grep -q "No flags matched" <<<"$out"; then
    echo "FAILED: $(basename "$bin") --help does not list $flag:"
    sed 's/^/  /' <<<"$out" | head -5
    failed=$((failed + 1))
  fi
done
echo "$(( ${#checks[@]} - failed )) passed, $failed failed"
((failed == 0))
