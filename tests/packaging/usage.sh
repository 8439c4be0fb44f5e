#!/usr/bin/env bash
# The man page, `mdtune --help` and docs/reference.md agree: the usage block of the man page's one
# source (packaging/mdtune.8.md, between <!-- usage --> and <!-- /usage -->) must be the binary's
# --help output byte for byte, and docs/reference.md (§1) must carry the same block between the same
# markers.
#
#   tests/packaging/usage.sh BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: usage.sh BINARY}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# block FILE: the fenced block between the usage markers, without the fences.
block() {
  awk -v f="$1" '
    /^<!-- usage -->$/ { inside = 1; n++; next }
    /^<!-- \/usage -->$/ { inside = 0; next }
    inside { print }
    END { if (n != 1) { print f ": expected one <!-- usage --> block, found " n+0 > "/dev/stderr"; exit 1 } }
  ' "$1" | sed '1{/^```/d}; ${/^```$/d}'
}

status=0
"$bin" --help >"$tmp/help"
block packaging/mdtune.8.md >"$tmp/man"
if diff -u --label 'packaging/mdtune.8.md usage block' --label "$bin --help" "$tmp/man" "$tmp/help"; then
  echo "ok: mdtune --help is the man page's usage block"
else
  echo "FAIL: mdtune --help differs from the man page's usage block (edit packaging/mdtune.8.md or the HELP text in src/main.rs)"
  status=1
fi
if ! block docs/reference.md >"$tmp/reference"; then
  echo "FAIL: docs/reference.md has no usage block: paste the one from packaging/mdtune.8.md, markers included"
  status=1
elif diff -u --label 'packaging/mdtune.8.md usage block' --label 'docs/reference.md usage block' "$tmp/man" "$tmp/reference"; then
  echo "ok: docs/reference.md's usage block is the man page's"
else
  echo "FAIL: docs/reference.md's usage block differs from packaging/mdtune.8.md's"
  status=1
fi
exit $status
