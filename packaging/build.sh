#!/usr/bin/env bash
# Builds every mdtune package into target/packages/:
#
#   packaging/build.sh [--arch "x86_64 aarch64 ppc64le"] [--no-rpm] [--no-deb]
#
#   mdtune-VERSION.tar.gz, vendor.tar.gz                  the RPM sources
#   obs/                                                   what an OBS package holds: the spec,
#                                                          mdtune.changes, _service, both tarballs
#   mdtune-VERSION-1.src.rpm
#   mdtune-VERSION-1.{x86_64,aarch64,ppc64le}.rpm          /usr/sbin/mdtune (static), mdtune(8)
#   mdtune-debuginfo-, mdtune-debugsource-VERSION-1.*.rpm  its debug information and sources
#   mdtune-salt-modules-VERSION-1.noarch.rpm               the Salt modules, real files
#   mdtune-formula-VERSION-1.noarch.rpm                    the SUSE Manager 4.3 / Uyuni formula
#   mdtune-salt-VERSION.tar.gz                             the formula and modules for a plain
#                                                          Salt master or SUSE Manager 5 (/srv)
#   mdtune_VERSION-1_amd64.deb, mdtune-dbgsym_*.deb        for Debian 12+ and Ubuntu 22.04+ (this
#                                                          host's arch), built in Debian 12
#   trixie/mdtune_VERSION-1_amd64.deb                      the same built in Debian 13
#
# The crates of Cargo.lock that a Linux build uses are vendored once (cargo vendor, into the
# vendor tarball, kept while Cargo.lock is unchanged). Every build after that is offline:
# rpmbuild runs cargo-packaging's %cargo_build (or the spec's stand-in) with an empty CARGO_HOME
# against the vendored crates, and dpkg-buildpackage runs in a Debian 13 chroot with its own
# cargo and rustc (Debian 12's and 13's), in a network namespace without a network.
# MDTUNE_VENDOR_TARBALL=FILE uses a vendor tarball made elsewhere.
#
# Needs rpmbuild, python3, the Rust targets, the ppc64le cross toolchain and the Debian 12 and
# 13 build chroots: .ci/setup-packaging.sh installs them all.
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
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
for tool in rpmbuild python3 cargo; do
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
# What the Open Build Service's cargo_vendor service makes: the crates of Cargo.lock, from
# cargo's cache or crates.io, but only those a build for Linux x86_64, aarch64 or ppc64le uses
# (cargo tree over the three); the others (the Windows crates) are left as stubs holding their
# Cargo.toml, which cargo's resolver still reads. std's own crates are not in it: the packages are
# built against the toolchain's precompiled std. Made again when Cargo.lock changes.
vendor=$out/vendor.tar.gz
stamp=$work/vendor.lock-sha256
lock_sum=$(sha256sum Cargo.lock | cut -d' ' -f1)
if [ -n "${MDTUNE_VENDOR_TARBALL:-}" ]; then
  [ -f "$MDTUNE_VENDOR_TARBALL" ] || die "MDTUNE_VENDOR_TARBALL=$MDTUNE_VENDOR_TARBALL does not exist"
  [ "$(realpath "$MDTUNE_VENDOR_TARBALL")" = "$(realpath -m "$vendor")" ] || cp "$MDTUNE_VENDOR_TARBALL" "$vendor"
  echo "$lock_sum" >"$stamp"
