#!/usr/bin/env bash
# Installs what the VM suite (tests/vm/run.sh) needs on a Debian 12 machine, as root:
#   - qemu-system-x86 from bookworm-backports, through a private apt configuration, so /etc/apt
#     is never touched (the machine's own sources list only bookworm, -updates and -security;
#     the private copy adds bookworm-backports, bullseye and trixie-backports);
#   - into the cache dir (${MDTUNE_VM_CACHE:-<repo>/.cache/vm}), downloaded and unpacked, never
#     installed: four cloud kernels, the oldest and newest Debian's archive offers and today's two
#     (bullseye's 5.10, bookworm's 6.1, bookworm-backports' 6.12 where every group_thread_cnt
#     write suspends the array, and the newest in trixie-backports, 7.x, whose image is split into
#     linux-binary-* and linux-modules-* in the merged-/usr layout); mdadm and busybox-static;
#     and the guest's userland for the udev and dm scenarios: udev (systemd-udevd, udevadm and
#     their rules), dmsetup, strace, with the libraries they load (libkmod2, libdevmapper,
#     libunwind8), so the host needs none of them installed.
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
# A kernel dir holds either the classic layout (boot/vmlinuz-ABI, lib/modules/ABI) or the merged-/usr
# one of trixie and later (usr/lib/modules/ABI/vmlinuz and /config).
complete() {
  command -v qemu-system-x86_64 >/dev/null || return 1
  [ -s "$cache/kernels.list" ] || return 1
  [ "$(wc -l <"$cache/kernels.list")" -eq 4 ] || return 1
  local _series abi k
  while read -r _series abi; do
    k=$cache/kernel-$abi
    [ -f "$k/boot/vmlinuz-$abi" ] || [ -f "$k/usr/lib/modules/$abi/vmlinuz" ] || return 1
    [ -d "$k/lib/modules/$abi/kernel/drivers/md" ] || [ -d "$k/usr/lib/modules/$abi/kernel/drivers/md" ] || return 1
  done <"$cache/kernels.list"
  [ -x "$cache/mdadm/sbin/mdadm" ] && [ -x "$cache/busybox/bin/busybox" ] || return 1
  [ -x "$cache/userland/bin/udevadm" ] && [ -x "$cache/userland/sbin/dmsetup" ] && [ -x "$cache/userland/usr/bin/strace" ]
}

if [ "${MDTUNE_VM_REFRESH:-0}" != 1 ] && complete; then
  log "everything in place ($(qemu-system-x86_64 --version | head -n1); kernels: $(awk '{print $2}' "$cache/kernels.list" | paste -sd' '))"
  exit 0
fi

# --- private apt configuration: the machine's Debian sources plus three suites -----------------
# bookworm-backports (QEMU, the 6.12 kernel), bullseye (5.10) and trixie-backports (7.x). Both
# bullseye's and trixie-backports' packages are only downloaded: apt's default priorities keep
# bookworm's versions as candidates for everything else (bullseye's are older, trixie-backports is
# NotAutomatic).
extra_suites="bookworm-backports bullseye trixie-backports"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial"
src=$apt_dir/sources.list.d/mdtune-vm.sources
{
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    # Same mirrors, keys and components as the machine; the extra suites added beside bookworm.
    sed -E "s/^(Suites:.*[[:space:]]bookworm)([[:space:]]|\$)/\\1 $extra_suites\\2/" \
      /etc/apt/sources.list.d/debian.sources
  else
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$extra_suites"
  fi
} >"$src.new"
grep -q 'trixie-backports' "$src.new" ||
  printf '\nTypes: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$extra_suites" >>"$src.new"
mv "$src.new" "$src"

apt_opts=(
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
  -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=root" -o "DPkg::Lock::Timeout=300"
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

# --- kernels: download and unpack only -----------------------------------------------------------
# The ABI package a linux-image-cloud-amd64 metapackage version depends on.
abi_of() {
  apt-cache "${apt_opts[@]}" depends "linux-image-cloud-amd64=$1" |
    sed -nE 's/^ *Depends: linux-image-([0-9][^ ]*-cloud-amd64)(-unsigned)?$/\1/p' | head -n1
}
meta_versions=$(apt-cache "${apt_opts[@]}" madison linux-image-cloud-amd64 |
  awk -F'|' '{gsub(/ /,"",$2); n=split($3,w," "); sub(/\/.*/,"",w[2]); print $2" "w[2]}')
# newest SUITE: the newest linux-image-cloud-amd64 version in exactly that suite.
newest() { echo "$meta_versions" | awk -v s="$1" '$2 == s {print $1}' | sort -V | tail -n1; }

debs=$cache/debs
mkdir -p "$debs"
# unpack DEST PKG[=VERSION]...: download the .debs (unless already there), unpack them all into DEST.
unpack() {
  local dest=$1 pkg deb
  shift
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
  for pkg in "$@"; do
    ( cd "$debs" && retry apt-get "${apt_opts[@]}" -qq download "$pkg" ) || die "apt-get download $pkg failed"
    # shellcheck disable=SC2012 # ls -t: the newest download; .deb file names have no blanks
    deb=$(ls -t "$debs/${pkg%%=*}"_*.deb | head -n1)
    dpkg-deb -x "$deb" "$dest.tmp"
  done
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
}
exists() { apt-cache "${apt_opts[@]}" show "$1" >/dev/null 2>&1; }

list=
for series in bullseye bookworm bookworm-backports trixie-backports; do
  ver=$(newest "$series")
  [ -n "$ver" ] || die "no linux-image-cloud-amd64 in $series (apt-cache madison found: $meta_versions)"
  abi=$(abi_of "$ver")
  [ -n "$abi" ] || die "could not resolve the kernel ABI of linux-image-cloud-amd64=$ver ($series)"
  pkgs=()
  # Debian ships a signed image under the plain name; fall back to -unsigned where only that exists.
  if exists "linux-image-$abi"; then pkgs+=("linux-image-$abi"); else pkgs+=("linux-image-$abi-unsigned"); fi
  # From trixie on the image package is a shell: vmlinuz in linux-binary-*, modules in
  # linux-modules-*, config and modules.builtin in linux-base-*.
  for split in linux-binary linux-modules linux-base; do
    if exists "$split-$abi"; then pkgs+=("$split-$abi"); fi
  done
  log "kernel $series: $abi (${pkgs[*]})"
  unpack "$cache/kernel-$abi" "${pkgs[@]}"
  list+="$series $abi"$'\n'
done

# --- the guest's userland -----------------------------------------------------------------------
log "downloading mdadm, busybox-static, udev, dmsetup, strace and their libraries"
unpack "$cache/mdadm" mdadm
unpack "$cache/busybox" busybox-static
# udev: systemd-udevd is a link to udevadm; the rules under lib/udev/rules.d. Libraries that a
# minimal Debian 12 may lack are unpacked beside them; the initramfs builder looks here first.
unpack "$cache/userland" udev libudev1 libkmod2 dmsetup libdevmapper1.02.1 strace libunwind8
# Older unpacked kernels stay until removed by hand; the suite boots only what kernels.list names.
printf '%s' "$list" >"$cache/kernels.list"

complete || die "cache incomplete after download (see $cache)"
log "done: $(qemu-system-x86_64 --version | head -n1); cache $cache"
