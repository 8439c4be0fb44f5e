# shellcheck shell=bash
# Sourced by packaging/build.sh, bench/build-release.sh and the collection's build: how each architecture's static
# binary is built, in one place.
#
#   static_target ARCH   sets TRIPLE (the Rust target) and exports the linker and RUSTFLAGS that
#                        target needs, for ARCH in x86_64, aarch64, ppc64le. The result needs no
#                        libc on the host at all, so it runs on every distribution release
#                        (SLES 12 and 15, RHEL, Debian, Ubuntu) whatever its glibc.
#
#   x86_64   x86_64-unknown-linux-musl      musl (the target's self-contained libc), rust-lld
#   aarch64  aarch64-unknown-linux-musl     musl, linked with the toolchain's rust-lld
#   ppc64le  powerpc64le-unknown-linux-gnu  static glibc (+crt-static), linked by Debian's
#                                           gcc-powerpc64le-linux-gnu against libc6-dev-ppc64el-cross.
#            Stable Rust ships no musl std for ppc64le here, and cargo-zigbuild cannot link it
#            (missing __*ieee128 symbols); static glibc has no symbol-version needs at all.
#
#   static_build ARCH    builds it with the toolchain's precompiled std (stable, no unstable flag):
#                        what the RPMs and the collection ship.
#   small_static_build ARCH
#                        the opt-in recipe for a smaller prebuilt binary (the collection's, with
#                        build-collection.sh --small; bench/build-release.sh measures it): std
#                        rebuilt for size (below). small_x86_64_build is the x86_64 one with its
#                        panic check.

static_target() {
  case $1 in
    x86_64) TRIPLE=x86_64-unknown-linux-musl ;;
    aarch64)
      TRIPLE=aarch64-unknown-linux-musl
      export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
      ;;
    ppc64le)
      TRIPLE=powerpc64le-unknown-linux-gnu
      export CARGO_TARGET_POWERPC64LE_UNKNOWN_LINUX_GNU_LINKER=powerpc64le-linux-gnu-gcc
      export CARGO_TARGET_POWERPC64LE_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
      ;;
    *)
      echo "static_target: unknown architecture '$1' (x86_64, aarch64 or ppc64le)" >&2
      return 1
      ;;
  esac
}

# The tools a static build of ARCH needs, or a message naming what to install.
static_target_ready() {
  static_target "$1" || return 1
  rustup target list --installed 2>/dev/null | grep -qx "$TRIPLE" ||
    { echo "rust target $TRIPLE is missing: rustup target add $TRIPLE (or run .ci/setup-packaging.sh)" >&2; return 1; }
  if [ "$1" = ppc64le ]; then
    { command -v powerpc64le-linux-gnu-gcc >/dev/null && [ -f /usr/powerpc64le-linux-gnu/lib/libc.a ]; } ||
      { echo "the ppc64le cross toolchain is missing: apt-get install gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross (or run .ci/setup-packaging.sh)" >&2; return 1; }
  fi
}

# The opt-in small recipe rebuilds std from source for size (-Z build-std) with std's default
# features replaced by optimize_for_size (-Z build-std-features=optimize_for_size). Off by
# default: std's backtrace printer (about 210 KiB), while the panic hook still prints the JSON
# failure object (examples/panic_report.rs proves it in each x86_64 build). optimize_for_size:
# std's smaller sort and formatting code, about 41 KB less on x86_64. The figures are in
# docs/performance.md ("Building the release binaries"): about 30% smaller, no faster.
#
# Why RUSTC_BOOTSTRAP=1: -Z build-std is still unstable, so cargo accepts it only from a nightly
# toolchain, or from a stable one told to allow unstable flags. A distribution does neither, which
# is why no package uses this recipe. We take the stable release the rest of the project builds
# with (rustup's stable), not nightly: a stable version names one compiler and one std source for
# good. The price: an unstable flag may change between stable releases; the size and panic checks
# of bench/build-release.sh catch that. std's sources are the toolchain's rust-src component
# (rustup component add rust-src). RUSTC_BOOTSTRAP is set for these cargo commands only, never
# exported.
STD_FLAGS=(-Z 'build-std=std,panic_abort' -Z build-std-features=optimize_for_size)

# The toolchain's std sources (its rust-src component). Prints nothing when rust-src is not
# installed.
std_src() {
  local lib
  lib=$(rustc --print sysroot 2>/dev/null)/lib/rustlib/src/rust/library
  [ -f "$lib/Cargo.lock" ] && echo "$lib"
}

# True when the toolchain can rebuild std; otherwise a message naming what to install.
std_src_ready() {
  [ -n "$(std_src)" ] || {
    echo "the toolchain's std sources are missing: rustup component add rust-src (or run .ci/setup-bench.sh)" >&2
    return 1
  }
}

# static_build ARCH [CARGO ARGS...]: the static release build of ARCH with the precompiled std,
# target/TRIPLE/release/mdtune (plus what the extra arguments ask for).
static_build() {
  local arch=$1
  shift
  static_target_ready "$arch" || return 1
  cargo build --release --quiet --target "$TRIPLE" "$@"
}

# small_static_build ARCH [CARGO ARGS...]: the same with std rebuilt for size. Needs crates.io,
# or cargo's cache, for std's own dependencies on the first build.
small_static_build() {
  local arch=$1
  shift
  static_target_ready "$arch" && std_src_ready || return 1
  RUSTC_BOOTSTRAP=1 cargo build --release --quiet --target "$TRIPLE" "${STD_FLAGS[@]}" "$@"
}

# The small x86_64 binary (Ansible copies the module to every host for every task, so its size
# is felt) and the panic example that checks its hook:
# target/x86_64-unknown-linux-musl/release/mdtune and .../examples/panic_report.
small_x86_64_build() {
  small_static_build x86_64 --bin mdtune --example panic_report
}
