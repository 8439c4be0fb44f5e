# shellcheck shell=bash
# The suites' shared scaffolding, sourced by their scripts (bash) with $repo set to the
# repository:
#
#   ok NAME                 counts a passed check: "ok   - NAME"
#   not_ok NAME [DETAIL...] counts a failed one: "FAIL - NAME", then each DETAIL indented
#   check NAME COMMAND...   runs COMMAND, its output captured: ok when it succeeds, else not_ok
#                           with that output
#   step NAME COMMAND...    runs COMMAND with its output shown, between "--- NAME" and
#                           "--- NAME: ok" or "--- NAME: FAILED"; counted as a check
#   finish                  prints the failed checks' names, then the closing line
#                           "N passed, N failed", and exits 0 only when none failed
#   scratch NAME            makes the suite's scratch directory $tmp under ${TMPDIR:-/tmp}
#                           (mdtune-NAME.XXXXXX) and removes it on exit, unless a check failed or
#                           MDTUNE_KEEP_TMP is set: then it is kept and its path printed
#   at_exit COMMAND         runs COMMAND (one word: a function or program) on exit, before the
#                           scratch directory goes; the last registered runs first
#   setsid_bg COMMAND...    starts COMMAND in the background in a process group of its own
#                           (setsid), remembered for stop_groups; its pid is in $!
#   stop_groups             stops every group setsid_bg started: TERM, up to 10 s, then KILL
#   mdtune_binary           sets $bin: MDTUNE_BIN when given, else the release build (built);
#                           without a binary, fails and finishes
#
# An interrupt (INT, TERM) counts as a failure and exits 130, through the same exit handling.

: "${repo:?tests/lib.sh is sourced with \$repo set to the repository}"

passed=0
failed=0
failures=()
ok() { passed=$((passed + 1)); echo "ok   - $1"; }
not_ok() {
  failed=$((failed + 1)); failures+=("$1"); echo "FAIL - $1"; shift
  [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/       /'
}
check() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name" "$out"; fi
}
step() {
  local name=$1; shift
  echo "--- $name"
  if "$@"; then
    passed=$((passed + 1)); echo "--- $name: ok"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "--- $name: FAILED"
  fi
}
finish() {
  [ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[@]}"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

# --- the scratch directory and what runs on exit -----------------------------------------------
tmp=
_exit_hooks=()
at_exit() { _exit_hooks=("$1" "${_exit_hooks[@]}"); }
# shellcheck disable=SC2317 # run by the EXIT trap
_on_exit() {
  local hook
  for hook in "${_exit_hooks[@]}"; do "$hook"; done
  [ -n "$tmp" ] && [ -d "$tmp" ] || return 0
  if [ "$failed" -eq 0 ] && [ -z "${MDTUNE_KEEP_TMP:-}" ]; then rm -rf "$tmp"
  else echo "# kept for inspection: $tmp"; fi
}
trap _on_exit EXIT
trap 'echo "# interrupted"; failed=$((failed + 1)); exit 130' INT TERM
scratch() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/mdtune-$1.XXXXXX") || { not_ok "a scratch directory"; finish; }
}

# --- processes in groups of their own ----------------------------------------------------------
pgids=()
setsid_bg() { setsid "$@" & pgids+=("$!"); }
stop_groups() {
  local g
  for g in "${pgids[@]}"; do kill -TERM -- "-$g" 2>/dev/null; done
  for _ in $(seq 1 50); do
    local alive=0
    for g in "${pgids[@]}"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.2
  done
  for g in "${pgids[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
  pgids=()
}

# --- the binary under test ---------------------------------------------------------------------
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