elif ! [ -f "$vendor" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "build.sh: vendoring the crates of Cargo.lock that the Linux builds use (cargo vendor)"
  rm -rf "$work/vendor-tree" && mkdir -p "$work/vendor-tree"
  vendor_cmd=(cargo vendor --locked --quiet --versioned-dirs "$work/vendor-tree/vendor")
  "${vendor_cmd[@]}" --offline >/dev/null 2>&1 ||
    { rm -rf "$work/vendor-tree/vendor" && "${vendor_cmd[@]}" >/dev/null; } || die "cargo vendor failed"
  used=$(for t in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu powerpc64le-unknown-linux-gnu \
    x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    cargo tree --offline --locked --target "$t" -e normal,build,dev --prefix none --format '{p}' ||
      die "cargo tree --target $t failed"
  done | awk '$3 !~ /^\(\// {sub(/^v/, "", $2); print $1 "-" $2}' | sort -u)
  for d in "$work/vendor-tree/vendor"/*/; do
    crate=$(basename "$d")
    grep -qxF "$crate" <<<"$used" && continue
    python3 packaging/vendor_stub.py "$d" || die "cannot make the stub of $crate"
    echo "build.sh: $crate is not used by a Linux build: only its manifest is kept"
  done
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

# --- the Salt bundle: the formula and the modules where a Salt master keeps them -----------------
# mdtune-salt-VERSION.tar.gz, unpacked with `tar -xzf ... -C /` on a plain Salt master or, through
# mgrctl, inside a SUSE Manager 5 / Uyuni server container (paths on its volumes): docs/install.md.
packaging/salt-bundle.sh "$out/mdtune-salt-$version.tar.gz" "$mtime" || die "packaging/salt-bundle.sh failed"

# --- the Open Build Service package: what `osc add` takes (docs/install.md) -----------------------
rm -rf "$out/obs" && mkdir -p "$out/obs"
cp packaging/mdtune.spec packaging/mdtune.changes packaging/_service "$src" "$vendor" "$out/obs/"

# --- RPMs ---------------------------------------------------------------------------------------
if [ "$rpm" = 1 ]; then
  top=$work/rpmbuild
  rm -rf "$top" && mkdir -p "$top"/{BUILD,RPMS,SRPMS,SOURCES,SPECS}
  cp "$src" "$vendor" "$top/SOURCES/"
  # What OBS does with mdtune.changes: its entries become the spec's %changelog.
  spec=$top/SPECS/mdtune.spec
  # And what SUSE's rpm does by itself: the debuginfo and debugsource packages (Debian's rpm
  # makes them only when the spec says %debug_package).
  { sed '/^%prep$/i %debug_package' packaging/mdtune.spec
    python3 packaging/changes2spec.py packaging/mdtune.changes; } >"$spec" ||
    die "packaging/mdtune.changes cannot be read as a changelog"
  # The Packager tag: who built this set (OBS sets its own).
  # The RPMs built here are for SUSE: SUSE's %_defaultdocdir, where %doc and the man page put
  # the docs.
  defs=(--define "_topdir $top" --define "_build_id_links none" --define "_defaultdocdir %{_datadir}/doc/packages"
    --define "packager ${MDTUNE_PACKAGER:-mdtune maintainers <mdtune@example.org>}"
    --define "_debugsource_packages 1")
  rpmbuild "${defs[@]}" --nodeps -bs "$spec" >/dev/null
  for arch in $arches; do
    static_target_ready "$arch" || die "cannot build the $arch RPM"
    echo "build.sh: rpmbuild $arch ($TRIPLE)"
    # --nodeps: BuildRequires (cargo, cargo-packaging, python3) are checked against the rpm
    # database, which a Debian host does not have; the tools come from rustup and Debian instead.
    ( export CARGO_HOME=$work/cargo-home-empty
      rpmbuild "${defs[@]}" --nodeps --target "$arch" --define "mdtune_cargo_target $TRIPLE" \
        -bb "$spec" >"$work/rpmbuild-$arch.log" 2>&1 ) ||
      { tail -n 30 "$work/rpmbuild-$arch.log" >&2; die "rpmbuild for $arch failed (log: $work/rpmbuild-$arch.log)"; }
  done
  rm -f "$out"/*.rpm
  find "$top/RPMS" "$top/SRPMS" -name '*.rpm' -exec cp {} "$out/" \;
fi

# --- .deb (this host's architecture), in Debian chroots with Debian's cargo and rustc ---------------
# dpkg-buildpackage checks Build-Depends (cargo and rustc >= 1.85) and runs without a network
# (unshare -n) from the source tarball and the vendored crates. bookworm (Debian 12: cargo-web and
# rustc-web 1.85, which provide cargo and rustc) makes target/packages/*.deb, which installs on
# Debian 12 and later; trixie (Debian 13, its stock cargo and rustc 1.85) the same package in
# target/packages/trixie/, proof that Debian 13's compiler builds it. The chroots are made by
# .ci/setup-packaging.sh (mmdebstrap, into the packaging cache). MDTUNE_DEB_SUITES picks them.
# deb_build SUITE OUTDIR
deb_build() {
  local suite=$1 dest=$2 chroot_dir debdir log=$work/dpkg-buildpackage-$1.log
  chroot_dir=${MDTUNE_PACKAGING_CACHE:-$repo/.cache/packaging}/deb-$suite/root
  if ! [ -x "$chroot_dir/usr/bin/dpkg-buildpackage" ] || ! [ -x "$chroot_dir/usr/bin/cargo" ]; then
    die "no Debian $suite build chroot at $chroot_dir (run .ci/setup-packaging.sh)"
  fi
  debdir=$chroot_dir/build/mdtune
  rm -rf "$debdir" && mkdir -p "$debdir"
  tar -C "$debdir" -xzf "$src"
  tar -C "$debdir/$name" -xzf "$vendor"
  cp -r packaging/debian "$debdir/$name/debian"
  echo "build.sh: dpkg-buildpackage $(dpkg --print-architecture) in $suite ($(chroot "$chroot_dir" rustc --version | cut -d' ' -f1-2)), offline"
  # A network namespace of its own (nothing but a loopback) and a mount namespace for /proc.
  # shellcheck disable=SC2016 # expanded by the inner sh
  unshare --net --mount --fork sh -c '
    mount -t proc proc "$1/proc" &&
    exec chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/build LANG=C.UTF-8 \
      SOURCE_DATE_EPOCH="$2" sh -c "cd /build/mdtune/$3 && dpkg-buildpackage -b -us -uc"' \
    _ "$chroot_dir" "$mtime" "$name" >"$log" 2>&1 ||
    { tail -n 30 "$log" >&2; die "dpkg-buildpackage in $suite failed (log: $log)"; }
  mkdir -p "$dest"
  rm -f "$dest"/*.deb
  cp "$debdir"/*.deb "$dest/"
  rm -rf "$debdir"
}
if [ "$deb" = 1 ]; then
  command -v unshare >/dev/null || die "unshare (util-linux) is missing"
  for suite in ${MDTUNE_DEB_SUITES:-bookworm trixie}; do
    case $suite in
      bookworm) deb_build bookworm "$out" ;;
      *) deb_build "$suite" "$out/$suite" ;;
    esac
  done
fi

echo "build.sh: packages in ${out#"$repo"/}/:"
# shellcheck disable=SC2012 # only lists the packages for the reader
(cd "$out" && ls -1 ./*.rpm ./*.deb ./*/*.deb ./*.tar.gz 2>/dev/null | sed 's,^\./,  ,')
