#!/usr/bin/env bash
# Installs what the benchmarks and tests/no_writes_when_converged.rs need: strace (the test
# traces the binary's opens), file (bench/build-release.sh), and the aarch64 musl target for the
# release build (linked with the toolchain's rust-lld). Idempotent; run by .ci/setup.sh.
set -euo pipefail
missing=()
command -v strace >/dev/null || missing+=(strace)
command -v file >/dev/null || missing+=(file)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup-bench: please install ${missing[*]} (apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi
rustup target add aarch64-unknown-linux-musl >/dev/null 2>&1 ||
  echo "setup-bench: rustup could not add aarch64-unknown-linux-musl; bench/build-release.sh builds x86_64 only" >&2
echo "setup-bench: strace $(strace -V | head -1 | awk '{print $NF}'), file, rust targets: $(rustup target list --installed | paste -sd ' ')"
