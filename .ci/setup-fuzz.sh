#!/usr/bin/env bash
# Installs what the reliability suites need: a nightly toolchain and cargo-fuzz for the fuzz suite
# (tests/fuzz/run.sh), and strace for tests/integration/security.rs (setpriv, mknod and mkfifo come with
# util-linux and coreutils). Idempotent: each step is skipped when its tool is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
if ! [ -x /usr/bin/strace ]; then
  apt-get update -qq && apt-get install -y -qq strace
fi
