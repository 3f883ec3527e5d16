#!/bin/sh
# guest-init.sh: /init (PID 1) of the Soft-RoCE guest; runs under busybox sh from the
# initramfs that build-image.sh makes. Owns everything that happens inside the guest:
#   - mounts: the host's / read-only over 9p (tag "hostroot") with a tmpfs overlay on
#     top at /newroot; proc, sysfs, devtmpfs, devpts, /dev/shm, /tmp, /run inside it;
#     the host's per-run directory over 9p (tag "io") at /io and at /newroot/.softroce
#   - the network: N veths (10.77.0.1..N) on one bridge, policy routing so traffic
#     between local addresses really crosses the veths, one rxe device per veth
#   - running the job (/io/job.sh, written by guest-run) chrooted in /newroot with
#     its stdout/stderr appended to /io/stdout and /io/stderr, then its exit status
#     to /io/status, then powering off.
# Configuration comes from the kernel command line (unknown a=b parameters become
# init's environment): softroce_mode=run|probe, softroce_devices=N,
# softroce_ip=/path/to/host/ip, softroce_rdma=/path/to/host/rdma.
# Process start is slow under TCG, so this avoids forks: sysfs is read with `read`,
# sleeping is `read -t` on a fifo, and ip/rdma run once each in batch mode.

# busybox ash has `read -t` with fractions and ${var:offset:length}:
# shellcheck disable=SC3045,SC3057
PATH=/bin:/sbin
export PATH
mode=${softroce_mode:-run}
ndev=${softroce_devices:-2}
ipbin=${softroce_ip:-/usr/bin/ip}
rdmabin=${softroce_rdma:-/usr/bin/rdma}
unset softroce_mode softroce_devices softroce_ip softroce_rdma

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

nap() { read -r -t "$1" _ <>/etc/nap.fifo; }
up() { read -r uptime _ </proc/uptime; }
log() { up; echo "softroce-guest: [$uptime] $*"; }
off() {
  poweroff -f
  reboot -f
  echo o >/proc/sysrq-trigger
  while :; do nap 1; done
}
io_ok=
fail() {
  log "error: $*"
  [ -n "$io_ok" ] && echo "$*" >>/io/setup-error
  dmesg | tail -n 30
  off
}

if [ "$mode" = probe ]; then
  echo "SOFTROCE-PROBE-OK"
  off
fi

# --- modules and filesystems ----------------------------------------------------
log "init started"
read -r modules </etc/softroce-modules   # written by build-image.sh
# shellcheck disable=SC2086  # a list
modprobe -a $modules || fail "loading kernel modules failed ($modules)"
log "modules loaded"

o9p=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$o9p,cache=none" io /io || fail "cannot mount the io share"
io_ok=1
mount -t 9p -o "$o9p,cache=loose,ro" hostroot /lower || fail "cannot mount the host's root"
mount -t tmpfs -o mode=0755 rw /rw || fail "cannot mount tmpfs"
mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
  fail "cannot mount the overlay root"
r=/newroot
# A working directory under /tmp, /run or /dev/shm (guest-run names its top in
# /io/keep): hold on to the overlay's view of it before those become tmpfs.
keep=
[ -s /io/keep ] && read -r keep </io/keep
if [ -n "$keep" ]; then
  mkdir -p /keep && mount -o bind "$r$keep" /keep || fail "cannot keep $keep visible"
fi
# shellcheck disable=SC2015  # fail powers off, it does not return
mount -t proc proc $r/proc &&
  mount -t sysfs sysfs $r/sys &&
  mount -t devtmpfs devtmpfs $r/dev &&
  mkdir -p $r/dev/pts $r/dev/shm $r/.softroce &&
  mount -t devpts -o newinstance,ptmxmode=0666 devpts $r/dev/pts &&
  mount -t tmpfs -o mode=1777 shm $r/dev/shm &&
  mount -t tmpfs -o mode=1777 tmp $r/tmp &&
  mount -t tmpfs -o mode=0755 run $r/run &&
  mount -o bind /io $r/.softroce ||
  fail "cannot mount the guest's filesystems"
if [ -n "$keep" ]; then
  mkdir -p "$r$keep" && mount -o bind /keep "$r$keep" || fail "cannot mount $keep in the guest"
fi
# What udev would add to /dev: bash's process substitution needs /dev/fd.
ln -sf /proc/self/fd $r/dev/fd
ln -sf /proc/self/fd/0 $r/dev/stdin
ln -sf /proc/self/fd/1 $r/dev/stdout
ln -sf /proc/self/fd/2 $r/dev/stderr
log "filesystems mounted"

