#!/usr/bin/env bash
# The partition test of issue 17, item 5: a 4-node kv cluster started by
# `deploy/local-cluster --netns` (each node a "host" in its own network namespace), one
# node K cut off at the bridge (`ip link set nK down` in the switch namespace) and healed.
#
#   no split brain          every epoch has one configuration (manager, members) in
#                           ZooKeeper; at most one serving node claims to be the manager;
#                           no node serves in an epoch that does not list it
#   no stale read           no GET, on any node, returns a value older than one a SET
#                           acknowledged before the GET was sent; K returns no data at all
#                           from 2.5 s after the cut until the heal
#   no commit accepted by K a SET K acknowledged is visible on the healthy nodes; a SET it
#                           refused with an error never is; K acknowledges none from 2.5 s
#                           after the cut until the heal, and a SET sent to it then that got
#                           no reply never commits (one sent earlier, within its lease, may:
#                           a warning)
#   healthy nodes serve     writes through them work again (no failure, no stall: over
#                           twice the slowest write before the cut, at least 300 ms)
#                           within 15 s of the cut, before the heal; every
#                           key reads back, through two healthy nodes, as its last
#                           acknowledged value (or a later attempt)
#
# A request that hangs (no reply within its bound) is not a failure in itself: a node cut
# off may wait on peers it cannot reach; the summary counts them. Besides FAIL lines the
# checks print WARN lines (ambiguous outcomes, and K rejoining on its own after the heal)
# and the measured times.
#
# K is reached while it is cut off by running redis-cli inside K's namespace, against
# K's own address (local traffic, which the cut does not touch). Two phases, each on a
# fresh cluster: K is not the configuration manager, then K is the manager.
#
# Usage: partition_test.sh BUILD_DIR [FARM_ADMIN]     (root; ctest -L netns)
#   BUILD_DIR holds farm/node/farm_node; FARM_ADMIN defaults to
#   BUILD_DIR/tools/farm_admin/farm_admin.
# Environment:
#   FARM_SKIP_NETNS_TESTS=1   without root or network namespaces, skip (exit 77) instead
#                             of failing
#   FARM_PARTITION_PHASES     "worker manager" (default), or one of them
#   FARM_PARTITION_KEEP=1     keep the run directory also when the test passes
# Exit: 0 passed, 1 failed, 77 skipped.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:?usage: partition_test.sh BUILD_DIR [FARM_ADMIN]}
build=$(cd "$build" && pwd)
admin_bin=${2:-$build/tools/farm_admin/farm_admin}
cluster_script=$repo/deploy/local-cluster

# Tunables (seconds unless stated).
readonly nodes=4 nkeys=300 nhot=48 nwriters=2 kgetters=3
readonly session_ms=1000
readonly lease_bound_us=2500000      # K returns no data later than this after the cut
readonly recover_bound_us=15000000   # healthy writes work again within this after the cut
readonly precut_s=2 min_cut_s=5 max_cut_s=16 postheal_s=6
readonly resp_port=6380

say() { echo "partition_test: $*"; }
die() { echo "partition_test: FAIL: $*" >&2; exit 1; }

# now_us VAR: VAR = microseconds since the epoch (no fork).
now_us() { local now_us_t=$EPOCHREALTIME; printf -v "$1" '%s' "${now_us_t/./}"; }

# ---------------------------------------------------------------------------------------
# Preconditions. Missing namespaces (not root, or the kernel refuses) fail unless
# FARM_SKIP_NETNS_TESTS=1; a missing program or binary always fails.

netns_unavailable=""
if [ "$(id -u)" -ne 0 ]; then
  netns_unavailable="not root (deploy/local-cluster --netns creates network namespaces)"
elif ! command -v ip >/dev/null; then
  netns_unavailable="the 'ip' command is missing (Debian package iproute2)"
else
  probe=farm-probe-$$
  if ! err=$(ip netns add "$probe" 2>&1); then
    netns_unavailable="cannot create a network namespace: $err"
  else
    ip netns del "$probe" 2>/dev/null || true
  fi
fi
if [ -n "$netns_unavailable" ]; then
  if [ "${FARM_SKIP_NETNS_TESTS:-0}" = 1 ]; then
    say "SKIPPED: $netns_unavailable (FARM_SKIP_NETNS_TESTS=1)"
    exit 77
  fi
  die "$netns_unavailable. This test needs root and network namespaces; set FARM_SKIP_NETNS_TESTS=1 to skip it where they cannot be had"
