#!/usr/bin/env bash
# Installs what the VM suite (tests/vm/run.sh) needs on a Debian 12 machine, as root:
#   - qemu-system-x86 from bookworm-backports, through a private apt configuration, so /etc/apt
#     is never touched (the machine's own sources list only bookworm, -updates and -security);
#   - into the cache dir (${MDTUNE_VM_CACHE:-<repo>/.cache/vm}), downloaded and unpacked, never
#     installed: two cloud kernels (Debian 12's 6.1 series and the newest one in
#     bookworm-backports, where every group_thread_cnt write suspends the array), mdadm and
#     busybox-static.
# Idempotent: a second run that finds everything in place only checks and returns.
# MDTUNE_VM_REFRESH=1 re-resolves the kernel versions and downloads again.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${MDTUNE_VM_CACHE:-$repo/.cache/vm}
apt_dir=$cache/apt
export DEBIAN_FRONTEND=noninteractive

log() { echo "setup-vm: $*" >&2; }
die() { echo "setup-vm: ERROR: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get install qemu-system-x86)"
command -v apt-get >/dev/null || die "apt-get not found: this script expects Debian 12 (bookworm)"

# Everything the suite reads from the cache; all present means nothing to do.
complete() {
  command -v qemu-system-x86_64 >/dev/null || return 1
  [ -s "$cache/kernels.list" ] || return 1
  local _series abi
  while read -r _series abi; do
    [ -f "$cache/kernel-$abi/boot/vmlinuz-$abi" ] || return 1
    [ -d "$cache/kernel-$abi/lib/modules/$abi/kernel/drivers/md" ] || return 1
  done <"$cache/kernels.list"
  [ -x "$cache/mdadm/sbin/mdadm" ] && [ -x "$cache/busybox/bin/busybox" ]
}

if [ "${MDTUNE_VM_REFRESH:-0}" != 1 ] && complete; then
  log "everything in place ($(qemu-system-x86_64 --version | head -n1); kernels: $(awk '{print $2}' "$cache/kernels.list" | paste -sd' '))"
  exit 0
fi

# --- private apt configuration: the machine's Debian sources plus bookworm-backports ----------
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial"
src=$apt_dir/sources.list.d/mdtune-vm.sources
{
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    # Same mirrors, keys and components as the machine; bookworm-backports added beside bookworm.
    sed -E 's/^(Suites:.*[[:space:]]bookworm)([[:space:]]|$)/\1 bookworm-backports\2/' \
      /etc/apt/sources.list.d/debian.sources
  else
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
  fi
} >"$src.new"
grep -q 'bookworm-backports' "$src.new" ||
  printf '\nTypes: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >>"$src.new"
mv "$src.new" "$src"

apt_opts=(
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
  -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=root"
)
# retry CMD...: up to 3 tries, for the network's sake.
retry() {
  local n
  for n in 1 2 3; do
    "$@" && return 0
    log "try $n failed: $*"
    sleep $((n * 5))
  done
  return 1
}
log "apt-get update (private lists in $apt_dir/lists)"
retry apt-get "${apt_opts[@]}" -qq update || die "apt-get update failed (sources: $src)"

# --- QEMU ---------------------------------------------------------------------------------------
# bookworm's own qemu 7.2 would remove a qemu-utils 10.x from backports; take backports' build.
if ! command -v qemu-system-x86_64 >/dev/null; then
  log "installing qemu-system-x86 from bookworm-backports"
  retry apt-get "${apt_opts[@]}" -y -qq install --no-install-recommends -t bookworm-backports qemu-system-x86 ||
    die "could not install qemu-system-x86 from bookworm-backports"
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 still missing after install"

# --- kernels, mdadm, busybox: download and unpack only ----------------------------------------
# The ABI package a linux-image-cloud-amd64 metapackage version depends on.
abi_of() {
  apt-cache "${apt_opts[@]}" depends "linux-image-cloud-amd64=$1" |
    sed -nE 's/^ *Depends: linux-image-([0-9][^ ]*-cloud-amd64)(-unsigned)?$/\1/p' | head -n1
}
meta_versions=$(apt-cache "${apt_opts[@]}" madison linux-image-cloud-amd64 | awk -F'|' '{gsub(/ /,"",$2); gsub(/^ +| +$/,"",$3); print $2" "$3}')
stable_ver=$(echo "$meta_versions" | awk '!/backports/ {print $1}' | sort -V | tail -n1)
bpo_ver=$(echo "$meta_versions" | awk '/bookworm-backports/ {print $1}' | sort -V | tail -n1)
[ -n "$stable_ver" ] || die "no linux-image-cloud-amd64 in bookworm (apt-cache madison found: $meta_versions)"
[ -n "$bpo_ver" ] || die "no linux-image-cloud-amd64 in bookworm-backports (apt-cache madison found: $meta_versions)"
stable_abi=$(abi_of "$stable_ver")
bpo_abi=$(abi_of "$bpo_ver")
[ -n "$stable_abi" ] && [ -n "$bpo_abi" ] || die "could not resolve kernel ABI ($stable_ver -> '$stable_abi', $bpo_ver -> '$bpo_abi')"
log "kernels: bookworm $stable_abi, bookworm-backports $bpo_abi"

debs=$cache/debs
mkdir -p "$debs"
# fetch PKG[=VERSION] DEST: download the .deb (unless already there) and unpack it into DEST.
fetch() {
  local pkg=$1 dest=$2 deb
  ( cd "$debs" && retry apt-get "${apt_opts[@]}" -qq download "$pkg" ) || die "apt-get download $pkg failed"
  deb=$(ls -t "$debs/${pkg%%=*}"_*.deb | head -n1)
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
  dpkg-deb -x "$deb" "$dest.tmp"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
}
for abi in "$stable_abi" "$bpo_abi"; do
  pkg=linux-image-$abi
  # Debian ships a signed image under the plain name; fall back to -unsigned where only that exists.
  apt-cache "${apt_opts[@]}" show "$pkg" >/dev/null 2>&1 || pkg=linux-image-$abi-unsigned
  log "downloading $pkg"
  fetch "$pkg" "$cache/kernel-$abi"
done
log "downloading mdadm, busybox-static"
fetch mdadm "$cache/mdadm"
fetch busybox-static "$cache/busybox"
# Older unpacked kernels stay until removed by hand; the suite boots only what kernels.list names.
printf 'bookworm %s\nbookworm-backports %s\n' "$stable_abi" "$bpo_abi" >"$cache/kernels.list"

complete || die "cache incomplete after download (see $cache)"
log "done: $(qemu-system-x86_64 --version | head -n1); cache $cache"
