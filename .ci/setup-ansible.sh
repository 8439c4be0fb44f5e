#!/usr/bin/env bash
# Installs what the Ansible suite (tests/ansible) needs beyond the main venv (.ci/setup-python.sh),
# on a Debian 12 machine, as root. Idempotent: what is in place is only checked.
#   - a venv for each newer ansible-core the collection is checked with (ansible-test sanity and
#     units, tests/ansible/sanity.sh): 2.20 on Python 3.12 and 2.21 on Python 3.13 (each needs
#     that Python or later), from pyenv's interpreters (/root/.pyenv/versions/3.12.*, 3.13.*; set
#     MDTUNE_PYTHON312 / MDTUNE_PYTHON313 to others), as <venv>-ansible2.20 and <venv>-ansible2.21
#     next to ${MDTUNE_VENV:-<repo>/.venv};
#   - qemu-user-static's aarch64 interpreter registered with the kernel (binfmt_misc, the rule
#     Debian's package ships in /usr/lib/binfmt.d/qemu-aarch64.conf), so that the collection's
#     aarch64 build runs on this x86_64 machine as it would on an aarch64 host: the suite checks
#     that mdtune.mdraid.mdtune picks it on a host that reports aarch64.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
log() { echo "setup-ansible: $*" >&2; }
die() { echo "setup-ansible: ERROR: $*" >&2; exit 1; }

# newest_python MINOR ENV: the interpreter for Python 3.MINOR (ENV names one, else pyenv's newest).
newest_python() {
  local given=${!2:-} p
  if [ -n "$given" ]; then echo "$given"; return; fi
  p=$(find /root/.pyenv/versions -maxdepth 1 -name "3.$1.*" 2>/dev/null | sort -V | tail -n1)
  [ -n "$p" ] && [ -x "$p/bin/python3" ] && { echo "$p/bin/python3"; return; }
  command -v "python3.$1" || true
}

for line in "2.20 12 MDTUNE_PYTHON312" "2.21 13 MDTUNE_PYTHON313"; do
  read -r core minor env <<<"$line"
  dir=$venv-ansible$core
  if [ -x "$dir/bin/ansible-test" ] && "$dir/bin/ansible" --version 2>/dev/null | grep -q "core $core\."; then
    log "$dir has $("$dir/bin/ansible" --version | head -n1)"
    continue
  fi
  py=$(newest_python "$minor" "$env")
  [ -n "$py" ] || die "no Python 3.$minor for ansible-core $core (pyenv install 3.$minor, or set $env)"
  rm -rf "$dir"
  "$py" -m venv "$dir"
  "$dir/bin/pip" install --quiet --upgrade pip
  "$dir/bin/pip" install --quiet "ansible-core>=$core,<${core%.*}.$((${core#*.} + 1))" ||
    die "pip install ansible-core $core failed"
  log "$dir: $("$dir/bin/ansible" --version | head -n1) on $("$dir/bin/python3" --version)"
done

# binfmt_misc: the aarch64 interpreter (qemu-user-static comes from .ci/setup-packaging.sh).
[ "$(id -u)" -eq 0 ] || die "must run as root (binfmt_misc)"
conf=/usr/lib/binfmt.d/qemu-aarch64.conf
if [ ! -f "$conf" ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get -y -qq install --no-install-recommends qemu-user-static >/dev/null ||
    { apt-get -qq update && apt-get -y -qq install --no-install-recommends qemu-user-static >/dev/null; }; } ||
    die "apt-get install qemu-user-static failed"
fi
[ -f "$conf" ] || die "no $conf (qemu-user-static)"
bm=/proc/sys/fs/binfmt_misc
[ -e "$bm/register" ] || mount -t binfmt_misc binfmt_misc "$bm" || die "cannot mount binfmt_misc on $bm"
if [ ! -e "$bm/qemu-aarch64" ]; then
  grep -v '^#' "$conf" | head -n1 >"$bm/register" || die "cannot register $conf with binfmt_misc"
fi
grep -q '^enabled' "$bm/qemu-aarch64" || die "binfmt_misc's qemu-aarch64 entry is not enabled"
log "binfmt_misc: aarch64 ELF runs under $(sed -n 's/^interpreter //p' "$bm/qemu-aarch64")"
