#!/usr/bin/env bash
# The whole test suite: the README's test command, and what .ci/run calls.
# Runs every suite even when one fails, then prints one closing line "N passed, N failed"
# counting suites. A suite whose tools are missing fails and says how to install them.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
export MDTUNE_VENV=${MDTUNE_VENV:-$PWD/.venv}

passed=0; failed=0; failures=()
suite() {
  local name=$1; shift
  echo "=== suite: $name"
  local t0=$SECONDS
  if "$@"; then
    passed=$((passed + 1)); echo "=== suite $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "=== suite $name: FAILED ($((SECONDS - t0)) s)"
  fi
}

suite lint       tests/lint/run.sh
suite cargo-test cargo test
suite release    bench/build-release.sh
for s in ${MDTUNE_SUITES:-ansible salt fleet monitoring packaging vm fuzz}; do
  suite "$s" "tests/$s/run.sh"
done

[ ${#failures[@]} -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