fi
command -v redis-cli >/dev/null || die "redis-cli is not installed (Debian package redis-tools; deploy/install-deps.sh)"
command -v ss >/dev/null || die "ss is not installed (Debian package iproute2)"
[ -x "$build/farm/node/farm_node" ] || die "no farm_node at $build/farm/node/farm_node (build target farm_node_bin)"
[ -x "$admin_bin" ] || die "no farm_admin at $admin_bin (build target farm_admin)"
[ -x "$cluster_script" ] || die "no $cluster_script"

# ---------------------------------------------------------------------------------------
# The cluster's names: unique per run, a /24 and a ZooKeeper port nobody uses.

run_dir=$(mktemp -d /tmp/farm-partition.XXXXXX)
cluster=pt$$x$RANDOM
prefix=farm-$cluster
sw=$prefix-sw
subnet=""
for _ in $(seq 1 50); do
  cand=10.$((200 + RANDOM % 50)).$((RANDOM % 256))
  if ! ip -4 route show to match "$cand.1" | grep -vq '^default' &&
    ! ip -4 -o addr show | grep -q " inet $cand\."; then
    subnet=$cand
    break
  fi
done
[ -n "$subnet" ] || die "found no unused 10.2xx.y.0/24 subnet"
zk_port=""
for _ in $(seq 1 50); do
  cand=$((20000 + RANDOM % 25000))
  if [ -z "$(ss -Hltn "sport = :$cand")" ]; then zk_port=$cand; break; fi
done
[ -n "$zk_port" ] || die "found no free port for ZooKeeper"
zk=$subnet.254:$zk_port

failures=0
warnings=0
cluster_up=0
cut_node=""
bg_pids=()
t_cut=0 t_heal=0  # set by now_us in run_phase

stop_background() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bg_pids=()
}

heal() {
  if [ -n "$cut_node" ]; then
    ip -n "$sw" link set "n$cut_node" up 2>/dev/null || true
    cut_node=""
  fi
}

stop_cluster() {
  heal
  if [ "$cluster_up" = 1 ]; then
    "$cluster_script" stop --dir "$run_dir" >"$run_dir/stop.out" 2>&1 || cat "$run_dir/stop.out" >&2
    cluster_up=0
  fi
}

print_logs() {
  local f
  for f in "$run_dir"/logs/node-*.log; do
    [ -f "$f" ] || continue
    echo "----- last 25 lines of $f -----"
    tail -n 25 "$f"
  done
}

on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  stop_background
  if [ "$cluster_up" = 1 ] && [ $rc -ne 0 ]; then print_logs; fi
  stop_cluster
  if [ $rc -eq 0 ] && [ "${FARM_PARTITION_KEEP:-0}" != 1 ]; then
    rm -rf "$run_dir"
  else
    rm -rf "$run_dir"/node-* "$run_dir/zookeeper/data"  # the nodes' data: hundreds of MB
    say "run directory kept: $run_dir (phase-*/ hold the histories, phase-*/logs the node logs)"
  fi
  exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------
# RESP through a node's namespace: redis-cli against the node's own address.

