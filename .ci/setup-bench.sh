#!/usr/bin/env bash
# Installs what the benchmarks and tests/integration/no_writes_when_converged.rs need: strace (the test
# traces the binary's opens), file (bench/build-release.sh), the aarch64 targets, rust-src and
# cargo-zigbuild for the release builds. Idempotent; run by .ci/setup.sh.
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
for t in aarch64-unknown-linux-musl aarch64-unknown-linux-gnu; do
  rustup target add "$t" >/dev/null 2>&1 ||
    echo "setup-bench: rustup could not add $t; bench/build-release.sh skips it" >&2
done
# The static release binaries rebuild std for size with the stable toolchain (RUSTC_BOOTSTRAP=1,
# packaging/targets.sh static_build): its rust-src (std's sources) and the x86_64 musl target.
# Nightly is not needed here (only the fuzz suite uses it, .ci/setup-fuzz.sh).
rustup component list --installed | grep -q '^rust-src' || rustup component add rust-src >/dev/null
rustup target list --installed | grep -qx x86_64-unknown-linux-musl ||
  rustup target add x86_64-unknown-linux-musl >/dev/null
# cargo-zigbuild links the glibc-2.17 release builds (bench/build-release.sh); from PyPI, into
# the project's venv (made by .ci/setup-python.sh).
venv=${MDTUNE_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv}
if ! [ -x "$venv/bin/cargo-zigbuild" ]; then
  "$venv/bin/pip" install --quiet cargo-zigbuild ziglang
fi
echo "setup-bench: strace $(strace -V | head -1 | awk '{print $NF}'), file, rust-src, rust targets: $(rustup target list --installed | paste -sd ' ')"
