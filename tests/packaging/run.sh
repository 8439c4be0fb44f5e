#!/usr/bin/env bash
# The packaging suite: builds every package with packaging/build.sh and checks them the way a
# fleet would use them.
#   RPMs  file lists (rpm -qpl) against the source tree, dependencies (rpm -qpR), no links,
#         each binary's architecture and static linkage (its size printed), built without an
#         unstable flag, its -debuginfo package, the changelog from mdtune.changes, the vendor
#         tarball holding only the crates the Linux builds use, and a panic under each binary's
#         build flags still one JSON failure object
#         (examples/panic_report, built by the spec's cargo run); installed into a scratch root with
#         `rpm --root` and run from there; the aarch64 and ppc64le binaries run under qemu-user;
#         removed again, leaving nothing; rpmlint 2.10 (from PyPI) with openSUSE's configuration
#         and its spelling check, plus packaging/rpmlint.toml.
#   .deb  built in Debian 12 and 13 chroots with their cargo and rustc 1.85 (Build-Depends
#         checked, offline, no unstable flag), the two with the same files; lintian (no error or
#         warning beyond the justified overrides) on both; `apt install` on this
#         machine, mdtune --version, man -w mdtune, the man page and --help agree with docs/reference.md
#         (usage.sh), a query on a copy of the demo host; `apt remove`, and nothing is left.
#   ppc64le  the packaged binary on a real ppc64le kernel (ppc64le-vm.sh), unless
#         MDTUNE_PACKAGING_VM=0.
# Needs root and .ci/setup-packaging.sh. Ends with one line "N passed, N failed" (tests/lib.sh)
# and exits non-zero on any failure; the scratch directory is kept when a check failed.
# MDTUNE_PACKAGING_BUILD=0 checks the packages already in target/packages (while editing checks).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
repo=$PWD
# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"
. packaging/targets.sh
pkgs=$repo/target/packages
start=$(date +%s)
# all_listed PATHS FILE: every line of PATHS (none is a failure) is a line of FILE.
# shellcheck disable=SC2317 # run by tests/lib.sh's check
all_listed() {
  local f
  [ -n "$1" ] || { echo "no paths"; return 1; }
  while read -r f; do grep -qxF "$f" "$2" || { echo "not in the package: $f"; return 1; }; done <<<"$1"
}
# doc_paths_named MANPAGE_GZ: the paths under /usr/share/doc the man page names, one per line
# (roff's \- undone; a sentence's closing . : or ; is not part of the path).
doc_paths_named() {
  zcat "$1" | grep -o '/usr/share/doc/[^ ,()]*' | sed 's/\\-/-/g; s/[.:;]$//' | sort -u
}

missing=()
for t in rpmbuild rpm rpm2cpio cpio checkbashisms lintian dpkg-buildpackage dh man qemu-aarch64-static \
  qemu-ppc64le-static powerpc64le-linux-gnu-gcc; do
  command -v "$t" >/dev/null || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
  not_ok "the packaging tools are installed" "missing ${missing[*]}: run .ci/setup-packaging.sh (as root)"
  finish
fi
[ "$(id -u)" -eq 0 ] || { not_ok "runs as root" "must run as root (apt install)"; finish; }

version=$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\(.*\)"/\1/p}' Cargo.toml | head -1)

