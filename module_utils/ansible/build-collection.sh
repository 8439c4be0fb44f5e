#!/usr/bin/env bash
# Assembles the Ansible collection mdtune.mdraid from the release binaries and builds its tarball.
#
#   module_utils/ansible/build-collection.sh [--out DIR] [--no-cargo] [--small]
#       [--release --repository URL --documentation URL --issues URL]
#
# Result (DIR defaults to target/ansible-collection):
#   DIR/ansible_collections/mdtune/mdraid/   the collection tree (ansible-test and ansible-lint run here)
#   DIR/mdtune-mdraid-VERSION.tar.gz         what `ansible-galaxy collection install` takes
#
# --release is a build to publish: it needs the three URLs that galaxy.yml carries (source
# repository, documentation, issue tracker), which only the publisher knows, and fails without them.
# It also carries all three architectures, x86_64, aarch64 and ppc64le: it builds the static
# binary of each one target/ lacks (packaging/targets.sh static_build; the cross targets and the
# ppc64le toolchain come from .ci/setup-packaging.sh), and with --no-cargo, or when a build
# fails, it refuses, naming the missing architectures. Without --release the URLs are optional
# and the collection carries the architectures target/ has (a build for testing).
#
# Binaries: one per CPU architecture, each the first of these that exists, in binaries/mdtune-<arch>:
#   x86_64   target/x86_64-unknown-linux-musl, target/x86_64-unknown-linux-gnu, target/release
#   aarch64  target/aarch64-unknown-linux-musl, target/aarch64-unknown-linux-gnu
#   ppc64le  target/powerpc64le-unknown-linux-musl, target/powerpc64le-unknown-linux-gnu (static glibc)
# (.../release/mdtune each, under $CARGO_TARGET_DIR when set; bench/build-release.sh builds them). A binary that needs a glibc newer
# than 2.31 is refused (a plain `cargo build` on this Debian needs 2.34): build it statically
# (musl) or with bench/build-release.sh.
#
# Modules (plugins/modules/): each is a link to a binary plus a documentation-only NAME.py, the
# layout under which `ansible-doc --list` and Galaxy list a binary module (docs/ansible.md,
# "The collection's layout"):
#   mdtune, mdtune_info                 their action plugins (plugins/action/) run the build for
#                                       the host's CPU, mdtune_<arch>, or fail naming the
#                                       architecture and the builds carried; the links go to the
#                                       x86_64 build (the first built architecture otherwise)
#   mdtune_<arch>, mdtune_info_<arch>   every architecture's build, under its own name
# mdtune_info is the same binary; called by that name it only reports (state=query).
#
# --small builds the binaries with std rebuilt for size (packaging/targets.sh small_static_build:
# stable Rust with RUSTC_BOOTSTRAP=1 and rust-src; about 30% smaller, docs/performance.md).
# --no-cargo skips `cargo build` and packs the binaries already in target/. ansible-galaxy,
# antsibull-changelog and python3 (with PyYAML) come from $MDTUNE_VENV (default: .venv in the
# checkout); .ci/setup-python.sh installs them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/target/ansible-collection
cargo_build=1
release=0
small=0
# shellcheck disable=SC2034 # set by printf -v and read as ${!key} below
repository="" documentation="" issues=""
die() { echo "build-collection: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --no-cargo) cargo_build=0; shift ;;
    --release) release=1; shift ;;
    --small) small=1; shift ;;
    --repository|--documentation|--issues)
      [ $# -ge 2 ] || die "$1 needs a URL"
      printf -v "${1#--}" '%s' "$2"; shift 2 ;;
    --repository=*|--documentation=*|--issues=*)
      key=${1%%=*}; printf -v "${key#--}" '%s' "${1#*=}"; shift ;;
    -h|--help) sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-collection: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
