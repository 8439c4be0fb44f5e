#!/usr/bin/env bash
# Packs the SUSE Manager / Uyuni formula and the Salt modules where a Salt master keeps custom
# ones, as one tarball to unpack at / (paths relative to it):
#
#   packaging/salt-bundle.sh OUT.tar.gz [MTIME]
#
#   srv/salt/mdtune/                              the formula's states (salt://mdtune)
#   srv/salt/_modules/, _states/, _wrapper/       the modules (salt://_modules/mdtune.py, ...)
#   srv/formula_metadata/mdtune/                  form.yml, metadata.yml, pillar.example
#   var/cache/salt/master/extmods/wrapper/        the salt-ssh wrapper, where salt-ssh loads it
#                                                 (the master's default extension_modules)
#
# On a plain Salt master: `tar -xzf mdtune-salt-VERSION.tar.gz -C /`. On SUSE Manager 5 / Uyuni
# 2024.08+ the server container keeps only its volumes, and every path above is on one
# (/srv/salt, /srv/formula_metadata, /var/cache): `mgrctl cp` puts the tarball into the
# container and `mgrctl exec` unpacks it (docs/install.md). tests/salt/volumes.sh checks the
# paths against the server's volume list. Every file is a real file (no link), mode 0644, owned
# by root. MTIME (seconds since the epoch) makes the tarball reproducible.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: packaging/salt-bundle.sh OUT.tar.gz [MTIME]}
mtime=${2:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || stat -c %Y "$repo/Cargo.toml")}
die() { echo "salt-bundle: $*" >&2; exit 1; }

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
for f in suma/states/mdtune/init.sls suma/metadata/mdtune/form.yml suma/metadata/mdtune/metadata.yml \
  suma/metadata/mdtune/pillar.example salt/_modules/mdtune.py salt/_states/mdtune.py salt/_wrapper/mdtune.py; do
  [ -f "$repo/module_utils/$f" ] || die "missing module_utils/$f"
done
mkdir -p "$tree/srv/salt" "$tree/srv/formula_metadata" "$tree/var/cache/salt/master/extmods/wrapper"
cp -RL "$repo/module_utils/suma/states/mdtune" "$tree/srv/salt/mdtune"
cp -RL "$repo/module_utils/suma/metadata/mdtune" "$tree/srv/formula_metadata/mdtune"
for kind in _modules _states _wrapper; do
  mkdir -p "$tree/srv/salt/$kind"
  cp -L "$repo/module_utils/salt/$kind/"*.py "$tree/srv/salt/$kind/"
done
cp -L "$repo/module_utils/salt/_wrapper/mdtune.py" "$tree/var/cache/salt/master/extmods/wrapper/mdtune.py"
find "$tree" -type d -exec chmod 0755 {} + && find "$tree" -type f -exec chmod 0644 {} +
[ -z "$(find "$tree" -type l)" ] || die "links in the bundle"
mkdir -p "$(dirname "$out")"
# Only the files and the directories mdtune owns: unpacking at / must not reset the modes of
# /srv, /var or /var/cache.
(cd "$tree" && find srv/salt/mdtune srv/formula_metadata/mdtune -print0 && find . -type f ! -path './srv/salt/mdtune/*' \
  ! -path './srv/formula_metadata/mdtune/*' -printf '%P\0') | LC_ALL=C sort -zu |
  tar -C "$tree" --no-recursion --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime=@"$mtime" -czf "$out" --null -T -
