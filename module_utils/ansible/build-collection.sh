#!/usr/bin/env bash
# Assembles the Ansible collection mdtune.mdraid from the release binary and builds its tarball.
#
#   module_utils/ansible/build-collection.sh [--out DIR] [--no-cargo]
#
# Result (DIR defaults to target/ansible-collection):
#   DIR/ansible_collections/mdtune/mdraid/   the collection tree (ansible-test runs here)
#   DIR/mdtune-mdraid-VERSION.tar.gz         what `ansible-galaxy collection install` takes
#
# Binaries (the module is the compiled mdtune itself, no Python wrapper):
#   plugins/modules/mdtune          the primary build: target/x86_64-unknown-linux-musl/release/mdtune
#                                   (static, runs on any x86_64 Linux) when the musl target is
#                                   installed, else target/release/mdtune (needs the build host's
#                                   glibc or newer on the managed hosts)
#   plugins/modules/mdtune_aarch64  target/aarch64-unknown-linux-musl/release/mdtune, when it exists
#   mdtune_x86_64 (meta/runtime.yml) a redirect to mdtune, so that
#                                   `mdtune.mdraid.mdtune_{{ ansible_architecture }}` always resolves
# Each binary gets its sidecar docs (module_utils/ansible/mdtune.yml).
#
# --no-cargo skips `cargo build` and packs the binaries already in target/.
# ansible-galaxy comes from $MDTUNE_VENV (default: .venv in the checkout) or PATH.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/target/ansible-collection
cargo_build=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --no-cargo) cargo_build=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-collection: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

namespace=mdtune
name=mdraid
version=$(sed -n '/^\[package\]/,/^\[/{s/^version *= *"\(.*\)"/\1/p}' "$repo/Cargo.toml" | head -1)
[ -n "$version" ] || { echo "build-collection: no version in $repo/Cargo.toml" >&2; exit 1; }

venv=${MDTUNE_VENV:-$repo/.venv}
galaxy=$venv/bin/ansible-galaxy
[ -x "$galaxy" ] || galaxy=$(command -v ansible-galaxy || true)
if [ -z "$galaxy" ]; then
  echo "build-collection: ansible-galaxy not found in $venv or PATH; run .ci/setup-python.sh" \
    "(or pip install 'ansible-core>=2.14')" >&2
  exit 1
fi

musl_x86=$repo/target/x86_64-unknown-linux-musl/release/mdtune
musl_arm=$repo/target/aarch64-unknown-linux-musl/release/mdtune
native=$repo/target/release/mdtune
if [ "$cargo_build" = 1 ]; then
  (cd "$repo" && cargo build --release --quiet)
  if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
    (cd "$repo" && cargo build --release --quiet --target x86_64-unknown-linux-musl)
  fi
fi

# The CPU an ELF binary is for, in ansible_architecture's spelling.
elf_arch() {
  case $(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n') in
    3e00) echo x86_64 ;;
    b700) echo aarch64 ;;
    *) echo unknown ;;
  esac
}

# A binary older than the newest source file was not rebuilt: say so rather than ship it silently.
newest_src=$(find "$repo/src" "$repo/Cargo.toml" -type f -printf '%T@\n' 2>/dev/null | sort -n | tail -1)
stale_check() {
  local bin=$1 t
  t=$(stat -c %Y "$bin")
  if [ -n "$newest_src" ] && [ "${newest_src%.*}" -gt "$t" ]; then
    echo "build-collection: warning: $bin is older than the sources (rebuild it)" >&2
  fi
}

if [ -x "$musl_x86" ]; then primary=$musl_x86
elif [ -x "$native" ]; then primary=$native
else
  echo "build-collection: no release binary ($native); run cargo build --release" >&2; exit 1
fi
primary_arch=$(elf_arch "$primary")
[ "$primary_arch" != unknown ] || { echo "build-collection: $primary is not an x86_64/aarch64 ELF binary" >&2; exit 1; }
stale_check "$primary"

coll=$out/ansible_collections/$namespace/$name
rm -rf "$coll"
mkdir -p "$coll/plugins/modules" "$coll/meta" "$coll/tests/sanity"

sed "s/@VERSION@/$version/" "$here/collection/galaxy.yml.in" > "$coll/galaxy.yml"
cp "$here/collection/README.md" "$coll/README.md"
install -m 0755 "$primary" "$coll/plugins/modules/mdtune"
cp "$here/mdtune.yml" "$coll/plugins/modules/mdtune.yml"

modules=(mdtune)
extra=()
if [ -x "$musl_arm" ] && [ "$(elf_arch "$musl_arm")" = aarch64 ] && [ "$primary_arch" != aarch64 ]; then
  stale_check "$musl_arm"
  extra+=(aarch64)
  install -m 0755 "$musl_arm" "$coll/plugins/modules/mdtune_aarch64"
  sed -e 's/^  module: mdtune$/  module: mdtune_aarch64/' \
      -e 's/^\(  short_description: .*\)$/\1 (aarch64 build)/' \
      "$here/mdtune.yml" > "$coll/plugins/modules/mdtune_aarch64.yml"
  modules+=(mdtune_aarch64)
fi

cat > "$coll/meta/runtime.yml" <<EOF
---
# Sidecar docs for binary modules need ansible-core 2.14 or later.
requires_ansible: ">=2.14.0"
plugin_routing:
  modules:
    # plugins/modules/mdtune is the $primary_arch build: give it its architecture's name too, so that
    # mdtune.mdraid.mdtune_{{ ansible_architecture }} resolves on every supported host.
    mdtune_$primary_arch:
      redirect: $namespace.$name.mdtune
EOF

# ansible-test sanity ignores for ansible-core 2.19 (the only version this is tested with). The file
# may hold no comment-only lines, so each entry carries its reason after '#'.
{
  for m in "${modules[@]}"; do
    echo "plugins/modules/$m validate-modules!skip # a compiled binary module (Rust): validate-modules can only inspect Python and PowerShell modules and crashes on an ELF file; its docs (plugins/modules/$m.yml) are validated on their own"
    echo "plugins/modules/$m.yml validate-modules:missing-gplv3-license # the collection is Apache-2.0 (galaxy.yml), so it has no GPLv3 header; the test expects one in every module file, sidecar docs included"
  done
} > "$coll/tests/sanity/ignore-2.19.txt"

rm -f "$out/$namespace-$name-"*.tar.gz
"$galaxy" collection build --force --output-path "$out" "$coll" >/dev/null
tarball=$out/$namespace-$name-$version.tar.gz
[ -f "$tarball" ] || { echo "build-collection: ansible-galaxy did not produce $tarball" >&2; exit 1; }
size=$(stat -c %s "$tarball")
if [ "$size" -gt $((20 * 1024 * 1024)) ]; then
  echo "build-collection: $tarball is $size bytes; Galaxy rejects collections over 20 MB" >&2; exit 1
fi
echo "collection: $coll"
echo "binaries: mdtune ($primary_arch, from ${primary#"$repo"/})${extra:+, mdtune_aarch64}"
echo "tarball: $tarball ($((size / 1024)) KiB)"