for key in repository documentation issues; do
  url=${!key}
  if [ -n "$url" ] && ! [[ $url =~ ^https?://[^[:space:]]+$ ]]; then
    die "--$key: '$url' is not an http(s) URL"
  fi
  if [ "$release" = 1 ] && [ -z "$url" ]; then
    die "--release needs --repository, --documentation and --issues (galaxy.yml's URLs); missing: --$key"
  fi
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

namespace=mdtune
name=mdraid
version=$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\(.*\)"/\1/p}' "$repo/Cargo.toml" | head -1)
[ -n "$version" ] || die "no version in $repo/Cargo.toml"

venv=${MDTUNE_VENV:-$repo/.venv}
# antsibull-changelog runs ansible-doc to list the new modules: the venv's, when there is one.
[ -d "$venv/bin" ] && export PATH=$venv/bin:$PATH
tool() { # NAME -> path in the venv or on PATH
  if [ -x "$venv/bin/$1" ]; then echo "$venv/bin/$1"; else command -v "$1" || true; fi
}
galaxy=$(tool ansible-galaxy) changelog=$(tool antsibull-changelog) python=$(tool python3)
for t in galaxy changelog; do
  [ -n "${!t}" ] || die "${t/galaxy/ansible-galaxy} not found in $venv or PATH; run .ci/setup-python.sh"
done
"$python" -c 'import yaml' 2>/dev/null || die "$python has no PyYAML; run .ci/setup-python.sh"

target=${CARGO_TARGET_DIR:-$repo/target}
if [ "$cargo_build" = 1 ]; then
  (cd "$repo" && cargo build --release --quiet)
  # The x86_64 binary the collection prefers: static (packaging/targets.sh); with --small, std
  # rebuilt for size (the opt-in recipe: RUSTC_BOOTSTRAP=1 and rust-src).
  # shellcheck source=../../packaging/targets.sh
  . "$repo/packaging/targets.sh"
  if [ "$small" = 1 ]; then build_x86_64() { small_x86_64_build; }; else build_x86_64() { static_build x86_64; }; fi
  if ! (cd "$repo" && build_x86_64); then
    echo "build-collection: no static x86_64 build; packing what target/ has" >&2
  fi
fi

# The CPU an ELF binary is for, in ansible_architecture's spelling.
elf_arch() {
  case $(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n') in
    3e00) echo x86_64 ;;
    b700) echo aarch64 ;;
    1500) echo ppc64le ;;
    *) echo unknown ;;
  esac
}
# True if and only if an ELF binary asks for a program interpreter (PT_INTERP): it is dynamically
# linked. A static binary (musl, or static glibc as the ppc64le build) needs no libc on the host.
is_dynamic() { "$python" "$here/elf_interp.py" "$1"; }
# The newest glibc symbol version a dynamically linked binary needs (empty for a static binary).
glibc_needed() {
  is_dynamic "$1" || return 0
  { LC_ALL=C grep -aoE 'GLIBC_[0-9]+\.[0-9]+(\.[0-9]+)?' "$1" || true; } | sort -uV | tail -1 | sed 's/^GLIBC_//'
}
max_glibc=2.31
newest_src=$(find "$repo/src" "$repo/Cargo.toml" -type f -printf '%T@\n' 2>/dev/null | sort -n | tail -1)

# candidates ARCH: sets candidates, the Rust targets whose build of ARCH the collection takes.
candidates() {
  case $1 in
    x86_64) candidates=(x86_64-unknown-linux-musl x86_64-unknown-linux-gnu .) ;;
    aarch64) candidates=(aarch64-unknown-linux-musl aarch64-unknown-linux-gnu) ;;
    ppc64le) candidates=(powerpc64le-unknown-linux-musl powerpc64le-unknown-linux-gnu) ;;
  esac
}
# find_bin ARCH: prints the first candidate binary of ARCH in target/, or nothing.
find_bin() {
  local triple f
  candidates "$1"
  for triple in "${candidates[@]}"; do
    if [ "$triple" = . ]; then f=$target/release/mdtune; else f=$target/$triple/release/mdtune; fi
    if [ -f "$f" ]; then echo "$f"; return; fi
  done
}

# A build to publish carries every architecture: build what is missing, or refuse.
if [ "$release" = 1 ]; then
  missing=()
  for arch in x86_64 aarch64 ppc64le; do
    [ -n "$(find_bin "$arch")" ] && continue
    if [ "$cargo_build" = 1 ]; then
      echo "build-collection: --release: building the static $arch binary" >&2
      # shellcheck source=../../packaging/targets.sh
      . "$repo/packaging/targets.sh"
      if [ "$small" = 1 ]; then b=small_static_build; else b=static_build; fi
      (cd "$repo" && "$b" "$arch") || echo "build-collection: the $arch build failed" >&2
    fi
    [ -n "$(find_bin "$arch")" ] || missing+=("$arch")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "--release carries x86_64, aarch64 and ppc64le; no binary for: ${missing[*]}" \
      "(build them with bench/build-release.sh, or run without --no-cargo on a machine set up" \
      "by .ci/setup-packaging.sh)"
  fi
fi

