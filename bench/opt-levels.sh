#!/usr/bin/env bash
# Compares release builds at opt-level 3, 2, "s" and "z" (the rest of [profile.release] as in
# Cargo.toml): size of the static x86_64 musl binary and the scaling benchmark, all four
# interleaved in one run. Writes bench/opt-levels.md. Builds into $TMPDIR/mdtune-opt-levels, so
# target/ is untouched. Usage: bench/opt-levels.sh [bench.py options], e.g. --rounds 5
set -euo pipefail
cd "$(dirname "$0")/.."
out=${MDTUNE_BENCH_OUT:-bench/opt-levels.md}
tdir=${TMPDIR:-/tmp}/mdtune-opt-levels
t=x86_64-unknown-linux-musl
bins=()
rows=""
for level in 3 2 s z; do
  value=$level
  case $level in s | z) value="\"$level\"" ;; esac
  CARGO_TARGET_DIR=$tdir/$level cargo build --release --quiet --target $t \
    --config "profile.release.opt-level=$value"
  bin=$tdir/$level/$t/release/mdtune
  bytes=$(stat -c %s "$bin")
  rows+="| $value | $bytes | $((bytes / 1024)) |"$'\n'
  bins+=(--bin "opt-level $value=$bin")
done
cargo build --release --quiet --example mkroot
preamble="Sizes (static x86_64 musl, stripped):

| opt-level | bytes | KiB |
| --- | ---: | ---: |
$rows"
MDTUNE_BENCH_CMD=bench/opt-levels.sh python3 bench/bench.py "${bins[@]}" --mkroot "${CARGO_TARGET_DIR:-target}/release/examples/mkroot" \
  --sections scaling --out "$out" --title "mdtune: opt-level comparison" --preamble "$preamble" "$@"
