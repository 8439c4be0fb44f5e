#!/usr/bin/env bash
# Builds the release binaries and prints each one's size and `file` output:
#   x86_64-unknown-linux-musl   always (static; rustup target add x86_64-unknown-linux-musl)
#   aarch64-unknown-linux-musl  when the target is installed (rustup target add
#                               aarch64-unknown-linux-musl), linked with the toolchain's own
#                               rust-lld, so no cross C toolchain is needed
# Fails if the x86_64 binary is not statically linked. Reports, without failing, whether it
# meets the size goal (600 KiB). Binaries: target/<triple>/release/mdtune.
set -euo pipefail
cd "$(dirname "$0")/.."
goal_kib=600

built=()
cargo build --release --quiet --target x86_64-unknown-linux-musl
built+=(x86_64-unknown-linux-musl)
if rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-musl; then
  cargo build --release --quiet --target aarch64-unknown-linux-musl \
    --config 'target.aarch64-unknown-linux-musl.linker="rust-lld"'
  built+=(aarch64-unknown-linux-musl)
else
  echo "aarch64-unknown-linux-musl: not built (rustup target add aarch64-unknown-linux-musl)"
fi

dir=${CARGO_TARGET_DIR:-target}
status=0
for t in "${built[@]}"; do
  bin=$dir/$t/release/mdtune
  bytes=$(stat -c %s "$bin")
  echo "$t: $bin $bytes bytes ($((bytes / 1024)) KiB)"
  echo "  file: $(file -b "$bin")"
  case $t in
    x86_64-*)
      # ldd prints "statically linked" (glibc's ldd) or "not a dynamic executable" for static-pie.
      echo "  ldd: $(ldd "$bin" 2>&1 | tr '\n' ' ')"
      if file -b "$bin" | grep -Eq 'static-pie linked|statically linked'; then
        echo "  static: yes (runs on any x86_64 Linux from kernel 3.2 on; needs no libc)"
      else
        echo "  static: NO"; status=1
      fi
      if [ $((bytes / 1024)) -le $goal_kib ]; then echo "  size goal (<= $goal_kib KiB): met"
      else echo "  size goal (<= $goal_kib KiB): not met"; fi
      ;;
    aarch64-*)
      if command -v qemu-aarch64 >/dev/null; then
        echo "  runs (qemu-aarch64): $(qemu-aarch64 "$bin" --version)"
      else
        echo "  not run here (apt-get install qemu-user to smoke-test it with qemu-aarch64)"
      fi
      ;;
  esac
done
exit $status
