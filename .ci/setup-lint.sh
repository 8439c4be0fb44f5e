#!/usr/bin/env bash
# Installs what the lint suite (tests/lint/run.sh) needs beyond the Rust toolchain: shellcheck
# from Debian (apt-get, as root), the i686 and armv7 Rust targets (a build check), and ruff,
# pinned, into the project's venv
# ${MDTUNE_VENV:-<repo>/.venv} (made by .ci/setup-python.sh; created here if it is not there yet).
# Idempotent: what is already installed is only checked. Run by .ci/setup.sh.
set -euo pipefail
ruff_version=0.17.5
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
log() { echo "setup-lint: $*" >&2; }
die() { echo "setup-lint: ERROR: $*" >&2; exit 1; }

if ! command -v shellcheck >/dev/null; then
  { [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; } ||
    die "shellcheck is missing: install it as root with apt-get install shellcheck"
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine's package lists may be empty or old: update once if the install fails.
  install=(apt-get install -y -qq -o DPkg::Lock::Timeout=300 shellcheck)
  "${install[@]}" >/dev/null 2>&1 || { apt-get update -qq && "${install[@]}" >/dev/null; }
fi
log "$(shellcheck --version | sed -n 's/^version: /shellcheck /p')"

[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
if [ "$("$venv/bin/ruff" --version 2>/dev/null)" != "ruff $ruff_version" ]; then
  "$venv/bin/pip" install --quiet "ruff==$ruff_version"
fi
log "$("$venv/bin/ruff" --version) in $venv"

# The targets step of the lint suite checks that the crate builds for 32-bit Linux too.
for t in i686-unknown-linux-gnu armv7-unknown-linux-gnueabihf; do
  rustup target list --installed | grep -qx "$t" || rustup target add "$t" >/dev/null ||
    die "rustup target add $t failed"
done
log "rust targets for the lint's build check: i686, armv7"
