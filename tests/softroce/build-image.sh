#!/usr/bin/env bash
# build-image.sh: owns the Soft-RoCE guest image cache.
#
#   build-image.sh CACHE_DIR HARNESS_HASH
#
# Makes sure CACHE_DIR/img-<kernel version>-<HARNESS_HASH>/ exists and is complete,
# building it from Debian packages when it does not, and prints its path on stdout.
# The image directory holds:
#   vmlinux     the generic Debian kernel (linux-image-amd64's dependency), its xz
#               payload decompressed so qemu boots it directly (PVH entry)
#   initrd      an uncompressed newc cpio: busybox-static, the kernel modules the guest
#               needs (with their dependencies), and guest-init.sh as /init
#   kver        the kernel version
#   complete    written last; a directory without it is never used
# Building is serialised with flock on CACHE_DIR/.lock and atomic (built in a temp
# directory under CACHE_DIR, then renamed). The downloaded .deb is kept in
# CACHE_DIR/debs/ so a harness change rebuilds without downloading again.
#
# Exit status: 0 ok; 77 skipped (the reason is printed as "softroce: skipped: ...");
# anything else is a build failure. Progress goes to stderr, one line per step.
set -euo pipefail

here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
readonly here
readonly cache=${1:?usage: build-image.sh CACHE_DIR HARNESS_HASH}
readonly hash=${2:?usage: build-image.sh CACHE_DIR HARNESS_HASH}

# Modules the guest loads at boot (in this order, with busybox modprobe -a; the list
# goes to the initramfs as /etc/softroce-modules). Their dependencies are added from
# the modules' own .modinfo "depends=" fields. crc32_generic: rxe's ICRC needs a
# crc32 shash, and the kernel's request_module could not find it on its own.
readonly modules=(virtio_pci 9pnet_virtio 9p overlay veth bridge crc32_generic
                  ib_core ib_uverbs ib_umad rdma_rxe rdma_cm rdma_ucm)

say() { echo "softroce: $*" >&2; }
skip() { say "skipped: $*"; exit 77; }
die() { say "error: $*"; exit 1; }

mkdir -p "$cache" 2>/dev/null || skip "cannot create cache directory $cache"

# --- which kernel ---------------------------------------------------------------
# Resolving with apt-cache takes ~1 s, so the answer is cached until the package
# lists change.
resolve_kernel() {
  local resolved=$cache/kernel-package name=""
  if [[ -s $resolved && $resolved -nt /var/lib/apt/lists && \
        ( ! -e /var/cache/apt/pkgcache.bin || $resolved -nt /var/cache/apt/pkgcache.bin ) ]]; then
    cat "$resolved"
    return 0
  fi
  local try
  for try in 1 2; do
    name=$(apt-cache depends linux-image-amd64 2>/dev/null |
           sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1) || true
    [[ -n $name ]] && break
    [[ $try == 1 && $EUID == 0 ]] || break
    say "package lists lack linux-image-amd64: running apt-get update"
    apt-get update -qq >/dev/null 2>&1 || true
  done
  [[ -n $name ]] || return 1
  echo "$name" > "$resolved.tmp.$$" && mv -f "$resolved.tmp.$$" "$resolved"
  echo "$name"
}

newest_cached_image() {
  local d best=""
  for d in "$cache"/img-*-"$hash"; do
    [[ -f $d/complete ]] || continue
    if [[ -z $best || $d -nt $best ]]; then best=$d; fi
  done
  [[ -n $best ]] && echo "$best"
}

# Falls back to an older complete image of this harness version, or skips.
fallback_or_skip() {
  local old
  if old=$(newest_cached_image); then
    say "$1; using the cached $(basename "$old")"
    echo "$old"
    exit 0
  fi
  skip "$1"
}

if ! pkg=$(resolve_kernel); then
  fallback_or_skip "cannot resolve the kernel package linux-image-amd64 depends on (apt-cache)"
