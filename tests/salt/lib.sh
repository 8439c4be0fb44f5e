# shellcheck shell=bash
# Shared by tests/salt/run.sh and tests/fleet/run.sh (sourced, with $repo set): the check
# counters and the mdtune binary under test.

: "${repo:?tests/salt/lib.sh is sourced with \$repo set to the repository}"

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   - $1"; }
not_ok() {
  failed=$((failed + 1)); echo "FAIL - $1"; shift
  [ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/       /'
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

# Sets $bin: MDTUNE_BIN when given (not built), else the release build. Fails and exits when
# there is no binary.
mdtune_binary() {
  if [ -n "${MDTUNE_BIN:-}" ]; then
    bin=$(cd "$(dirname "$MDTUNE_BIN")" && pwd)/$(basename "$MDTUNE_BIN")
    echo "# MDTUNE_BIN is set: testing $bin (not building)"
  else
    echo "# cargo build --release"
    if ! (cd "$repo" && cargo build --release --quiet); then
      not_ok "cargo build --release" "the release binary does not build; nothing else was run"
      finish
    fi
    bin=${CARGO_TARGET_DIR:-$repo/target}/release/mdtune
    case $bin in /*) ;; *) bin=$repo/$bin ;; esac
  fi
  if [ ! -x "$bin" ]; then
    not_ok "mdtune binary exists" "no executable at $bin"
    finish
  fi
}
