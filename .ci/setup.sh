#!/usr/bin/env bash
# Installs what the test suite needs: Rust targets, the Python venv (Ansible, Salt),
# QEMU and kernel packages for the VM suite. Every step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add clippy rustfmt >/dev/null 2>&1 || true
rustup target add x86_64-unknown-linux-musl
.ci/setup-python.sh
for s in .ci/setup-*.sh; do
  [ "$s" = .ci/setup-python.sh ] && continue
  "$s"
done
