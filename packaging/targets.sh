# Sourced by packaging/build.sh and bench/build-release.sh: how each architecture's static
# binary is built, in one place.
#
#   static_target ARCH   sets TRIPLE (the Rust target) and exports the linker and RUSTFLAGS that
#                        target needs, for ARCH in x86_64, aarch64, ppc64le. The result needs no
#                        libc on the host at all, so it runs on every distribution release
#                        (SLES 12 and 15, RHEL, Debian, Ubuntu) whatever its glibc.
#
#   x86_64   x86_64-unknown-linux-musl      rustup's musl std, rust-lld
#   aarch64  aarch64-unknown-linux-musl     rustup's musl std, linked with the toolchain's rust-lld
#   ppc64le  powerpc64le-unknown-linux-gnu  static glibc (+crt-static), linked by Debian's
#                                           gcc-powerpc64le-linux-gnu against libc6-dev-ppc64el-cross.
#            Stable Rust ships no musl std for ppc64le here, and cargo-zigbuild cannot link it
#            (missing __*ieee128 symbols); static glibc has no symbol-version needs at all.

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
    command -v powerpc64le-linux-gnu-gcc >/dev/null && [ -f /usr/powerpc64le-linux-gnu/lib/libc.a ] ||
      { echo "the ppc64le cross toolchain is missing: apt-get install gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross (or run .ci/setup-packaging.sh)" >&2; return 1; }
  fi
}
