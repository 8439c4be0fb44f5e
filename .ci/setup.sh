#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian 12 machine (as root): the Rust musl target,
# the Python venv (ansible-core, Salt), QEMU and kernel packages for the VM suite, nightly and
# cargo-fuzz for the fuzz suite, strace. Every step is idempotent. A setup step that fails is
# reported and the others still run: the suite that needs the missing piece then fails and names it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
failed=()
step() {
  echo "=== setup: $*"
  "$@" || { echo "=== setup FAILED: $*"; failed+=("$*"); }
}
step rustup component add clippy rustfmt
step rustup target add x86_64-unknown-linux-musl
step .ci/setup-python.sh
for s in .ci/setup-*.sh; do
  [ "$s" = .ci/setup-python.sh ] && continue
  step "$s"
done
[ ${#failed[@]} -eq 0 ] || echo "setup: these steps failed: ${failed[*]}"
exit 0