# Picks, checks and records each architecture's binary: arches[i] and bins[i].
arches=() bins=()
for arch in x86_64 aarch64 ppc64le; do
  candidates "$arch"
  bin=$(find_bin "$arch")
  [ -n "$bin" ] || continue
  rel=${bin#"$repo"/}
  [ "$(elf_arch "$bin")" = "$arch" ] || die "$rel is not an $arch ELF binary ($(elf_arch "$bin"))"
  need=$(glibc_needed "$bin")
  if [ -n "$need" ] && [ "$(printf '%s\n' "$need" "$max_glibc" | sort -V | tail -1)" != "$max_glibc" ]; then
    die "$rel needs glibc $need; the collection takes binaries that need at most glibc $max_glibc" \
      "(SLES 15 SP2, RHEL 8 and older hosts have no newer one). Build it statically" \
      "(rustup target add ${candidates[0]}; cargo build --release --target ${candidates[0]})" \
      "or run bench/build-release.sh."
  fi
  if [ -n "$newest_src" ] && [ "${newest_src%.*}" -gt "$(stat -c %Y "$bin")" ]; then
    echo "build-collection: warning: $rel is older than the sources (rebuild it)" >&2
  fi
  arches+=("$arch") bins+=("$bin")
done
[ ${#arches[@]} -gt 0 ] || die "no release binary in $target (see --help); run cargo build --release --target x86_64-unknown-linux-musl"
primary=${arches[0]}

coll=$out/ansible_collections/$namespace/$name
rm -rf "$coll"
mkdir -p "$coll/plugins/modules" "$coll/meta" "$coll/tests/sanity" "$coll/binaries"

{
  sed "s/@VERSION@/$version/" "$here/collection/galaxy.yml.in"
  for key in repository documentation issues; do
    [ -z "${!key}" ] || echo "$key: ${!key}"
  done
} > "$coll/galaxy.yml"
cp "$here/collection/README.md" "$coll/README.md"
cp "$repo/LICENSE" "$coll/LICENSE"

modules=()
module() { # NAME ARCH: a link to the binary and the documentation-only NAME.py
  ln -s "../../binaries/mdtune-$2" "$coll/plugins/modules/$1"
  "$python" "$here/moduledocs.py" "$1" py "$coll/plugins/modules/$1.py"
  modules+=("$1")
}
for i in "${!arches[@]}"; do
  install -m 0644 "${bins[$i]}" "$coll/binaries/mdtune-${arches[$i]}"
done
module mdtune "$primary"
module mdtune_info "$primary"
for arch in "${arches[@]}"; do
  module "mdtune_$arch" "$arch"
  module "mdtune_info_$arch" "$arch"
done

# The action plugins that make mdtune and mdtune_info run the build for the host's CPU, what
# they decide (plugin_utils), and their unit tests (ansible-test units).
cp -r "$here/collection/plugins/action" "$here/collection/plugins/plugin_utils" "$coll/plugins/"
cp -r "$here/collection/tests/unit" "$coll/tests/unit"
find "$coll/plugins" "$coll/tests" -name __pycache__ -prune -exec rm -rf {} +

# Every ansible-core the collection is tested with (tests/ansible/sanity.sh runs ansible-test
# sanity and units on each): 2.19, 2.20 and 2.21, the current releases.
sanity_versions="2.19 2.20 2.21"
cat > "$coll/meta/runtime.yml" <<EOF
---
# ansible-test sanity and units pass on ansible-core ${sanity_versions// /, } (tests/ansible in the
# mdtune repository); the playbook suite runs on 2.19.
requires_ansible: ">=2.19.0"
EOF

# The changelog: the fragments of the versions not yet released become this version's entry.
cp -r "$here/collection/changelogs" "$coll/changelogs"
if ! grep -q "^  $version:" "$coll/changelogs/changelog.yaml" 2>/dev/null; then
  (cd "$coll" && ANSIBLE_COLLECTIONS_PATH=$out "$changelog" release --version "$version" --date "$(date -u +%F)" >/dev/null) ||
    die "antsibull-changelog release failed in $coll"
fi
(cd "$coll" && "$changelog" generate >/dev/null) || die "antsibull-changelog generate failed in $coll"
[ -s "$coll/CHANGELOG.md" ] || die "antsibull-changelog wrote no CHANGELOG.md"

# ansible-test sanity ignores, one file per ansible-core version (ansible-test reads only its
# own). Each entry carries its reason after '#'. The binaries need none: ansible-test skips links
# in plugins/modules.
for v in $sanity_versions; do
  for m in "${modules[@]}"; do
    echo "plugins/modules/$m.py validate-modules:missing-gplv3-license # the collection is Apache-2.0 (LICENSE), so its module docs carry no GPLv3 header"
  done > "$coll/tests/sanity/ignore-$v.txt"
done

rm -f "$out/$namespace-$name-"*.tar.gz
"$galaxy" collection build --force --output-path "$out" "$coll" >/dev/null
tarball=$out/$namespace-$name-$version.tar.gz
[ -f "$tarball" ] || die "ansible-galaxy did not produce $tarball"
size=$(stat -c %s "$tarball")
if [ "$size" -gt $((20 * 1024 * 1024)) ]; then
  die "$tarball is $size bytes; Galaxy rejects collections over 20 MB"
fi
echo "collection: $coll"
for i in "${!arches[@]}"; do
  need=$(glibc_needed "${bins[$i]}")
  echo "binary: binaries/mdtune-${arches[$i]} from ${bins[$i]#"$repo"/} (${need:+needs glibc }${need:-static})"
done
echo "modules: ${modules[*]}"
echo "tarball: $tarball ($((size / 1024)) KiB)"
