# Sourced by the benchmark scripts. With FARM_AUTOGROUP=0 (or 1), sets the kernel's
# session autogrouping (/proc/sys/kernel/sched_autogroup_enabled, needs root) for the
# run and restores it on exit; unset, leaves it alone.
#
# Why it matters here: with autogrouping on (Debian's default) the scheduler shares the
# CPU equally between sessions, not threads. deploy/local-cluster starts every farm_node
# in a session of its own, so on one small machine each node process gets an equal slice
# whatever its work, and a client or compute-only member gets one slice too — while an
# in-process cluster's threads all share one session. Comparisons of hosted against
# in-process figures on one machine are only like for like with it off.
farm_autogroup_file=/proc/sys/kernel/sched_autogroup_enabled
farm_autogroup_before=$(cat "$farm_autogroup_file" 2>/dev/null || echo "")
farm_autogroup_restore() {
  if [ -n "${FARM_AUTOGROUP:-}" ] && [ -n "$farm_autogroup_before" ]; then
    echo "$farm_autogroup_before" >"$farm_autogroup_file" 2>/dev/null || true
  fi
}
if [ -n "${FARM_AUTOGROUP:-}" ]; then
  if ! echo "$FARM_AUTOGROUP" >"$farm_autogroup_file" 2>/dev/null; then
    echo "FARM_AUTOGROUP=$FARM_AUTOGROUP: cannot write $farm_autogroup_file (needs root)" >&2
    exit 1
  fi
fi
echo "scheduler autogrouping: $(cat "$farm_autogroup_file" 2>/dev/null || echo unknown)"
