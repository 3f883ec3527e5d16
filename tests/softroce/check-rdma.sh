#!/usr/bin/env bash
# check-rdma.sh: owns the harness's own RDMA self-check; runs INSIDE the guest:
#
#   tests/softroce/guest-run [--devices N] -- tests/softroce/check-rdma.sh [A:B ...]
#
# For every pair A:B of device indices (default: every pair), with the server on rxeA
# and the client on rxeB: ib_read_lat, ib_write_lat, ib_atomic_lat (CMP_AND_SWAP and
# FETCH_AND_ADD) over RC with GID index $FARM_RXE_GID_INDEX, and an rdma_cm
# connection with rping (client bound to rxeB's address). Each test also checks the
# packets really crossed both veths (not a loopback inside one device).
# Prints one line per test with the typical latency; exits non-zero on any failure.
# CHECK_ITERS (default 1000) sets perftest's iteration count.
set -euo pipefail

[[ ${FARM_IN_SOFTROCE_GUEST:-} == 1 ]] || { echo "check-rdma.sh: run me through guest-run" >&2; exit 2; }
read -r -a devs <<<"$FARM_RXE_DEVICES"
read -r -a addrs <<<"$FARM_RXE_ADDRS"
gid=$FARM_RXE_GID_INDEX
iters=${CHECK_ITERS:-1000}

pairs=("$@")
if ((${#pairs[@]} == 0)); then
  for ((a = 0; a < ${#devs[@]}; a++)); do
    for ((b = a + 1; b < ${#devs[@]}; b++)); do pairs+=("$a:$b"); done
  done
fi

# shellcheck source=tests/softroce/guest-lib.sh
. "$(dirname "$0")/guest-lib.sh"

logdir=$(mktemp -d /tmp/check-rdma.XXXXXX)
failures=0
port=18515

tx_packets() { local v; read -r v <"/sys/class/net/$1/statistics/tx_packets"; echo "$v"; }
netdev_of() { local n; read -r n <"/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/$gid"; echo "$n"; }

# run_perftest NAME SERVER_DEV CLIENT_DEV SERVER_ADDR TOOL ARGS...
run_perftest() {
  local name=$1 sdev=$2 cdev=$3 saddr=$4 tool=$5
  shift 5
  port=$((port + 1))
  local slog=$logdir/$name.server clog=$logdir/$name.client
  local snet cnet s0 c0
  snet=$(netdev_of "$sdev") cnet=$(netdev_of "$cdev")
  s0=$(tx_packets "$snet") c0=$(tx_packets "$cnet")
  "$tool" -d "$sdev" -x "$gid" -n "$iters" -p "$port" "$@" >"$slog" 2>&1 &
  local spid=$!
  if ! wait_listen "$port"; then
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    echo "FAIL $name: server did not listen on port $port"; sed 's/^/    /' "$slog"
    failures=$((failures + 1))
    return
  fi
  local crc=0 src=0
  timeout 300 "$tool" -d "$cdev" -x "$gid" -n "$iters" -p "$port" "$@" "$saddr" >"$clog" 2>&1 || crc=$?
  timeout 30 tail --pid="$spid" -f /dev/null || kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || src=$?
  local line
  line=$(awk '$1 ~ /^[0-9]+$/ && NF >= 6 && $2 ~ /^[0-9]+$/ { print; exit }' "$clog")
  local sd=$(($(tx_packets "$snet") - s0)) cd=$(($(tx_packets "$cnet") - c0))
  if ((crc != 0 || src != 0)) || [[ -z $line ]] || ((sd < iters || cd < iters)); then
    echo "FAIL $name: client rc $crc, server rc $src, tx packets $cnet $cd / $snet $sd"
    echo "  client:"; sed 's/^/    /' "$clog"
    echo "  server:"; sed 's/^/    /' "$slog"
    failures=$((failures + 1))
    return
  fi
  # #bytes #iterations t_min t_max t_typical t_avg ...
  read -r -a f <<<"$line"
  printf 'PASS %-44s typical %8s us  avg %8s us  min %8s us  (tx pkts %s %d, %s %d)\n' \
    "$name" "${f[4]}" "${f[5]}" "${f[2]}" "$cnet" "$cd" "$snet" "$sd"
}

run_rping() {   # NAME SERVER_ADDR CLIENT_ADDR SERVER_DEV CLIENT_DEV
  local name=$1 saddr=$2 caddr=$3 sdev=$4 cdev=$5
  port=$((port + 1))
  local log=$logdir/$name snet cnet s0 c0
  snet=$(netdev_of "$sdev") cnet=$(netdev_of "$cdev")
  s0=$(tx_packets "$snet") c0=$(tx_packets "$cnet")
  timeout 120 rping -s -a "$saddr" -p "$port" -C 10 -S 64 >"$log.server" 2>&1 &
  local spid=$! try crc=1
  for ((try = 0; try < 40; try++)); do
    crc=0
    timeout 60 rping -c -a "$saddr" -I "$caddr" -p "$port" -C 10 -S 64 >"$log.client" 2>&1 || crc=$?
    ((crc == 0)) && break
    nap 0.1
  done
  local src=0
  wait "$spid" || src=$?
  local sd=$(($(tx_packets "$snet") - s0)) cd=$(($(tx_packets "$cnet") - c0))
  if ((crc != 0 || src != 0 || sd == 0 || cd == 0)); then
    echo "FAIL $name: client rc $crc, server rc $src, tx packets $cnet $cd / $snet $sd"
    sed 's/^/    /' "$log.client" "$log.server"
    failures=$((failures + 1))
    return
  fi
  printf 'PASS %-44s 10 rdma_cm ping-pongs (tx pkts %s %d, %s %d)\n' "$name" "$cnet" "$cd" "$snet" "$sd"
}

echo "devices: ${devs[*]} addrs: ${addrs[*]} gid index: $gid iterations: $iters"
for p in "${pairs[@]}"; do
  a=${p%%:*} b=${p##*:}
  sd=${devs[$a]} cd=${devs[$b]} sa=${addrs[$a]} ca=${addrs[$b]}
  run_perftest "ib_read_lat $cd->$sd" "$sd" "$cd" "$sa" ib_read_lat
  run_perftest "ib_write_lat $cd->$sd" "$sd" "$cd" "$sa" ib_write_lat
  run_perftest "ib_atomic_lat CMP_AND_SWAP $cd->$sd" "$sd" "$cd" "$sa" ib_atomic_lat -A CMP_AND_SWAP
  run_perftest "ib_atomic_lat FETCH_AND_ADD $cd->$sd" "$sd" "$cd" "$sa" ib_atomic_lat -A FETCH_AND_ADD
  run_rping "rping $ca->$sa" "$sa" "$ca" "$sd" "$cd"
done
rm -rf "$logdir"
if ((failures)); then
  echo "check-rdma: $failures FAILED"
  exit 1
fi
echo "check-rdma: all passed"