# --- network and rxe devices ----------------------------------------------------
# All devices live in one namespace, so the kernel would deliver traffic between
# their addresses through lo. Policy routing makes each rxe's packets (routed with
# oif = its veth) leave through its veth: rule "oif vethK -> table 100+K", the local
# table demoted below those rules, accept_local so a packet from a local source
# address is accepted, rp_filter off, and permanent neighbour entries (no ARP). Each
# veth also has an entry for its own address with its own MAC: rxe loops a packet
# back internally when the destination MAC is its own, so two processes sharing one
# device can connect too.
for f in all default; do
  echo 0 >/proc/sys/net/ipv4/conf/$f/rp_filter
  echo 1 >/proc/sys/net/ipv4/conf/$f/accept_local
done
echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6   # no extra GIDs, no DAD

hex=0123456789abcdef
hex2() { h2=${hex:$(($1 / 16)):1}${hex:$(($1 % 16)):1}; }

batch=$r/run/softroce-ip.batch
rbatch=$r/run/softroce-rdma.batch
{
  echo "link set lo up"
  echo "link add srbr0 type bridge"
  echo "link set srbr0 up"
  k=0
  while [ $k -lt "$ndev" ]; do
    hex2 $((k + 1))
    echo "link add veth$k address 02:00:0a:4d:00:$h2 type veth peer name srport$k"
    echo "link set srport$k master srbr0"
    echo "link set srport$k up"
    echo "link set veth$k up"
    echo "addr add 10.77.0.$((k + 1))/24 dev veth$k"
    k=$((k + 1))
  done
  k=0
  while [ $k -lt "$ndev" ]; do
    echo "route add 10.77.0.0/24 dev veth$k src 10.77.0.$((k + 1)) table $((100 + k))"
    echo "rule add pref $((100 + k)) oif veth$k lookup $((100 + k))"
    j=0
    while [ $j -lt "$ndev" ]; do
      hex2 $((j + 1))
      echo "neigh replace 10.77.0.$((j + 1)) lladdr 02:00:0a:4d:00:$h2 dev veth$k nud permanent"
      j=$((j + 1))
    done
    k=$((k + 1))
  done
  echo "rule add pref 1000 lookup local"
  echo "rule del pref 0 lookup local"
} >$batch
k=0
: >$rbatch
while [ $k -lt "$ndev" ]; do
  echo "link add rxe$k type rxe netdev veth$k" >>$rbatch
  k=$((k + 1))
done
chroot $r "$ipbin" -batch /run/softroce-ip.batch || fail "network setup failed ($ipbin -batch)"
log "network configured"
chroot $r "$rdmabin" -b /run/softroce-rdma.batch || fail "rxe setup failed ($rdmabin -batch)"

# Wait (≤ 10 s) until every port is ACTIVE and GID index 1 is its RoCE v2
# IPv4-mapped address on its veth.
devs=
addrs=
k=0
tries=0
while [ $k -lt "$ndev" ]; do
  p=/sys/class/infiniband/rxe$k/ports/1
  hex2 $((k + 1))
  want=0000:0000:0000:0000:0000:ffff:0a4d:00$h2
  state='' gid='' type='' ndv=''
  read -r state <$p/state 2>/dev/null
  read -r gid <$p/gids/1 2>/dev/null
  read -r type <$p/gid_attrs/types/1 2>/dev/null
  read -r ndv <$p/gid_attrs/ndevs/1 2>/dev/null
  if [ "$state" = "4: ACTIVE" ] && [ "$gid" = "$want" ] && [ "$type" = "RoCE v2" ] &&
     [ "$ndv" = "veth$k" ]; then
    devs="$devs${devs:+ }rxe$k"
    addrs="$addrs${addrs:+ }10.77.0.$((k + 1))"
    k=$((k + 1))
    continue
  fi
  tries=$((tries + 1))
  if [ $tries -gt 500 ]; then
    ls /sys/class/infiniband/
    for f in "$p"/gids/*; do read -r g <"$f"; echo "  $f $g"; done
    fail "rxe$k is not ready: state '$state', gid[1] '$gid' type '$type' ndev '$ndv' (want '$want', RoCE v2, veth$k)"
  fi
  nap 0.02
done
log "rxe devices ready: $devs"

{
  echo "export FARM_RXE_DEVICES='$devs'"
  echo "export FARM_RXE_ADDRS='$addrs'"
  echo "export FARM_RXE_GID_INDEX=1"
  echo "export FARM_IN_SOFTROCE_GUEST=1"
} >/io/rxe.env

# --- the job --------------------------------------------------------------------
ulimit -l unlimited   # registered memory; root could exceed it anyway
up
echo "$uptime" >/io/ready
chroot $r /bin/sh /.softroce/job.sh </dev/null >>/io/stdout 2>>/io/stderr
rc=$?
echo "$rc" >/io/status
off
