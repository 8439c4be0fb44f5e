#!/usr/bin/env bash
# The fuzz suite: builds the cargo-fuzz targets in fuzz/ (nightly, AddressSanitizer, debug
# assertions so integer overflow panics) and runs each one for a bounded time from its committed
# seed corpus, printing the executions per target. Any crash, panic, timeout or out-of-memory
# fails the target; so does a target that managed fewer than FUZZ_MIN_EXECS executions.
# Crash inputs are kept in fuzz/artifacts/<target>/ (reproduce with
# `cargo +nightly fuzz run -a <target> <file>`); the scratch corpora too, in
# ${TMPDIR:-/tmp}/mdtune-fuzz.*, when a target failed (tests/lib.sh's scratch). Ends with one line:
# "N passed, N failed", a check per target.
#
# Environment: FUZZ_SECONDS (per target, default 30), FUZZ_MIN_EXECS (default 10000),
# FUZZ_TARGETS (default: every target in fuzz/Cargo.toml), FUZZ_JOBS (targets run at once,
# default 2: CI has two cores). About 2 minutes of building from cold, then 1.5 minutes of fuzzing.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
repo=$PWD
# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"

seconds=${FUZZ_SECONDS:-30}
min_execs=${FUZZ_MIN_EXECS:-10000}
targets=${FUZZ_TARGETS:-spec_text spec_structured sysfs_values plan}
jobs=${FUZZ_JOBS:-2}

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  not_ok "fuzz: the nightly toolchain is installed" \
    "install it with: rustup toolchain install nightly (or run .ci/setup-fuzz.sh)"
  finish
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  not_ok "fuzz: cargo-fuzz is installed" "install it with: cargo install cargo-fuzz --locked (or run .ci/setup-fuzz.sh)"
  finish
fi

t0=$SECONDS
echo "fuzz: building the targets (cargo +nightly fuzz build -a)"
if ! (cd fuzz && cargo +nightly fuzz build -a); then
  not_ok "fuzz: the targets build (cargo +nightly fuzz build -a)" "see the build's output above"
  finish
fi
echo "fuzz: built in $((SECONDS - t0)) s"

scratch fuzz

# One target: runs libFuzzer for $seconds, leaves its log and exit status in $tmp.
fuzz_one() {
  local t=$1
  mkdir -p "$tmp/$t"
  local start=$SECONDS
  # New inputs go to the scratch corpus (first directory); the committed seeds stay as they are.
  local seeds=()
  [ ! -d "fuzz/corpus/$t" ] || seeds=("corpus/$t")
  (cd fuzz && cargo +nightly fuzz run -a "$t" "$tmp/$t" "${seeds[@]}" -- \
      -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1) >"$tmp/$t.log" 2>&1
  echo $? >"$tmp/$t.rc"
  echo $((SECONDS - start)) >"$tmp/$t.took"
}

for t in $targets; do
  echo "=== fuzz $t: ${seconds} s from $(find "fuzz/corpus/$t" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) seeds"
  fuzz_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait

summary=()
for t in $targets; do
  log="$tmp/$t.log"
  rc=$(cat "$tmp/$t.rc"); took=$(cat "$tmp/$t.took")
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -1)
  execs=${execs:-0}
  if [ "$rc" -ne 0 ]; then
    not_ok "fuzz $t: exit $rc after $execs executions in $took s" \
      "$(grep -E -A2 'panicked at|^==[0-9]+==ERROR|^SUMMARY|Test unit written|^Error' "$log" | head -40 ||
        tail -20 "$log")"
    summary+=("$t: FAILED, $execs executions")
  elif [ "$execs" -lt "$min_execs" ]; then
    not_ok "fuzz $t: only $execs executions in $took s (at least $min_execs wanted)" "$(tail -20 "$log")"
    summary+=("$t: FAILED, $execs executions (< $min_execs)")
  else
    ok "fuzz $t: $execs executions in $took s, no crash"
    summary+=("$t: $execs executions")
  fi
done
echo "fuzz: executions per target: $(IFS=';'; s="${summary[*]}"; echo "${s//;/; }")"
echo "fuzz: suite took $((SECONDS - t0)) s"
finish