# --- build --------------------------------------------------------------------------------------
t0=$(date +%s)
if [ "${MDTUNE_PACKAGING_BUILD:-1}" = 0 ] && ls "$pkgs"/*.rpm "$pkgs"/*.deb >/dev/null 2>&1; then
  echo "NOTE: MDTUNE_PACKAGING_BUILD=0: checking the packages already in $pkgs, not rebuilding"
elif ! packaging/build.sh; then
  not_ok "packaging/build.sh" "see its output above"
  finish
fi
echo "build: $(($(date +%s) - t0)) s"
scratch packaging

# --- RPMs: what each one holds and needs ---------------------------------------------------------
# files RPM: the regular files and links it holds, sorted.
files() { rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" | grep -v '^d' | cut -d' ' -f2 | sort; }
requires() { rpm -qpR "$1" | grep -v '^rpmlib(' | sort; }

fdir=/usr/share/susemanager/formulas
sdir=/usr/share/susemanager/salt
# The spec's %doc and %license land in SUSE's directories (packaging/build.sh gives rpmbuild
# SUSE's %_defaultdocdir), named after the package alone (the spec's %_docdir_fmt).
docdir=/usr/share/doc/packages
licdir=$(rpm --eval '%{_defaultlicensedir}')
# The mdadm event script's directory: the distribution's %_libexecdir (/usr/libexec here and on
# current SUSE).
libexec=$(rpm --eval '%{_libexecdir}')

for arch in x86_64 aarch64 ppc64le; do
  p=$pkgs/mdtune-$version-1.$arch.rpm
  [ -f "$p" ] || { not_ok "$p was not built"; continue; }
  printf '%s\n' "$docdir/mdtune/README.md" "$docdir/mdtune/reference.md" \
    "$docdir/mdtune/operations.md" "$licdir/mdtune/LICENSE" \
    /usr/sbin/mdtune /usr/share/man/man8/mdtune.8.gz \
    /usr/lib/systemd/system/mdtune-tick.service /usr/lib/systemd/system/mdtune-tick.timer \
    "$libexec/mdtune/mdtune-mdadm-event" \
    /usr/share/mdtune/prometheus/mdtune-rules.yml /usr/share/mdtune/grafana/mdtune.json \
    | sort >"$tmp/want"
  files "$p" >"$tmp/got"
  check "mdtune.$arch.rpm holds /usr/sbin/mdtune, mdtune(8), README, reference.md, operations.md, LICENSE, the tick unit and timer (not mdtune-metrics'), the mdadm event script, the alerting rules and the Grafana dashboard, nothing else" \
    diff -u "$tmp/want" "$tmp/got"
  check "mdtune.$arch.rpm is for $arch" test "$(rpm -qp --qf '%{ARCH}' "$p")" = "$arch"
  # A static binary needs no library: only the dynamic-linker hash style rpm always records,
  # and /bin/sh, for the scriptlets (the tick timer's upgrade swap) and the mdadm event script.
  requires "$p" | grep -v -e '^rtld(GNU_HASH)$' -e '^/bin/sh$' >"$tmp/req"
  check "mdtune.$arch.rpm requires no library (static binary; /bin/sh for its scriptlets and the mdadm event script)$(sed 's/^/ -- but: /' "$tmp/req" | paste -sd' ')" test ! -s "$tmp/req"
  mkdir -p "$tmp/x-$arch" && (cd "$tmp/x-$arch" && rpm2cpio "$p" | cpio -idm --quiet)
  # SUSE's node_exporter reads no textfile directory by default: the unit names the one
  # docs/operations.md tells it to read.
  check "mdtune.$arch.rpm's tick unit writes /var/lib/node_exporter/textfile_collector" \
    grep -qx 'Environment=TEXTFILE_DIR=/var/lib/node_exporter/textfile_collector' "$tmp/x-$arch/usr/lib/systemd/system/mdtune-tick.service"
  check "mdtune.$arch.rpm's tick unit names the mdadm event script where the package has it" \
    grep -q "$libexec/mdtune/mdtune-mdadm-event" "$tmp/x-$arch/usr/lib/systemd/system/mdtune-tick.service"
  check "mdtune.$arch.rpm's mdadm event script is executable" test -x "$tmp/x-$arch$libexec/mdtune/mdtune-mdadm-event"
  # The scriptlets: an upgrade enables mdtune-tick.timer only where mdtune-metrics.timer was
  # enabled, and an erase stops and disables it.
  rpm -qp --scripts "$p" 2>/dev/null >"$tmp/scripts-$arch"
  check "mdtune.$arch.rpm's %post enables mdtune-tick.timer only when mdtune-metrics.timer was enabled; %preun disables it on erase" \
    bash -c "grep -q 'if \[ \"\$1\" -gt 1 \] && \[ -L \"\$old\" \]' '$tmp/scripts-$arch' &&
      grep -q 'enable mdtune-tick.timer' '$tmp/scripts-$arch' &&
      grep -q 'disable --now mdtune-tick.timer' '$tmp/scripts-$arch'"
  # Every path the man page names under /usr/share/doc is a file of this package.
  named=$(doc_paths_named "$tmp/x-$arch/usr/share/man/man8/mdtune.8.gz")
  check "mdtune.$arch.rpm: the man page names its docs where the package has them ($(paste -sd' ' <<<"$named"))" \
    all_listed "$named" "$tmp/got"
  bin=$tmp/x-$arch/usr/sbin/mdtune
  desc=$(file -b "$bin")
  case $arch in
    x86_64) machine='x86-64'; run=() ;;
    aarch64) machine='ARM aarch64'; run=(qemu-aarch64-static) ;;
    ppc64le) machine='64-bit PowerPC'; run=(qemu-ppc64le-static) ;;
  esac
  # shellcheck disable=SC2016 # the inner bash expands $1 and $2
  check "mdtune.$arch.rpm's binary is a static $machine ELF ($(stat -c %s "$bin") bytes)" \
    bash -c '[[ $1 == *"$2"* ]] && [[ $1 == *static* ]]' _ "$desc" "$machine"
  bytes=$(stat -c %s "$bin")
  echo "note: mdtune.$arch.rpm's binary is $bytes bytes ($((bytes / 1024)) KiB; a figure, docs/performance.md)"
  # Built by stable Rust with its precompiled std, debug information kept for -debuginfo.
  # shellcheck disable=SC2016 # the inner bash expands $1
  check "mdtune.$arch.rpm's build used no unstable flag (no RUSTC_BOOTSTRAP, no -Z build-std)" \
    bash -c '! grep -qE "RUSTC_BOOTSTRAP|build-std" "$1"' _ "$repo/target/packaging/rpmbuild-$arch.log"
  dbg=$pkgs/mdtune-debuginfo-$version-1.$arch.rpm
  # shellcheck disable=SC2016 # the inner bash expands $1
  check "mdtune-debuginfo.$arch.rpm holds the binary's debug information" \
    bash -c 'rpm -qpl "$1" | grep -qE "^/usr/lib/debug/usr/sbin/mdtune.*\.debug$"' _ "$dbg"
  check "mdtune.$arch.rpm's changelog is mdtune.changes' ($(rpm -qp --changelog "$p" | grep -c '^\*') entries)" \
    test "$(rpm -qp --changelog "$p" | grep -c '^\*')" = "$(grep -c '^-\{20,\}$' packaging/mdtune.changes)"
  # The spec builds examples/panic_report in the same cargo run as the binary, with the same
  # flags (std rebuilt without its default features): a panic must still end as one JSON failure
  # object with exit status 1.
  static_target "$arch"
  ex=$(find "$repo/target/packaging" -path "*/$TRIPLE/release/examples/panic_report" -type f 2>/dev/null | head -n1)
  if [ -z "$ex" ]; then
    not_ok "mdtune.$arch.rpm: no examples/panic_report for $TRIPLE under target/packaging (the spec's %build makes it)"
  else
    rc=0
    out=$("${run[@]}" "$ex" 2>/dev/null) || rc=$?
    check "mdtune.$arch.rpm: a panic under its build flags ends as one JSON failure object, exit 1${run[*]:+ (under ${run[*]})} (exit $rc)" \
      python3 tests/packaging/checks.py panic-report "$rc" "$out"
  fi
  got=$("${run[@]}" "$bin" --version 2>&1)
  check "mdtune.$arch.rpm's binary runs${run[*]:+ under ${run[*]}}: $got" test "$got" = "mdtune $version"
  cp -a examples/demo-host "$tmp/host-$arch"
  out=$(echo "{\"state\": \"query\", \"root\": \"$tmp/host-$arch\"}" | "${run[@]}" "$bin")
  check "mdtune.$arch.rpm's binary queries the demo host (auto gives md0 8 threads)" \
    python3 tests/packaging/checks.py demo-query "$out"
