#!/usr/bin/env bash
# Builds the release binaries and checks what each one needs and how big it is:
#   x86_64-unknown-linux-gnu.2.17   glibc 2.17 or later (RHEL 7+, SLES 12+), via cargo-zigbuild;
#                                   the release binary to ship: must be <= 600 KiB
#   aarch64-unknown-linux-gnu.2.17  the same for aarch64 (rustup target add aarch64-unknown-linux-gnu)
#   x86_64-unknown-linux-musl       fully static, needs no libc at all (any x86_64 Linux)
#   aarch64-unknown-linux-musl      fully static aarch64, linked with the toolchain's rust-lld
# Fails if a glibc build needs a symbol version newer than GLIBC_2.17 or is over 600 KiB, or if a
# musl build is not statically linked. cargo-zigbuild and zig come from PyPI
# (`pip install cargo-zigbuild ziglang`; .ci/setup-bench.sh puts them in the venv).
# Binaries: target/<triple>/release/mdtune.
set -euo pipefail
cd "$(dirname "$0")/.."
goal_kib=600
export PATH=${MDTUNE_VENV:-$PWD/.venv}/bin:$PATH
dir=${CARGO_TARGET_DIR:-target}
installed=$(rustup target list --installed 2>/dev/null)
status=0

check() { # TRIPLE KIND
  local t=$1 kind=$2 bin=$dir/${1%.2.17}/release/mdtune
  local bytes
  bytes=$(stat -c %s "$bin")
  echo "$t: $bin $bytes bytes ($((bytes / 1024)) KiB)"
  echo "  file: $(file -b "$bin")"
  case $kind in
    gnu)
      local newest
      newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
      echo "  needs: $newest or later"
      [ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -1)" = GLIBC_2.17 ] ||
        { echo "  FAIL: needs a glibc newer than 2.17"; status=1; }
      if [ $((bytes / 1024)) -le $goal_kib ]; then echo "  size goal (<= $goal_kib KiB): met"
      else echo "  FAIL: size goal (<= $goal_kib KiB) not met"; status=1; fi
      ;;
    musl)
      if file -b "$bin" | grep -Eq 'static-pie linked|statically linked'; then
        echo "  static: yes (needs no libc; any Linux kernel 3.2 or later)"
      else
        echo "  FAIL: not statically linked"; status=1
      fi
      ;;
  esac
  case $t in
    aarch64-*)
      # Only the static build can run under qemu-aarch64 here (no aarch64 glibc to load).
      if command -v qemu-aarch64 >/dev/null && [ "$kind" = musl ]; then
        echo "  runs (qemu-aarch64): $(qemu-aarch64 "$bin" --version)"
      fi
      ;;
    *) echo "  runs: $("$bin" --version)" ;;
  esac
}

if command -v cargo-zigbuild >/dev/null; then
  cargo zigbuild --release --quiet --target x86_64-unknown-linux-gnu.2.17
  check x86_64-unknown-linux-gnu.2.17 gnu
  if grep -qx aarch64-unknown-linux-gnu <<<"$installed"; then
    cargo zigbuild --release --quiet --target aarch64-unknown-linux-gnu.2.17
    check aarch64-unknown-linux-gnu.2.17 gnu
  else
    echo "aarch64-unknown-linux-gnu.2.17: not built (rustup target add aarch64-unknown-linux-gnu)"
  fi
else
  echo "FAIL: cargo-zigbuild is missing (pip install cargo-zigbuild ziglang, or run .ci/setup-bench.sh)"
  status=1
fi
cargo build --release --quiet --target x86_64-unknown-linux-musl
check x86_64-unknown-linux-musl musl
if grep -qx aarch64-unknown-linux-musl <<<"$installed"; then
  cargo build --release --quiet --target aarch64-unknown-linux-musl \
    --config 'target.aarch64-unknown-linux-musl.linker="rust-lld"'
  check aarch64-unknown-linux-musl musl
else
  echo "aarch64-unknown-linux-musl: not built (rustup target add aarch64-unknown-linux-musl)"
fi
exit $status
