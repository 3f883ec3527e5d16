# guest-lib.sh: shell helpers for scripts that run inside the Soft-RoCE guest (sourced
# by check-rdma.sh and tools/fabric_bench/softroce-compare; bash). Process start is
# slow under TCG, so these avoid forking.

# nap SECONDS: sleep without /bin/sleep (a read with timeout on a private fifo).
guest_nap_fifo=$(mktemp -u /tmp/guest-lib.XXXXXX)
mkfifo "$guest_nap_fifo"
exec {guest_nap_fd}<>"$guest_nap_fifo"
rm -f "$guest_nap_fifo"
nap() { read -r -t "$1" -u "$guest_nap_fd" _ || true; }

# wait_listen PORT: until something listens on TCP PORT (≤ 20 s); 1 if nothing does.
wait_listen() {
  local hex i local_addr st
  printf -v hex '%04X' "$1"
  for ((i = 0; i < 400; i++)); do
    while read -r _ local_addr _ st _; do
      [[ $local_addr == *:"$hex" && $st == 0A ]] && return 0
    done </proc/net/tcp
    nap 0.05
  done
  return 1
}
