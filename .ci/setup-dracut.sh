#!/usr/bin/env bash
# Downloads what the VM suite's dracut boot (tests/vm/dracut.sh) needs on a Debian 12 machine,
# unpacked into ${MDTUNE_VM_CACHE:-<repo>/.cache/vm}/dracut/root, never installed: Debian's
# dracut-core (dracut 059, the dracut SLES and openSUSE build their initrds with, in Debian's
# packaging) and kmod with libkmod2 (depmod, modprobe: dracut resolves kernel modules with them).
# The rest of what dracut collects (udev, mdadm) comes from .ci/setup-vm.sh's cache, bash,
# coreutils and util-linux from this machine.
# Idempotent: a cache with dracut and kmod unpacked only checks and returns.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${MDTUNE_VM_CACHE:-$repo/.cache/vm}/dracut
log() { echo "setup-dracut: $*" >&2; }
if [ -x "$cache/root/usr/bin/dracut" ] && [ -x "$cache/root/usr/bin/kmod" ]; then
  log "in place: $(cat "$cache/versions" 2>/dev/null)"; exit 0
fi
command -v apt-get >/dev/null || { log "ERROR: apt-get not found: this script expects Debian 12"; exit 1; }
rm -rf "$cache/debs" "$cache/root.tmp" && mkdir -p "$cache/debs" "$cache/root.tmp"
for p in dracut-core kmod libkmod2; do
  (cd "$cache/debs" && apt-get download -q "$p" >/dev/null 2>&1) ||
    { apt-get update -q >/dev/null && (cd "$cache/debs" && apt-get download -q "$p" >/dev/null); } ||
    { log "ERROR: apt-get download $p failed"; exit 1; }
done
for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/root.tmp"; done
rm -rf "$cache/root" && mv "$cache/root.tmp" "$cache/root"
(cd "$cache/debs" && ls) >"$cache/versions"
log "unpacked: $(paste -sd' ' "$cache/versions")"