done

mods=$pkgs/mdtune-salt-modules-$version-1.noarch.rpm
form=$pkgs/mdtune-formula-$version-1.noarch.rpm
# The modules package: every module_utils/salt/_modules|_states|_wrapper file, as a real file.
{
  for f in module_utils/salt/_modules/* module_utils/salt/_states/* module_utils/salt/_wrapper/*; do
    echo "$sdir/${f#module_utils/salt/}"
  done
  echo "$docdir/mdtune-salt-modules/README.md"
  echo "$licdir/mdtune-salt-modules/LICENSE"
} | sort >"$tmp/want"
files "$mods" >"$tmp/got"
check "mdtune-salt-modules holds module_utils/salt/_modules, _states and _wrapper under $sdir" diff -u "$tmp/want" "$tmp/got"
# The formula: every state directory but the module links, the metadata, pillar.example beside it.
{
  for d in module_utils/suma/states/*/; do
    case $(basename "$d") in _*) continue ;; esac
    (cd module_utils/suma/states && find -L "$(basename "$d")" -type f) | sed "s,^,$fdir/states/,"
  done
  (cd module_utils/suma/metadata && find -L mdtune -type f) | sed "s,^,$fdir/metadata/,"
  echo "$fdir/metadata/mdtune/pillar.example"
  echo "$docdir/mdtune-formula/README.md"
  echo "$licdir/mdtune-formula/LICENSE"
} | sort -u >"$tmp/want"
files "$form" >"$tmp/got"
check "mdtune-formula holds the states, form.yml, metadata.yml and pillar.example" diff -u "$tmp/want" "$tmp/got"
for p in "$pkgs"/*.rpm; do
  links=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$p" | grep '^l' || true)
  check "$(basename "$p") holds no symbolic link" test -z "$links"
done
mkdir -p "$tmp/x-noarch" && (cd "$tmp/x-noarch" && for p in "$mods" "$form"; do rpm2cpio "$p" | cpio -idm --quiet; done)
for kind in _modules _states _wrapper; do
  check "the packaged Salt modules ($kind) are module_utils/salt's, byte for byte" \
    diff -r "module_utils/salt/$kind" "$tmp/x-noarch$sdir/$kind"
done
check "the packaged states are module_utils/suma/states/mdtune's" \
  diff -r module_utils/suma/states/mdtune "$tmp/x-noarch$fdir/states/mdtune"
requires "$form" >"$tmp/got"
printf '%s\n' "mdtune = $version" "mdtune-salt-modules = $version" >"$tmp/want"
check "mdtune-formula requires mdtune and mdtune-salt-modules: $(paste -sd, "$tmp/got")" diff -u "$tmp/want" "$tmp/got"
requires "$mods" >"$tmp/got"
check "mdtune-salt-modules requires nothing" test ! -s "$tmp/got"
# The vendor tarball: a directory for each crate of Cargo.lock (not std's), the code only of those
# a Linux build uses; the others (Windows) only their manifest.
mkdir -p "$tmp/vendor" && tar -C "$tmp/vendor" -xzf "$pkgs/vendor.tar.gz"
python3 tests/packaging/checks.py vendor "$tmp/vendor/vendor" Cargo.lock >"$tmp/vendor.txt" 2>&1
check "the vendor tarball holds Cargo.lock's crates, the Windows ones as manifests only ($(tail -n1 "$tmp/vendor.txt"); $(stat -c %s "$pkgs/vendor.tar.gz") bytes)" \
  grep -q ' crates, ' "$tmp/vendor.txt"

rpm -qpl "$pkgs/mdtune-$version-1.src.rpm" | sort >"$tmp/got"
printf '%s\n' "mdtune-$version.tar.gz" mdtune.spec vendor.tar.gz >"$tmp/want"
check "the source RPM holds the spec, the source and the vendored crates" diff -u "$tmp/want" "$tmp/got"
# The OBS package (docs/install.md): exactly what `osc add` takes, and the spec builds a source
# RPM from those files alone, its changelog from mdtune.changes as OBS makes it.
(cd "$pkgs/obs" && ls -1) >"$tmp/got"
printf '%s\n' _service "mdtune-$version.tar.gz" mdtune.changes mdtune.spec vendor.tar.gz >"$tmp/want"
check "target/packages/obs holds the spec, mdtune.changes, _service and the two tarballs" diff -u "$tmp/want" "$tmp/got"
obs=$tmp/obs-top && mkdir -p "$obs/SOURCES" "$obs/SPECS"
cp "$pkgs/obs/"*.tar.gz "$obs/SOURCES/"
{ cat "$pkgs/obs/mdtune.spec"; python3 packaging/changes2spec.py "$pkgs/obs/mdtune.changes"; } >"$obs/SPECS/mdtune.spec"
check "the OBS files alone make the source RPM (rpmbuild -bs)" \
  rpmbuild --define "_topdir $obs" --nodeps -bs "$obs/SPECS/mdtune.spec"
check "_service runs OBS's cargo_vendor on the source tarball into the spec's Source1 (vendor.tar.gz)" \
  python3 tests/packaging/checks.py obs-service "$pkgs/obs/_service" "$pkgs/obs/mdtune.spec"

# --- RPMs: install into a scratch root, run, remove ------------------------------------------------
# The scratch root is a copy of the demo host, so that the installed binary can also be run on
# it with persist, the way a packaged host uses it.
root=$tmp/rpmroot
cp -a examples/demo-host "$root"
(cd "$root" && find . ! -type d | sort) >"$tmp/before"
rpm --root "$root" --initdb
# --nodeps: the scratch root's rpm database has no base system, so rtld(GNU_HASH) (glibc) is not
# provided there; the three packages' dependencies on each other are still resolved.
set_=("$pkgs/mdtune-$version-1.x86_64.rpm" "$mods" "$form")
# (Debian's rpm warns on stderr that it is not Debian's package manager: shown only on failure.)
# --noscripts: the scratch root has no /bin/sh to run mdtune's scriptlets in (they only enable,
# disable and stop the tick timer with systemctl, which it has no systemd for either); they are
# checked by rpm -qp --scripts above.
if rpm --root "$root" --nodeps --noscripts -i "${set_[@]}" 2>"$tmp/rpm-i"; then
  ok "rpm --root installs mdtune, mdtune-salt-modules and mdtune-formula"
  check "rpm -V verifies all three in the scratch root" rpm --root "$root" -V --nodeps mdtune mdtune-salt-modules mdtune-formula
  got=$("$root/usr/sbin/mdtune" --version)
  check "the installed $root/usr/sbin/mdtune runs: $got" test "$got" = "mdtune $version"
  check "the installed formula's files are where Uyuni looks" \
    test -f "$root$fdir/metadata/mdtune/form.yml" -a -f "$root$fdir/metadata/mdtune/pillar.example" \
    -a -f "$root$fdir/states/mdtune/init.sls" -a -f "$root$sdir/_modules/mdtune.py" -a -f "$root$sdir/_states/mdtune.py" \
    -a -f "$root$sdir/_wrapper/mdtune.py"
  check "mdtune cannot be removed while the formula needs it" bash -c "! rpm --root '$root' -e mdtune 2>/dev/null"
  # shellcheck disable=SC2016 # the inner bash expands $1
  check "...and is still installed" bash -c 'rpm --root "$1" -q mdtune >/dev/null' _ "$root"
  # persist by the packaged binary: the rule runs /usr/sbin/mdtune, no second copy is installed,
  # and a revert leaves the packaged binary alone.
  out=$(echo "{\"persist\": true, \"root\": \"$root\"}" | "$root/usr/sbin/mdtune")
  check "persist by the packaged binary succeeds" python3 tests/packaging/checks.py persisted "$out"
  check "its udev rule runs the packaged /usr/sbin/mdtune" \
    grep -q 'RUN+="/usr/sbin/mdtune --udev %k"' "$root/etc/udev/rules.d/90-mdtune.rules"
  check "it installs no second copy in /usr/local/sbin" test ! -e "$root/usr/local/sbin/mdtune"
  out=$(echo "{\"state\": \"reverted\", \"root\": \"$root\"}" | "$root/usr/sbin/mdtune")
  # shellcheck disable=SC2016 # the inner bash expands $1
  check "revert removes the rule and keeps the packaged binary (rpm -V mdtune)" \
    bash -c '[ ! -e "$1/etc/udev/rules.d/90-mdtune.rules" ] && rpm --root "$1" -V --nodeps mdtune' _ "$root"
  if rpm --root "$root" --noscripts -e mdtune-formula mdtune-salt-modules mdtune 2>"$tmp/rpm-e"; then
    ok "rpm -e removes the three"
  else
    not_ok "rpm -e removes the three" "$(cat "$tmp/rpm-e")"
  fi
  # Left: any file (directories aside: a real system's filesystem package owns the parents rpm
  # made) that the demo host did not have, except the rpm database and run/ (the lock and saved
  # originals of mdtune's own runs, not the package's).
  rm -rf "${root:?}$(rpm --eval '%_dbpath')"  # Debian's rpm keeps it in $HOME/.rpmdb
  (cd "$root" && find . ! -type d | sort) >"$tmp/after"
  left=$(comm -13 "$tmp/before" "$tmp/after" | grep -vE '^\./run/' | paste -sd' ' || true)
  check "rpm -e leaves nothing behind but the rpm database${left:+: $left}" test -z "$left"
else
  not_ok "rpm --root installs the RPM set" "$(cat "$tmp/rpm-i")"
fi

# rpmlint as the Open Build Service runs it: 2.10 with openSUSE's configuration and the en_US
# dictionary (its spelling check), plus the project's filters. rpmlint takes one --config, a
# file or a directory of *.toml: both in one directory.
rl=${MDTUNE_PACKAGING_CACHE:-$repo/.cache/packaging}/rpmlint
if [ -x "$rl/venv/bin/rpmlint" ] && [ -f "$rl/configs/openSUSE/opensuse.toml" ]; then
  mkdir -p "$tmp/rpmlint.d"
  cp "$rl"/configs/openSUSE/*.toml "$tmp/rpmlint.d/"
  cp packaging/rpmlint.toml "$tmp/rpmlint.d/mdtune.toml"
  if ! "$rl/venv/bin/python" -c 'import enchant; enchant.Dict("en_US")' 2>/dev/null; then
    not_ok "rpmlint: no en_US dictionary for its spelling check (apt-get install hunspell-en-us libenchant-2-2)"
  elif "$rl/venv/bin/rpmlint" --config "$tmp/rpmlint.d" "$pkgs"/*.rpm >"$tmp/rpmlint" 2>&1 &&
    grep -q '^ */.*/mdtune\.toml$' "$tmp/rpmlint" && grep -q '^ */.*/opensuse\.toml$' "$tmp/rpmlint"; then
    ok "rpmlint $("$rl/venv/bin/rpmlint" --version) with openSUSE's configuration and spelling (filters with reasons in packaging/rpmlint.toml): $(tail -n1 "$tmp/rpmlint" | sed 's/^ *//')"
  else
    not_ok "rpmlint $("$rl/venv/bin/rpmlint" --version 2>&1) with openSUSE's configuration" "$(cat "$tmp/rpmlint")"
  fi