fi
kver=${pkg#linux-image-}
img=$cache/img-$kver-$hash
if [[ -f $img/complete ]]; then
  echo "$img"
  exit 0
fi

# --- build (under the cache lock) -----------------------------------------------
exec {lockfd}>"$cache/.lock"
if ! flock -n "$lockfd"; then
  say "waiting for another build of the cache ($cache/.lock)"
  flock "$lockfd"
fi
if [[ -f $img/complete ]]; then   # built by someone else while we waited
  echo "$img"
  exit 0
fi

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

download() {   # PKG: into $work/dl, sets deb
  say "downloading $1"
  rm -rf "$work/dl"
  mkdir -p "$work/dl"
  local apt_opts=()
  [[ $EUID == 0 ]] && apt_opts=(-o APT::Sandbox::User=root)
  if ! (cd "$work/dl" && apt-get "${apt_opts[@]}" -qq download "$1") >"$work/dl.log" 2>&1; then
    sed 's/^/  /' "$work/dl.log" >&2
    return 1
  fi
  local debs=("$work/dl/${1}_"*_amd64.deb)
  deb=${debs[-1]}
  [[ -f $deb ]]
}

# A failed download is remembered for 10 minutes, so that on a machine without the
# archive a test suite does not retry (and wait for apt) in every test.
failmark=$cache/download-failed
download_failed() {
  echo "$1" >"$failmark"
  fallback_or_skip "$1 (not retried for 10 minutes; delete $failmark to retry now)"
}
if [[ -n $(find "$failmark" -mmin -10 2>/dev/null) ]]; then
  fallback_or_skip "$(<"$failmark") (at $(date -r "$failmark" +%T); retried 10 minutes later, or delete $failmark)"
fi

# The .deb: reuse a previous download.
mkdir -p "$cache/debs"
debs=("$cache/debs/${pkg}_"*_amd64.deb)
deb=""
[[ -f ${debs[-1]} ]] && deb=${debs[-1]}
if [[ -z $deb ]]; then
  if ! download "$pkg"; then
    # Stale package lists name a kernel the archive no longer has: update once.
    [[ $EUID == 0 ]] || download_failed "cannot download $pkg (apt-get download failed)"
    say "running apt-get update"
    apt-get update -qq >/dev/null 2>&1 || true
    rm -f "$cache/kernel-package"
    pkg2=$(resolve_kernel) || download_failed "cannot resolve linux-image-amd64 after apt-get update"
    if [[ $pkg2 != "$pkg" ]]; then
      pkg=$pkg2 kver=${pkg2#linux-image-} img=$cache/img-${pkg2#linux-image-}-$hash
      if [[ -f $img/complete ]]; then echo "$img"; exit 0; fi
    fi
    download "$pkg" || download_failed "cannot download $pkg (apt-get download failed)"
  fi
  rm -f "$failmark"
  # Older kernels' packages are not needed any more.
  rm -f "$cache/debs/"linux-image-*.deb
  mv -f "$deb" "$cache/debs/"
  deb=$cache/debs/$(basename "$deb")
fi

say "extracting $(basename "$deb")"
dpkg-deb -x "$deb" "$work/pkg" || die "dpkg-deb -x $deb failed"
moddir=$work/pkg/lib/modules/$kver
[[ -d $moddir ]] || die "$deb has no lib/modules/$kver"
vmlinuz=$work/pkg/boot/vmlinuz-$kver
[[ -f $vmlinuz ]] || die "$deb has no boot/vmlinuz-$kver"
grep -q '^CONFIG_RDMA_RXE=[ym]' "$work/pkg/boot/config-$kver" ||
  skip "$pkg has no Soft-RoCE driver (CONFIG_RDMA_RXE)"

say "decompressing vmlinuz-$kver to vmlinux"
mkdir -p "$work/img"
off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n1 | cut -d: -f1 || true)
[[ -n $off ]] || die "no xz payload in vmlinuz-$kver"
tail -c +$((off + 1)) "$vmlinuz" | xz -dc --single-stream > "$work/img/vmlinux" 2>/dev/null || true
[[ $(head -c4 "$work/img/vmlinux" | od -An -c | tr -d ' ') == 177ELF ]] ||
  die "decompressed vmlinux of $kver is not an ELF file"

# --- initramfs ------------------------------------------------------------------
# Module name -> path (names use '_' where file names may use '-').
declare -A modpath=()
while IFS= read -r f; do
  n=${f##*/}; n=${n%.ko*}; n=${n//-/_}
  modpath[$n]=$f
done < <(cd "$moddir" && find kernel -name '*.ko*')

# Drop a module's appended signature: checking ~30 signatures costs a noticeable part
# of the guest's boot under TCG, and an unsigned module only taints the kernel.
strip_signature() {
  local f=$1 sig_bytes size
  [[ $(tail -c 28 "$f") == "~Module signature appended~" ]] || return 0
  # struct module_signature (12 bytes) precedes the marker; sig_len is big-endian.
  read -r -a sig_bytes < <(tail -c 40 "$f" | head -c 12 | od -An -tu1)
  local siglen=$(( (sig_bytes[8] << 24) | (sig_bytes[9] << 16) | (sig_bytes[10] << 8) | sig_bytes[11] ))
  size=$(stat -c %s "$f")
  truncate -s $((size - 40 - siglen - sig_bytes[3] - sig_bytes[4])) "$f"
}

declare -A want=()
queue=("${modules[@]}")
while ((${#queue[@]})); do
  m=${queue[0]//-/_}; queue=("${queue[@]:1}")
  [[ -n ${want[$m]:-} ]] && continue
  if grep -qE "/${m}\.ko(\.[a-z]+)?$" "$moddir/modules.builtin" 2>/dev/null; then
    continue      # built into this kernel
  fi
  f=${modpath[$m]:-}
  [[ -n $f ]] || die "kernel $kver has no module $m"
  want[$m]=$f
  case $f in
    *.ko.xz)  xz -dc "$moddir/$f" > "$work/mod.ko" ;;
    *.ko.zst) die "zstd-compressed modules are not supported ($f)" ;;
    *.ko.gz)  gzip -dc "$moddir/$f" > "$work/mod.ko" ;;
    *)        cp "$moddir/$f" "$work/mod.ko" ;;
  esac
  strip_signature "$work/mod.ko"
  deps=$(tr '\0' '\n' < "$work/mod.ko" | sed -n 's/^depends=//p' | head -n1)
  IFS=, read -r -a more <<< "$deps"
  queue+=("${more[@]}")
  dest=$work/initrd/lib/modules/$kver/${f%.ko*}.ko
  mkdir -p "${dest%/*}"
  mv "$work/mod.ko" "$dest"
done
say "building initramfs (busybox + ${#want[@]} modules)"

root=$work/initrd
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,run,tmp,io,lower,rw,newroot}
cp /bin/busybox "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do
  [[ $a == busybox ]] || ln -sf busybox "$root/bin/$a"
done
ln -sf ../bin/busybox "$root/sbin/modprobe"   # the kernel's request_module helper
cp "$work/pkg/lib/modules/$kver/modules.builtin" "$root/lib/modules/$kver/" 2>/dev/null || true
"$root/bin/busybox" depmod -b "$root" "$kver" || die "depmod failed"
mkfifo "$root/etc/nap.fifo"          # lets the guest sleep with a shell builtin
install -m 0755 "$here/guest-init.sh" "$root/init"
echo "$kver" > "$root/etc/softroce-kver"
echo "${modules[*]}" > "$root/etc/softroce-modules"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$work/img/initrd" ||
  die "cpio failed"

echo "$kver" > "$work/img/kver"
date -u +%FT%TZ > "$work/img/complete"
rm -rf "$img"
mv "$work/img" "$img"
say "cache ready: $img"

# Old images of other harness versions: keep a day (a running guest may still be
# starting from them), then prune.
find "$cache" -maxdepth 1 -name 'img-*' ! -name "img-$kver-$hash" -mmin +1440 \
  -exec rm -rf {} + 2>/dev/null || true
# Under the lock, any other build directory is left over from a killed build.
find "$cache" -maxdepth 1 -name 'build.*' ! -path "$work" -exec rm -rf {} + 2>/dev/null || true
echo "$img"
