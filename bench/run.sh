#!/usr/bin/env bash
# Runs every mdtune benchmark and writes bench/results.md:
#   1. scaling: query and a converged present on hosts of 1, 8, 64 and 256 arrays
#   2. Ansible: mdtune vs the shell idiom vs an empty binary module (and one as big as mdtune
#      that replays its answer), through real ansible-playbook
#   3. Salt: mdtune.managed vs sysfs.present, masterless salt-call, with idempotency
#   4. system calls of a converged run (strace -c) against the minimum the job needs
#   5. the floor: mdtune's query and converged present on 64 arrays against a program that reads
#      exactly what the answer needs (bench/floor/sysfs_floor.rs), bare and fair (with mdtune's
#      listing shortcuts and confinement), side by side: time, CPU, system calls
# Usage: bench/run.sh [bench.py options], e.g. --sections scaling,syscalls --rounds 5
# Prints the Ansible cost per task (mdtune against an empty binary module, and the answer's size
# in bytes) and the floor section on the terminal too. MDTUNE_BENCH_BUILD=x86_64 builds only the
# shipped x86_64 binary (minutes less; the binaries table then has one row).
# Needs: Rust with the x86_64-unknown-linux-musl target, python3, strace, and the venv with
# ansible-core and salt (${MDTUNE_VENV:-.venv}; .ci/setup-python.sh creates it). Takes about
# ten minutes on 2 CPUs; the fake roots go to /dev/shm when it has 4 GB free (about 1.7 GB used).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MDTUNE_VENV:-$PWD/.venv}
out=${MDTUNE_BENCH_OUT:-bench/results.md}

if [ "${MDTUNE_BENCH_BUILD:-all}" = x86_64 ]; then
  # shellcheck source=packaging/targets.sh
  . packaging/targets.sh
  small_x86_64_build
  built=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/mdtune
  # The two lines build-release.sh prints for a build, which the binaries table reads.
  sizes="x86_64-unknown-linux-musl: $built $(stat -c %s "$built") bytes
  file: $(file -b "$built")"
else
  sizes=$(bench/build-release.sh)
fi
echo "$sizes" >&2
cargo build --release --quiet --example mkroot

work=$(mktemp -d "${TMPDIR:-/tmp}/mdtune-bench-bin.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A copy, so a concurrent cargo build cannot swap the binary mid-run.
cp "${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/mdtune" "$work/mdtune"
cp "${CARGO_TARGET_DIR:-target}/release/examples/mkroot" "$work/mkroot"


profile=$(sed -n '/^\[profile.release\]/,/^\[/p' Cargo.toml | grep -v -e '^\[' -e '^#' | grep . | paste -sd ';' | sed 's/;/; /g')
preamble="Binaries (\`bench/build-release.sh\`; release profile: $profile):

| target | bytes | KiB | file |
| --- | ---: | ---: | --- |
$(echo "$sizes" | awk '/^[a-z0-9_]+-unknown-linux-[a-z]+: /{t=$1; sub(":","",t); b=$3; getline; sub(/^ *file: /,""); sub(/, BuildID\[sha1\]=[0-9a-f]+/,""); printf "| %s | %s | %d | %s |\n", t, b, b/1024, $0}')"

python3 bench/bench.py --bin "mdtune=$work/mdtune" --mkroot "$work/mkroot" \
  --venv "$venv" --salt-modules "$PWD/module_utils/salt" --out "$out" --preamble "$preamble" "$@"

# The Ansible cost per task (section 2) and mdtune against the floor (section 5), on the
# terminal too.
sed -n '/^\*\*Cost per task\*\*/,/^Per task within/p' "$out"
sed -n '/^## 5\./,/^System calls by name/p' "$out"