else
  not_ok "rpmlint 2.10 with openSUSE's configuration is not in $rl: run .ci/setup-packaging.sh"
fi

# --- .deb ---------------------------------------------------------------------------------------
deb=$(find "$pkgs" -maxdepth 1 -name "mdtune_$version-1_*.deb" 2>/dev/null | sort | head -n1)
if [ -z "$deb" ]; then
  not_ok "no .deb in $pkgs"
else
  if lintian --pedantic -I --fail-on error,warning "$deb" >"$tmp/lintian" 2>&1; then
    ok "lintian --pedantic: no error or warning beyond the overrides in packaging/debian/mdtune.lintian-overrides"
  else
    not_ok "lintian" "$(cat "$tmp/lintian")"
  fi
  # Built as a distribution builds it: Build-Depends checked (cargo, rustc >= 1.85), Debian's own
  # compiler, no unstable flag, and the same package from Debian 13's stock cargo and rustc.
  check "debian/control declares cargo and rustc (>= 1.85) in Build-Depends" \
    grep -qE '^Build-Depends:.*cargo \(>= 1\.85\) \| cargo-web \(>= 1\.85\), rustc \(>= 1\.85\)' packaging/debian/control
  for suite in bookworm trixie; do
    blog=$repo/target/packaging/dpkg-buildpackage-$suite.log
    # shellcheck disable=SC2016 # the inner bash expands $1
    check "the .deb built in Debian $suite's chroot with its rustc 1.85, Build-Depends checked, no unstable flag" \
      bash -c 'grep -q "dpkg-checkbuilddeps\|dpkg-buildpackage: info: source package mdtune" "$1" &&
        ! grep -qE "RUSTC_BOOTSTRAP|build-std|-d -b|unmet build dependencies" "$1" && grep -q "test result: ok" "$1"' _ "$blog"
  done
  tdeb=$pkgs/trixie/$(basename "$deb")
  if [ -f "$tdeb" ]; then
    check "the Debian 13 build holds the same files as the Debian 12 one" \
      diff <(dpkg-deb -c "$deb" | awk '{print $6}') <(dpkg-deb -c "$tdeb" | awk '{print $6}')
    check "lintian --pedantic on the Debian 13 build: nothing beyond the overrides" \
      lintian --pedantic -I --fail-on error,warning "$tdeb"
  else
    not_ok "no Debian 13 build at $tdeb"
  fi
  # shellcheck disable=SC2016 # the inner bash expands $1
  check "the .deb installs on Debian 12: $(dpkg-deb -f "$deb" Depends)" \
    bash -c 'dpkg-deb -f "$1" Depends | grep -qE "libc6 \(>= 2\.(2[0-9]|3[0-6])\)"' _ "$deb"
  if dpkg-query -W -f='${Status}' mdtune 2>/dev/null | grep -q 'ok installed' || [ -e /usr/sbin/mdtune ]; then
    not_ok "mdtune is already installed on this machine (/usr/sbin/mdtune): the suite installs and removes it itself"
  elif apt-get install -y -q --no-install-recommends "$deb" >"$tmp/dpkg" 2>&1; then
    ok "apt install $(basename "$deb") (docs/install.md's command)"
    got=$(mdtune --version)
    check "mdtune --version from PATH: $got" test "$got" = "mdtune $version" -a "$(command -v mdtune)" = /usr/sbin/mdtune
    got=$(man -w mdtune 2>&1)
    check "man -w mdtune: $got" test "$got" = /usr/share/man/man8/mdtune.8.gz
    MANWIDTH=100 man mdtune 2>/dev/null | col -b >"$tmp/man.txt"
    check "man mdtune renders the usage (mdtune --udev NAME [--root DIR])" grep -q 'mdtune --udev NAME \[--root DIR\]' "$tmp/man.txt"
    check "the man page's usage block, mdtune --help and docs/reference.md agree" tests/packaging/usage.sh /usr/sbin/mdtune
    cp -a examples/demo-host "$tmp/host-deb"
    out=$(echo "{\"state\": \"query\", \"root\": \"$tmp/host-deb\"}" | mdtune)
    check "the installed mdtune queries the demo host" \
      python3 tests/packaging/checks.py installed-query "$out"
    dpkg -L mdtune | sort >"$tmp/deb-files"
    check "dpkg -L mdtune lists mdtune-tick.service and .timer, the mdadm event script, operations.md and the Grafana dashboard" \
      all_listed "$(printf '%s\n' /usr/lib/systemd/system/mdtune-tick.service /usr/lib/systemd/system/mdtune-tick.timer /usr/lib/mdtune/mdtune-mdadm-event /usr/share/doc/mdtune/operations.md.gz /usr/share/mdtune/grafana/mdtune.json)" "$tmp/deb-files"
    check "dpkg -L mdtune lists no mdtune-metrics unit (mdtune-tick's replace them)" \
      bash -c "! grep -q mdtune-metrics '$tmp/deb-files'"
    check "the installed mdadm event script is executable" test -x /usr/lib/mdtune/mdtune-mdadm-event
    named=$(doc_paths_named /usr/share/man/man8/mdtune.8.gz)
    check "the .deb's man page names its docs where the package has them ($(paste -sd' ' <<<"$named"))" \
      all_listed "$named" "$tmp/deb-files"
    apt-get remove -y -q mdtune >/dev/null 2>&1
    left=()
    while read -r f; do
      [ -d "$f" ] && continue
      [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
    done <"$tmp/deb-files"
    [ -d /usr/share/doc/mdtune ] && left+=(/usr/share/doc/mdtune)
    check "apt remove removes every file it installed${left:+ (left: ${left[*]})}" test ${#left[@]} -eq 0
    check "dpkg knows mdtune no more" bash -c "! dpkg-query -W -f='\${Status}' mdtune 2>/dev/null | grep -q installed"
  else
    not_ok "apt install $deb" "$(cat "$tmp/dpkg")"
  fi
fi

# --- ppc64le on a real kernel ----------------------------------------------------------------------
if [ "${MDTUNE_PACKAGING_VM:-1}" = 1 ]; then
  t0=$(date +%s)
  # Its report (the guest's kernel, the boot's time, its own checks) shown as it comes.
  what="ppc64le: the packaged binary on a ppc64le kernel (qemu-system-ppc64 -M pseries, NVMe, raid5, auto)"
  if tests/packaging/ppc64le-vm.sh "$tmp/x-ppc64le/usr/sbin/mdtune"; then ok "$what"; else not_ok "$what"; fi
  echo "ppc64le VM: $(($(date +%s) - t0)) s"
else
  echo "SKIPPED on request (MDTUNE_PACKAGING_VM=0): the ppc64le VM boot"
fi

echo "packaging: $(($(date +%s) - start)) s"
finish
