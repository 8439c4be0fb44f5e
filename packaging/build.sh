#!/usr/bin/env bash
# Builds every mdtune package into target/packages/:
#
#   packaging/build.sh [--arch "x86_64 aarch64 ppc64le"] [--no-rpm] [--no-deb]
#
#   mdtune-VERSION.tar.gz, mdtune-VERSION-vendor.tar.gz   the RPM sources (what OBS takes)
#   mdtune-VERSION-1.src.rpm
#   mdtune-VERSION-1.{x86_64,aarch64,ppc64le}.rpm          /usr/sbin/mdtune (static), mdtune(8)
#   mdtune-salt-modules-VERSION-1.noarch.rpm               the Salt modules, real files
#   mdtune-formula-VERSION-1.noarch.rpm                    the SUSE Manager / Uyuni formula
#   mdtune_VERSION-1_amd64.deb                             for Debian and Ubuntu (this host's arch)
#
# The crates are vendored once (cargo vendor, into the vendor tarball, kept while Cargo.lock and
# the toolchain's std Cargo.lock are unchanged): the project's and std's own, since the binaries
# are built with std rebuilt for size (-Z build-std, packaging/targets.sh). Every build after
# that is offline: rpmbuild and dpkg-buildpackage run `cargo build --offline --frozen` with an
# empty CARGO_HOME against the vendored crates.
# MDTUNE_VENDOR_TARBALL=FILE uses a vendor tarball made elsewhere.
#
# Needs rpmbuild, dpkg-buildpackage (debhelper), python3, the Rust targets, rust-src and the
# ppc64le cross toolchain: .ci/setup-packaging.sh installs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
. packaging/targets.sh

arches="x86_64 aarch64 ppc64le"
rpm=1 deb=1
while [ $# -gt 0 ]; do
  case $1 in
    --arch) arches=$2; shift 2 ;;
    --no-rpm) rpm=0; shift ;;
    --no-deb) deb=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "build.sh: $*" >&2; exit 1; }

version=$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\(.*\)"/\1/p}' Cargo.toml | head -1)
[ -n "$version" ] || die "no version in Cargo.toml"
spec_version=$(sed -n 's/^Version: *//p' packaging/mdtune.spec)
[ "$spec_version" = "$version" ] || die "packaging/mdtune.spec says Version $spec_version, Cargo.toml $version"
deb_version=$(sed -n '1s/^mdtune (\([^-)]*\)-.*/\1/p' packaging/debian/changelog)
[ "$deb_version" = "$version" ] || die "packaging/debian/changelog says $deb_version, Cargo.toml $version"
for tool in rpmbuild dpkg-buildpackage python3 cargo; do
  command -v "$tool" >/dev/null || die "$tool is missing (run .ci/setup-packaging.sh)"
done

out=$repo/target/packages
work=$repo/target/packaging
mkdir -p "$out" "$work"
name=mdtune-$version
# One cargo target directory for every package build: the build-time crates (serde_derive, syn,
# ...) compile once, not once per architecture and format. Each build still compiles the
# sources of its own unpacked tarball. MDTUNE_CLEAN_BUILD=1 gives each build its own.
if [ "${MDTUNE_CLEAN_BUILD:-0}" != 1 ]; then
  export CARGO_TARGET_DIR=$work/cargo-target
fi

# --- the vendored crates ------------------------------------------------------------------------
# The project's crates and std's own (the toolchain's rust-src library/Cargo.lock: libc,
# hashbrown, compiler_builtins, ...), because every binary is built with std rebuilt for size
# (packaging/targets.sh static_build) and rpmbuild and dpkg-buildpackage run offline. std's list
# depends on the Rust release: the tarball is made again when either Cargo.lock changes, and
# the package build needs the same Rust release (and rust-src) as the one that vendored it.
# cargo vendor reads std's workspace manifest only with RUSTC_BOOTSTRAP=1 (it uses an unstable
# cargo feature). The whole std workspace is vendored, Windows and test crates included (cargo
# vendor does not filter by platform): about 13 MB compressed.
std_src_ready || die "cannot vendor std's dependencies"
std=$(std_src)
vendor=$out/$name-vendor.tar.gz
stamp=$work/vendor.lock-sha256
lock_sum=$(cat Cargo.lock "$std/Cargo.lock" | sha256sum | cut -d' ' -f1)
if [ -n "${MDTUNE_VENDOR_TARBALL:-}" ]; then
  [ -f "$MDTUNE_VENDOR_TARBALL" ] || die "MDTUNE_VENDOR_TARBALL=$MDTUNE_VENDOR_TARBALL does not exist"
  [ "$(realpath "$MDTUNE_VENDOR_TARBALL")" = "$(realpath -m "$vendor")" ] || cp "$MDTUNE_VENDOR_TARBALL" "$vendor"
  echo "$lock_sum" >"$stamp"
