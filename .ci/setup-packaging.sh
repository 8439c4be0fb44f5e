#!/usr/bin/env bash
# Installs what packaging/build.sh and the packaging suite (tests/packaging/run.sh) need on a
# Debian 12 machine, as root. Idempotent: a second run that finds everything only checks.
#   - from bookworm: rpm (rpmbuild), rpmlint, lintian, debhelper and dpkg-dev (dpkg-buildpackage),
#     man-db, file, the ppc64le cross toolchain (gcc-powerpc64le-linux-gnu and
#     libc6-dev-ppc64el-cross: glibc's static libraries for the static ppc64le build),
#     libc6-arm64-cross (the aarch64 glibc that qemu-aarch64-static -L runs the glibc build with);
#   - qemu-user-static (bookworm) and qemu-system-ppc from bookworm-backports, through a private
#     apt configuration (the machine's /etc/apt is never touched), because the VM suite installs
#     qemu-system-x86 from backports and bookworm's QEMU 7.2 would replace its qemu-system-common;
#   - rustup targets x86_64-unknown-linux-musl, aarch64-unknown-linux-musl and
#     powerpc64le-unknown-linux-gnu, and the rust-src component (std's sources, for the opt-in
#     small build of packaging/targets.sh, which bench/build-release.sh measures);
#   - rpmlint 2.10 (what the Open Build Service runs) from PyPI with pyenchant, in a venv made
#     with --system-site-packages from Debian's python3, so that it takes Debian's python3-rpm
#     (the rpm bindings are not on PyPI), with hunspell-en-us and libenchant-2-2 from bookworm
#     for its spelling check, devscripts for the checkbashisms that openSUSE's configuration
#     runs, and openSUSE's configuration (configs/openSUSE/ from rpmlint's
#     sdist), all into ${MDTUNE_PACKAGING_CACHE:-<repo>/.cache/packaging}/rpmlint;
#   - mmdebstrap, and with it two build chroots in ${MDTUNE_PACKAGING_CACHE:-<repo>/.cache/packaging}:
#     deb-bookworm (Debian 12 with cargo-web and rustc-web 1.85) and deb-trixie (Debian 13 with its
#     cargo and rustc 1.85), where packaging/build.sh builds the .deb with Debian's own Rust
#     (about 70 s and 1 GB each; no apt source of this machine changes); debugedit, elfutils and
#     binutils-multiarch for the RPMs' debuginfo packages of all three architectures;
#   - into ${MDTUNE_PACKAGING_CACHE:-<repo>/.cache/packaging}, downloaded and unpacked, never
#     installed: Debian's ppc64el kernel (linux-image-powerpc64le), busybox-static, mdadm and the
#     libraries mdadm loads, for the ppc64le VM boot (tests/packaging/ppc64le-vm.sh).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${MDTUNE_PACKAGING_CACHE:-$repo/.cache/packaging}
export DEBIAN_FRONTEND=noninteractive
log() { echo "setup-packaging: $*" >&2; }
die() { echo "setup-packaging: ERROR: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get install)"
command -v apt-get >/dev/null || die "apt-get not found: this script expects Debian 12 (bookworm)"

retry() {
  local n
  for n in 1 2 3; do
    "$@" && return 0
    log "try $n failed: $*"
    sleep $((n * 5))
  done
  return 1
}
lock=(-o DPkg::Lock::Timeout=900)

# --- bookworm packages ---------------------------------------------------------------------------
want=(rpm rpmlint lintian debhelper dpkg-dev man-db file gcc-powerpc64le-linux-gnu
  libc6-dev-ppc64el-cross binutils-powerpc64le-linux-gnu libc6-arm64-cross cpio
  python3-rpm python3-venv libenchant-2-2 hunspell-en-us devscripts mmdebstrap debugedit
  binutils-multiarch elfutils)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  retry apt-get "${lock[@]}" -qq update
  retry apt-get "${lock[@]}" -y -qq install --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
fi

# --- private apt configurations: bookworm-backports (amd64) and bookworm (ppc64el) ---------------
# apt_conf DIR ARCH SUITES: a sources file and lists dir under DIR; prints the apt options.
apt_conf() {
  local dir=$1 arch=$2 suites=$3
  mkdir -p "$dir/sources.list.d" "$dir/lists/partial"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$suites" >"$dir/sources.list.d/mdtune-packaging.sources"
  printf '%s\n' -o "Dir::Etc::SourceParts=$dir/sources.list.d" -o "Dir::Etc::SourceList=/dev/null" \
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" \
    -o "APT::Sandbox::User=root" -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
}

if ! command -v qemu-system-ppc64 >/dev/null || ! command -v qemu-ppc64le-static >/dev/null ||
  ! command -v qemu-aarch64-static >/dev/null; then
  mapfile -t bpo < <(apt_conf "$cache/apt-amd64" amd64 "bookworm bookworm-updates bookworm-backports")
  retry apt-get "${bpo[@]}" -qq update || die "apt-get update (bookworm-backports) failed"
  # qemu-system-ppc from backports, the release the VM suite takes qemu-system-x86 from: both
  # need the same qemu-system-common. qemu-user-static stands alone; bookworm's is enough.
  log "installing qemu-system-ppc (bookworm-backports) and qemu-user-static"
  retry apt-get "${bpo[@]}" "${lock[@]}" -y -qq install --no-install-recommends \
    -t bookworm-backports qemu-system-ppc >/dev/null || die "could not install qemu-system-ppc"
  retry apt-get "${bpo[@]}" "${lock[@]}" -y -qq install --no-install-recommends \
    qemu-user-static >/dev/null || die "could not install qemu-user-static"
fi

# --- Rust targets --------------------------------------------------------------------------------
for t in x86_64-unknown-linux-musl aarch64-unknown-linux-musl powerpc64le-unknown-linux-gnu; do
  rustup target list --installed | grep -qx "$t" || retry rustup target add "$t" >/dev/null ||
    die "rustup target add $t failed"
done
rustup component list --installed | grep -q '^rust-src' || retry rustup component add rust-src >/dev/null ||
  die "rustup component add rust-src failed"

# --- rpmlint 2.10 with openSUSE's configuration and a spelling dictionary -------------------------
rl=$cache/rpmlint
rpmlint_version=2.10.0
if ! [ -x "$rl/venv/bin/rpmlint" ] || [ "$("$rl/venv/bin/rpmlint" --version 2>/dev/null)" != "$rpmlint_version" ] ||
  ! [ -f "$rl/configs/openSUSE/opensuse.toml" ] ||
  ! "$rl/venv/bin/python" -c 'import enchant, rpm; enchant.Dict("en_US")' 2>/dev/null; then
  log "installing rpmlint $rpmlint_version and pyenchant into $rl/venv"
  rm -rf "$rl" && mkdir -p "$rl"
  /usr/bin/python3 -m venv --system-site-packages "$rl/venv"
  retry "$rl/venv/bin/pip" install -q "rpmlint==$rpmlint_version" pyenchant || die "pip install rpmlint failed"
  retry "$rl/venv/bin/pip" download -q --no-deps --no-binary :all: "rpmlint==$rpmlint_version" -d "$rl/sdist" ||
    die "pip download of rpmlint's sdist failed"
  tar -xzf "$rl/sdist/rpmlint-$rpmlint_version.tar.gz" -C "$rl" --strip-components=1 \
    "rpmlint-$rpmlint_version/configs/openSUSE"
  "$rl/venv/bin/python" -c 'import enchant, rpm; enchant.Dict("en_US")' ||
    die "rpmlint's venv cannot load rpm (python3-rpm) or the en_US dictionary (hunspell-en-us)"
fi

# --- ppc64el kernel and guest userland for the VM boot ------------------------------------------
ppc=$cache/ppc64el
if ! [ -s "$ppc/kernel.abi" ] || ! [ -x "$ppc/root/bin/busybox" ] || ! [ -x "$ppc/root/sbin/mdadm" ]; then
  mapfile -t pa < <(apt_conf "$cache/apt-ppc64el" ppc64el "bookworm bookworm-updates")
  retry apt-get "${pa[@]}" -qq update || die "apt-get update (ppc64el lists) failed"
  abi=$(apt-cache "${pa[@]}" depends linux-image-powerpc64le |
    sed -nE 's/^ *Depends: linux-image-([0-9][^ ]*-powerpc64le)(-unsigned)?$/\1/p' | head -n1)
  [ -n "$abi" ] || die "cannot resolve the kernel linux-image-powerpc64le depends on"
  debs=$ppc/debs
  rm -rf "$ppc/root.tmp" && mkdir -p "$debs" "$ppc/root.tmp"
  kpkg=linux-image-$abi
  apt-cache "${pa[@]}" show "$kpkg" >/dev/null 2>&1 || kpkg=$kpkg-unsigned
  for p in "$kpkg" busybox-static mdadm libc6 libudev1 libcap2; do
    log "downloading $p:ppc64el"
    (cd "$debs" && retry apt-get "${pa[@]}" -qq download "$p:ppc64el") || die "apt-get download $p:ppc64el failed"
  done
  for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$ppc/root.tmp"; done
  rm -rf "$ppc/root" && mv "$ppc/root.tmp" "$ppc/root"
  echo "$abi" >"$ppc/kernel.abi"
fi
[ -f "$ppc/root/boot/vmlinux-$(cat "$ppc/kernel.abi")" ] || die "no vmlinux in $ppc/root/boot"

# --- Debian build chroots with Debian's own cargo and rustc (1.85, Cargo.toml's rust-version) ---
# bookworm (Debian 12): cargo-web and rustc-web 1.85 from bookworm's main archive (they provide
# cargo and rustc = 1.85), so the .deb links Debian 12's glibc and installs there; trixie (Debian
# 13): its cargo and rustc 1.85. mmdebstrap makes each from the archive into the cache; no suite
# enters an apt source of this machine, and the chroots have no security or updates suites, so
# they keep exactly 1.85. packaging/build.sh runs dpkg-buildpackage in them, offline.
for line in "bookworm cargo-web rustc-web" "trixie cargo rustc"; do
  read -r suite rust_packages <<<"$line"
  tx=$cache/deb-$suite
  tx_packages="$rust_packages debhelper python3 dpkg-dev"
  if ! [ -x "$tx/root/usr/bin/cargo" ] || [ "$(cat "$tx/packages" 2>/dev/null)" != "$tx_packages" ]; then
    log "making the $suite build chroot in $tx/root (mmdebstrap: $tx_packages)"
    rm -rf "$tx/root.tmp" && mkdir -p "$tx"
    retry mmdebstrap --quiet --variant=buildd --include="${tx_packages// /,}" "$suite" "$tx/root.tmp" \
      http://deb.debian.org/debian >/dev/null || die "mmdebstrap of the $suite build chroot failed"
    rm -rf "$tx/root" && mv "$tx/root.tmp" "$tx/root"
    echo "$tx_packages" >"$tx/packages"
  fi
  chroot "$tx/root" rustc --version | grep -q '^rustc 1\.85\.' ||
    die "the $suite chroot's rustc is not 1.85: $(chroot "$tx/root" rustc --version)"
done

log "rpmbuild $(rpmbuild --version | awk '{print $NF}'), lintian $(lintian --version | awk '{print $NF}')," \
  "rpmlint $("$rl/venv/bin/rpmlint" --version) (openSUSE configuration)," \
  "$(qemu-system-ppc64 --version | head -n1), ppc64el kernel $(cat "$ppc/kernel.abi")," \
  "$(powerpc64le-linux-gnu-gcc --version | head -n1)," \
  "Debian build chroots: bookworm $(chroot "$cache/deb-bookworm/root" rustc --version | cut -d' ' -f2), trixie $(chroot "$cache/deb-trixie/root" rustc --version | cut -d' ' -f2)"