# resp NODE TIMEOUT ARGS...: sets CLS (OK VAL NIL ERR TIMEOUT CONN) and MSG (no spaces).
resp() {
  local n=$1 to=$2 out rc=0
  shift 2
  if [ "${in_ns:-}" = "$n" ]; then  # a loop already inside the node's namespace
    out=$(timeout -k 1 "$to" redis-cli -h "$subnet.$n" -p $((resp_port + n - 1)) "$@" 2>&1) || rc=$?
  else
    out=$(timeout -k 1 "$to" ip netns exec "$prefix-n$n" \
      redis-cli -h "$subnet.$n" -p $((resp_port + n - 1)) "$@" 2>&1) || rc=$?
  fi
  out=${out//$'\n'/ }
  out=${out//$'\r'/}
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    CLS=TIMEOUT MSG=-
  elif [[ $out == "Could not connect"* || $out == *"Connection refused"* ]]; then
    CLS=CONN MSG=${out// /_}
  elif [ -z "$out" ]; then
    CLS=NIL MSG=-
  elif [ "$out" = OK ]; then
    CLS=OK MSG=-
  elif [[ $out =~ ^[a-z0-9:-]+$ ]]; then  # every value this test writes
    CLS=VAL MSG=$out
  else
    CLS=ERR MSG=${out// /_}
  fi
}

admin() { "$admin_bin" --zookeeper="$zk" --cluster="$cluster" --timeout_ms=400 "$@"; }

# ---------------------------------------------------------------------------------------
# The background loops. Each appends one line per request to its own file:
#   W writer node start_us end_us key value CLS MSG     a writer's SET
#   R who node start_us end_us key CLS MSG              a GET (MSG: the value)
#   KS node start_us end_us key value CLS MSG           a SET sent to K
#   C time_us epoch manager members                    ZooKeeper's configuration
#   S time_us sample node epoch serve manager          a node's admin stats

# writer W NODE: sequential SETs of its hot keys (key i with (i-1) % nwriters == W), each
# a new value w<W>-<attempt>; after the heal, SETs of fresh keys (p<phase>:ph<W>:<n>).
writer() {
  local w=$1 node=$2 out=$dir/writer-$1 a=0 key s e
  local -a mine=()
  local i
  for ((i = 1; i <= nhot; i++)); do
    if [ $(((i - 1) % nwriters)) -eq "$w" ]; then mine+=("p$phase:k:$i"); fi
  done
  while [ ! -e "$dir/stop" ]; do
    a=$((a + 1))
    if [ -e "$dir/healed" ]; then key=p$phase:ph$w:$a; else key=${mine[$((a % ${#mine[@]}))]}; fi
    now_us s
    resp "$node" 1 SET "$key" "w$w-$a"
    now_us e
    echo "W $w $node $s $e $key w$w-$a $CLS $MSG" >>"$out"
    sleep 0.05
  done
}

# slowwriter NODE: SETs of fresh keys (p<phase>:slow:<n>) with a 12 s bound, one after
# the other: how long a SET caught by the cut takes to be answered.
slowwriter() {
  local node=$1 out=$dir/writer-slow a=0 s e
  while [ ! -e "$dir/stop" ]; do
    a=$((a + 1))
    now_us s
    resp "$node" 12 SET "p$phase:slow:$a" "ws-$a"
    now_us e
    echo "W s $node $s $e p$phase:slow:$a ws-$a $CLS $MSG" >>"$out"
    sleep 0.1
  done
}

# getter WHO NODE STEP OFFSET TIMEOUT: GETs of the hot keys on NODE. A key whose GET
# timed out is left alone for 5 s (a node cut off hangs on remote reads), and every
# other GET goes to a key that was once refused with an error (one the node answers for
# itself), so those are polled often.
getter() {
  local who=$1 node=$2 step=$3 off=$4 to=$5 out=$dir/getter-$1 i key s e turn=0
  local -A skip_until=() known=()
  local -a local_keys=()
  i=$off
  while [ ! -e "$dir/stop" ]; do
    turn=$((turn + 1))
    if [ ${#local_keys[@]} -gt 0 ] && [ $((turn % 2)) -eq 0 ]; then
      key=${local_keys[$((turn / 2 % ${#local_keys[@]}))]}
    else
      key=p$phase:k:$((i % nhot + 1))
      i=$((i + step))
    fi
    now_us s
    if [ "${skip_until[$key]:-0}" -gt "$s" ]; then sleep 0.005; continue; fi
    resp "$node" "$to" GET "$key"
    now_us e
    echo "R $who $node $s $e $key $CLS $MSG" >>"$out"
    if [ "$CLS" = TIMEOUT ]; then skip_until[$key]=$((e + 5000000)); fi
    if [ "$CLS" = ERR ] && [ -z "${known[$key]:-}" ]; then known[$key]=1; local_keys+=("$key"); fi
    sleep 0.04
  done
}

# ksetter NODE: SETs on K, each of a fresh key with a unique value.
ksetter() {
  local node=$1 out=$dir/ksetter n=0 s e
  while [ ! -e "$dir/stop" ]; do
    n=$((n + 1))
    now_us s
    resp "$node" 1 SET "p$phase:ks:$n" "ks$phase-$n"
    now_us e
    echo "KS $node $s $e p$phase:ks:$n ks$phase-$n $CLS $MSG" >>"$out"
    sleep 0.05
  done
}

# monitor: ZooKeeper's configuration and every member's admin stats, ~4 times a second.
monitor() {
  local out=$dir/monitor sample=0 t cfg
  while [ ! -e "$dir/stop" ]; do
    sample=$((sample + 1))
    now_us t
    if cfg=$(admin config 2>/dev/null); then
      awk -v t="$t" '
        /^cluster / { for (i = 1; i < NF; i++) { if ($i == "epoch") e = $(i + 1); if ($i == "manager") m = $(i + 1) } }
        $2 == "member" || $2 == "failed" || $2 == "compute" { mem = mem (mem == "" ? "" : ",") $1 }
        END { if (e != "") print "C", t, e, m, (mem == "" ? "-" : mem) }' <<<"$cfg" >>"$out"
    fi
    now_us t
    admin stats 2>/dev/null | awk -v t="$t" -v s="$sample" '
      $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { print "S", t, s, $1, $2, $3, ($5 == "yes" ? "yes" : "no") }' >>"$out" || true
    sleep 0.2
  done
}

# loop_in NODE FUNCTION ARGS...: runs one of the loops above as a single process inside
# NODE's namespace (its requests then cost two execs each, not three: the machine has
# few cores, and ZooKeeper sessions of 1 s must not starve).
loop_in() {
  local node=$1
  shift
  env dir="$dir" phase="$phase" nhot=$nhot nwriters=$nwriters prefix="$prefix" subnet="$subnet" \
    resp_port=$resp_port in_ns="$node" ip netns exec "$prefix-n$node" bash -c \
    "set -uo pipefail; $(declare -f now_us resp writer getter ksetter slowwriter); \"\$@\"" _ "$@"
}

# The regular writers' last bad SET that ended after the cut, and their newest OK one:
# "last_bad_end newest_ok_end" (0 when none). Bad: failed, or stalled as
# partition_check.awk counts it (longer than twice the slowest before the cut, at least
# 300 ms), so the heal waits for writes that work at their usual speed.
writer_progress() {
  cat "$dir"/writer-[0-9]* 2>/dev/null | sort -n -k4 | awk -v cut="$t_cut" '
    $1 != "W" { next }
    $5 < cut { if ($8 == "OK" && $5 - $4 > pre) pre = $5 - $4; next }
    $4 < cut { next }
    { stall = 2 * pre > 300000 ? 2 * pre : 300000
      if ($8 == "OK" && $5 - $4 <= stall) { if ($5 > ok) ok = $5 } else if ($5 > bad) bad = $5 }
    END { printf "%.0f %.0f\n", bad, ok }'
}

# log_us LINE: the microseconds of a node log line's "YYYY-MM-DD HH:MM:SS.ffffff" stamp.
log_us() {
  local d t
  read -r d t _ <<<"$1"
  date -d "$d $t" +%s%6N
}

# first_log_us FILE REGEX AFTER_US: the stamp of the first matching line at or after
# AFTER_US, or nothing.
first_log_us() {
  local line us
  while IFS= read -r line; do
    us=$(log_us "$line") || continue
    if [ "$us" -ge "$3" ]; then echo "$us"; return 0; fi
  done < <(grep -E "$2" "$1" || true)
}

ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f ms", (b - a) / 1000 }'; }

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# ---------------------------------------------------------------------------------------
# One phase: a fresh cluster, preload, cut K, heal, check.

run_phase() {
  phase=$1
  dir=$run_dir/phase-$phase
  mkdir -p "$dir"
  say "=== phase '$phase': fresh cluster $cluster, subnet $subnet.0/24, ZooKeeper $zk"
  if ! "$cluster_script" start --fresh --netns --nodes $nodes --services kv --dir "$run_dir" \
    --cluster "$cluster" --subnet "$subnet" --zk-port "$zk_port" --session-timeout $session_ms \
    --resp-port $resp_port --build-dir "$build" --wait 60 \
    -- --replication=3 --threads=1 --region_mb=32 >"$dir/start.out" 2>&1; then
    cat "$dir/start.out"
    die "deploy/local-cluster start failed (phase $phase)"
  fi
  cluster_up=1

  local cfg manager members
  cfg=$(admin config) || die "farm_admin config failed: $cfg"
  manager=$(awk '/^cluster /{ for (i = 1; i < NF; i++) if ($i == "manager") print $(i + 1) }' <<<"$cfg")
  members=$(awk '$2 == "member" { printf "%s ", $1 }' <<<"$cfg")
  [ "$(wc -w <<<"$members")" -eq $nodes ] || die "expected $nodes members, farm_admin config shows:
$cfg"
  local victim="" m
  if [ "$phase" = manager ]; then
    victim=$manager
  else
    for m in $members; do [ "$m" = "$manager" ] || victim=$m; done
  fi
  local -a healthy=()
  for m in $members; do [ "$m" = "$victim" ] || healthy+=("$m"); done
  say "manager is node $manager; victim K = node $victim; healthy nodes ${healthy[*]}"

  # Preload through the first healthy node, read back through two others.
  local i
  for ((i = 1; i <= nkeys; i++)); do echo "SET p$phase:k:$i init-$i"; done |
    timeout 30 ip netns exec "$prefix-n${healthy[0]}" \
      redis-cli -h "$subnet.${healthy[0]}" -p $((resp_port + healthy[0] - 1)) >"$dir/preload.out" 2>&1 ||
    die "preloading $nkeys keys through node ${healthy[0]} failed: $(sort "$dir/preload.out" | uniq -c | head -3)"
  [ "$(grep -c '^OK$' "$dir/preload.out")" -eq $nkeys ] ||
    die "preloading: not every SET answered OK: $(sort "$dir/preload.out" | uniq -c | head -5)"
  for m in "${healthy[1]}" "$victim"; do
    resp "$m" 5 GET "p$phase:k:$nkeys"
    { [ "$CLS" = VAL ] && [ "$MSG" = "init-$nkeys" ]; } || die "node $m reads p$phase:k:$nkeys as $CLS $MSG, expected init-$nkeys"
  done

  admin placement >"$dir/placement.start" 2>&1 || true

  # The loops.
  rm -f "$dir/stop" "$dir/healed"
  monitor & bg_pids+=($!)
  local w
  for ((w = 0; w < nwriters; w++)); do
    m=${healthy[$((w % ${#healthy[@]}))]}
    loop_in "$m" writer "$w" "$m" & bg_pids+=($!)
  done
  for ((i = 0; i < kgetters; i++)); do
    loop_in "$victim" getter "k$i" "$victim" $kgetters "$i" 0.25 & bg_pids+=($!)
  done
  loop_in "${healthy[1]}" getter h0 "${healthy[1]}" 1 0 2 & bg_pids+=($!)
  loop_in "${healthy[2]}" getter h1 "${healthy[2]}" 1 $((nhot / 2)) 2 & bg_pids+=($!)
  loop_in "$victim" ksetter "$victim" & bg_pids+=($!)
  loop_in "${healthy[2]}" slowwriter "${healthy[2]}" &
  local slow_pid=$!
  sleep $precut_s

  # Cut K off: its port on the bridge goes down (K's own address stays reachable from
  # inside its namespace).
  ip -n "$sw" link set "n$victim" down
  cut_node=$victim
  now_us t_cut
  say "node $victim cut off (ip -n $sw link set n$victim down)"

  local t bad ok
  while :; do
    sleep 0.25
    now_us t
    read -r bad ok <<<"$(writer_progress)"
    if [ $((t - t_cut)) -ge $((min_cut_s * 1000000)) ] && [ "$ok" -gt "$bad" ] &&
      [ $((t - bad)) -ge 1500000 ]; then break; fi
    if [ $((t - t_cut)) -ge $((max_cut_s * 1000000)) ]; then
      say "healthy writes still failing ${max_cut_s}s after the cut; healing anyway"
      break
    fi
  done
  heal
  now_us t_heal
  touch "$dir/healed"
  say "node $victim healed after $(ms "$t_cut" "$t_heal")"
  sleep $postheal_s
  touch "$dir/stop"
  now_us t
  # Every loop ends after its current request (at most 3 s); the slow writer at once.
  kill "$slow_pid" 2>/dev/null || true
  wait "$slow_pid" 2>/dev/null || true
  local p
  for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bg_pids=()

  # Read everything back through two healthy nodes.
  local node keys="$dir/final.keys"
  {
    for ((i = 1; i <= nkeys; i++)); do echo "p$phase:k:$i"; done
    awk '$1 == "KS" { print $5 }' "$dir/ksetter" 2>/dev/null || true
    cat "$dir"/writer-* | awk '$6 ~ /:(ph|slow)/ { print $6 }'
  } >"$keys"
  for node in "${healthy[0]}" "${healthy[1]}"; do
    sed 's/^/GET /' "$keys" |
      timeout 60 ip netns exec "$prefix-n$node" \
        redis-cli -h "$subnet.$node" -p $((resp_port + node - 1)) >"$dir/final.$node.raw" 2>&1 ||
      fail "reading every key back through node $node failed (or took over 60 s): $(tail -n 2 "$dir/final.$node.raw")"
    paste -d ' ' "$keys" "$dir/final.$node.raw" |
      awk -v n="$node" '{ k = $1; $1 = ""; sub(/^ /, ""); v = $0;
        if (v == "") print "F", n, k, "NIL", "-";
        else if (v ~ /^[a-z0-9:-]+$/) print "F", n, k, "VAL", v;
        else { gsub(/ /, "_", v); print "F", n, k, "ERR", v } }' >>"$dir/final"
  done
  admin config >"$dir/config.end" 2>&1 || true
  admin placement >"$dir/placement.end" 2>&1 || true
  admin stats >"$dir/stats.end" 2>&1 || true
  mkdir -p "$dir/logs"
  cp "$run_dir"/logs/*.log "$dir/logs/" 2>/dev/null || true

  # Times from the logs.
  local klog=$run_dir/logs/node-$victim.log
  local t_lost t_pub t_exp t_rejoin t_kserve
  t_lost=$(first_log_us "$klog" 'lost the ZooKeeper connection' "$t_cut")
  t_exp=$(first_log_us "$klog" 'session expired' "$t_cut")
  t_rejoin=$(first_log_us "$klog" 'rejoined after session expiry' "$t_cut")
  t_kserve=$(first_log_us "$klog" '[^t] serving in epoch' "$t_heal")
  t_pub=""
  local f line us list
  for f in "$run_dir"/logs/node-*.log; do
    while IFS= read -r line; do
      us=$(log_us "$line")
      [ "$us" -ge "$t_cut" ] || continue
      list=${line#*published epoch }
      list=${list#*: nodes }
      list=${list%% *}
      [[ ",$list," == *",$victim,"* ]] && continue
      if [ -z "$t_pub" ] || [ "$us" -lt "$t_pub" ]; then t_pub=$us; fi
      break
    done < <(grep 'published epoch' "$f" || true)
  done

  # The checks.
  cat "$dir"/writer-* "$dir"/getter-* "$dir/ksetter" "$dir/monitor" "$dir/final" 2>/dev/null |
    awk -v K="$victim" -v cut="$t_cut" -v healt="$t_heal" -v lease="$lease_bound_us" \
      -v recover="$recover_bound_us" -v nkeys="$nkeys" -v nhot="$nhot" -v ph="$phase" \
      -v h0="${healthy[0]}" -v h1="${healthy[1]}" -f "$here/partition_check.awk" >"$dir/verdict" || true
  grep -v '^TIME \|^TOTAL ' "$dir/verdict" || true

  say "--- times (phase $phase, victim node $victim, session timeout ${session_ms} ms)"
  [ -z "$t_lost" ] || say "cut -> K's membership thread logs the connection lost: $(ms "$t_cut" "$t_lost") (the gate is fenced from the ZooKeeper client's callback, often earlier)"
  [ -z "$t_pub" ] || say "cut -> a configuration without K is published:         $(ms "$t_cut" "$t_pub")"
  awk '/^TIME / { sub(/^TIME /, ""); print "partition_test: " $0 }' "$dir/verdict" || true
  [ -z "$t_exp" ] || say "heal -> K hears its session expired:                   $(ms "$t_heal" "$t_exp")"
  if [ -n "$t_rejoin" ]; then
    say "heal -> K re-registers with a new session:             $(ms "$t_heal" "$t_rejoin")"
    echo "WARN: node $victim rejoined on its own after the heal (log: $(grep -m1 'rejoined after session expiry' "$klog" | cut -c1-140))"
    warnings=$((warnings + 1))
  fi
  if [ -n "$t_kserve" ]; then
    say "heal -> K serves again:                                $(ms "$t_heal" "$t_kserve") ($(grep '[^t] serving in epoch' "$klog" | tail -n 1 | cut -c28-120))"
  fi
  local nf nw
  read -r nf nw < <(awk '$1 == "TOTAL" { print $2, $3 }' "$dir/verdict")
  if [ -z "${nf:-}" ]; then nf=1 nw=0; echo "FAIL: the checks did not complete (partition_check.awk)"; fi
  failures=$((failures + nf))
  warnings=$((warnings + nw))
  if [ "$nf" -gt 0 ]; then
    say "phase $phase: $nf failure(s); node logs follow"
    print_logs
  fi
  stop_cluster
}

phases=${FARM_PARTITION_PHASES:-worker manager}
for p in $phases; do
  case $p in worker | manager) ;; *) die "FARM_PARTITION_PHASES: unknown phase '$p' (worker, manager)" ;; esac
  run_phase "$p"
done

if [ "$failures" -gt 0 ]; then
  say "FAILED: $failures failure(s), $warnings warning(s)"
  exit 1
fi
say "PASSED ($warnings warning(s))"