elif ! [ -f "$vendor" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "build.sh: vendoring the crates of Cargo.lock and of std ($std/Cargo.lock) (cargo vendor)"
  rm -rf "$work/vendor-tree" && mkdir -p "$work/vendor-tree"
  # Offline from cargo's cache when it holds every crate, else from crates.io.
  vendor_cmd=(env RUSTC_BOOTSTRAP=1 cargo vendor --locked --quiet --sync "$std/Cargo.toml" "$work/vendor-tree/vendor")
  "${vendor_cmd[@]}" --offline >/dev/null 2>&1 ||
    { rm -rf "$work/vendor-tree/vendor" && "${vendor_cmd[@]}" >/dev/null; } || die "cargo vendor failed"
  tar -C "$work/vendor-tree" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -czf "$vendor" vendor
  echo "$lock_sum" >"$stamp"
fi

# --- the source tarball: the checkout's tracked and new files, as they are now ------------------
src=$out/$name.tar.gz
mtime=$(git log -1 --format=%ct 2>/dev/null || stat -c %Y Cargo.toml)
git ls-files -co --exclude-standard -z | grep -zv '^target/' |
  tar --null -T - --sort=name --owner=0 --group=0 --numeric-owner --mtime=@"$mtime" \
    --transform "s,^,$name/," -czf "$src"
export SOURCE_DATE_EPOCH=$mtime

# --- RPMs ---------------------------------------------------------------------------------------
if [ "$rpm" = 1 ]; then
  top=$work/rpmbuild
  rm -rf "$top" && mkdir -p "$top"/{BUILD,RPMS,SRPMS,SOURCES,SPECS}
  cp "$src" "$vendor" "$top/SOURCES/"
  # The Packager tag: who built this set (OBS sets its own).
  # The RPMs built here are for SUSE: SUSE's %_defaultdocdir, where %doc and the man page put
  # the docs.
  defs=(--define "_topdir $top" --define "_build_id_links none" --define "_defaultdocdir %{_datadir}/doc/packages"
    --define "packager ${MDTUNE_PACKAGER:-mdtune maintainers <mdtune@example.org>}")
  rpmbuild "${defs[@]}" --nodeps -bs packaging/mdtune.spec >/dev/null
  for arch in $arches; do
    static_target_ready "$arch" || die "cannot build the $arch RPM"
    echo "build.sh: rpmbuild $arch ($TRIPLE)"
    # --nodeps: BuildRequires (cargo, python3) are checked against the rpm database, which a
    # Debian host does not have; the tools come from rustup and Debian instead.
    ( export CARGO_HOME=$work/cargo-home-empty
      rpmbuild "${defs[@]}" --nodeps --target "$arch" --define "mdtune_cargo_target $TRIPLE" \
        -bb packaging/mdtune.spec >"$work/rpmbuild-$arch.log" 2>&1 ) ||
      { tail -n 30 "$work/rpmbuild-$arch.log" >&2; die "rpmbuild for $arch failed (log: $work/rpmbuild-$arch.log)"; }
  done
  rm -f "$out"/*.rpm
  find "$top/RPMS" "$top/SRPMS" -name '*.rpm' -exec cp {} "$out/" \;
fi

# --- .deb (this host's architecture) ------------------------------------------------------------
if [ "$deb" = 1 ]; then
  debdir=$work/deb
  rm -rf "$debdir" && mkdir -p "$debdir"
  tar -C "$debdir" -xzf "$src"
  tar -C "$debdir/$name" -xzf "$vendor"
  cp -r packaging/debian "$debdir/$name/debian"
  echo "build.sh: dpkg-buildpackage $(dpkg --print-architecture)"
  # -d: cargo comes from rustup (see debian/control); -b: binary package only.
  ( cd "$debdir/$name" && CARGO_HOME=$work/cargo-home-empty \
      dpkg-buildpackage -b -d -us -uc >"$work/dpkg-buildpackage.log" 2>&1 ) ||
    { tail -n 30 "$work/dpkg-buildpackage.log" >&2; die "dpkg-buildpackage failed (log: $work/dpkg-buildpackage.log)"; }
  rm -f "$out"/*.deb
  cp "$debdir"/*.deb "$out/"
fi

echo "build.sh: packages in ${out#"$repo"/}/:"
# shellcheck disable=SC2012 # only lists the packages for the reader
(cd "$out" && ls -1 ./*.rpm ./*.deb ./*.tar.gz 2>/dev/null | sed 's,^\./,  ,')
