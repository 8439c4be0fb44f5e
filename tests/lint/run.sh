#!/usr/bin/env bash
# shellcheck disable=SC2317 # the check functions below are run by tests/lib.sh's step
# The lint suite. Runs every step even when one fails, reports each (tests/lib.sh's step), and
# ends with one line "N passed, N failed" counting steps; exits non-zero if any step failed:
#   fmt          cargo fmt --check
#   clippy       cargo clippy --all-targets -- -D warnings -W clippy::too_many_lines: every lint
#                clippy warns of by default, and no function (tests included) over 100 lines
#                (the threshold in clippy.toml; blank and comment lines do not count)
#   shell        shellcheck on every shell script git tracks: a .sh (or .bash) file, or a file
#                without an ending whose first line is a sh/bash/dash/ksh shebang (.ci/run,
#                tests/vm/init); sourced files are followed (-x; `source=` paths from the
#                script's directory or the repository)
#   ruff         `ruff check` on every Python file git tracks: a .py file, or a file without an
#                ending with a python shebang; rules and target version in ruff.toml. `ruff format`
#                is not enforced (it would rewrite most files).
#   yaml         tests/lint/yaml_parses.py on every .yml/.yaml file git tracks and the form's
#                pillar.example: the module docs, the form, the rules and the playbooks parse (a
#                broken one would otherwise surface minutes later as every Ansible check failing)
#   modules-test tests/lint/test_modules.py, the module checker's self-test
#   modules      tests/lint/modules.py on src/: no import cycle, no file over 400 lines of non-test
#                code
#   unsafe       no `unsafe` in src/ but the crate's #![forbid(unsafe_code)], no extern "C" block
#   targets      `cargo check` of the crate for i686 and armhf (32-bit Linux, whose system call
#                tables rustix keeps): the floor builds for more than the release targets
# Tools: shellcheck from Debian, ruff (pinned) and PyYAML in the venv ${MDTUNE_VENV:-<repo>/.venv}, both
# installed by .ci/setup-lint.sh. A missing tool fails its step and says how to install it.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
repo=$PWD
venv=${MDTUNE_VENV:-$PWD/.venv}
# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"

# tracked KIND: the files git tracks that are KIND (shell or python) scripts, one per line.
tracked() {
  local kind=$1 f line
  while IFS= read -r -d '' f; do
    { [ -f "$f" ] && [ ! -L "$f" ]; } || continue
    case $kind:$f in
      shell:*.sh | shell:*.bash | python:*.py) printf '%s\n' "$f"; continue ;;
    esac
    case ${f##*/} in *.*) continue ;; esac
    line=
    IFS= read -r line <"$f" 2>/dev/null
    case $kind in
      shell) [[ $line =~ ^#!.*[/[:space:]](ba|da|k)?sh([[:space:]]|$) ]] || continue ;;
      python) [[ $line =~ ^#!.*[/[:space:]]python[0-9.]*([[:space:]]|$) ]] || continue ;;
    esac
    printf '%s\n' "$f"
  done < <(git ls-files -z)
}

run_shellcheck() {
  if ! command -v shellcheck >/dev/null; then
    echo "shellcheck is missing: apt-get install shellcheck (or run .ci/setup-lint.sh as root)"
    return 1
  fi
  local files
  mapfile -t files < <(tracked shell)
  [ ${#files[@]} -gt 0 ] || { echo "found no tracked shell scripts"; return 1; }
  echo "shellcheck $(shellcheck --version | sed -n 's/^version: //p') on ${#files[@]} scripts"
  shellcheck --norc -x --source-path=SCRIPTDIR "${files[@]}"
}

run_ruff() {
  local ruff=$venv/bin/ruff
  [ -x "$ruff" ] || ruff=$(command -v ruff) || {
    echo "ruff is missing: .ci/setup-lint.sh installs it into $venv (or: pip install ruff)"
    return 1
  }
  local files pin
  mapfile -t files < <(tracked python)
  [ ${#files[@]} -gt 0 ] || { echo "found no tracked Python files"; return 1; }
  pin=$(sed -n 's/^ruff_version=//p' .ci/setup-lint.sh)
  echo "$("$ruff" --version) on ${#files[@]} files (ruff.toml)"
  [ "$("$ruff" --version)" = "ruff $pin" ] ||
    echo "note: .ci/setup-lint.sh pins ruff $pin; another version may report other findings"
  "$ruff" check --no-cache "${files[@]}"
}

# check_yaml: every tracked YAML file parses (tests/lint/yaml_parses.py).
check_yaml() {
  local py=$venv/bin/python files
  "$py" -c 'import yaml' 2>/dev/null || {
    echo "PyYAML is missing from $venv: run .ci/setup-python.sh (or: $py -m pip install pyyaml)"
    return 1
  }
  mapfile -t files < <(git ls-files '*.yml' '*.yaml' '*/pillar.example')
  "$py" tests/lint/yaml_parses.py "${files[@]}"
}

# check_no_unsafe: `unsafe` appears in src/ only in the forbid attributes, and no `extern "C"`.
check_no_unsafe() {
  local found
  found=$(grep -rn -e 'unsafe' -e 'extern "C"' src fuzz/src | grep -v '#!\[forbid(unsafe_code)\]$')
  [ -z "$found" ] || { echo "unsafe code or a C block in src/:"; echo "$found"; return 1; }
  echo "no unsafe, no extern \"C\" (src/, fuzz/src/)"
}

# check_targets: the crate builds for 32-bit x86 and arm, where its system calls differ.
check_targets() {
  local t ok=0
  for t in i686-unknown-linux-gnu armv7-unknown-linux-gnueabihf; do
    if ! rustup target list --installed 2>/dev/null | grep -qx "$t"; then
      echo "the rust target $t is missing: rustup target add $t (or run .ci/setup-lint.sh)"
      ok=1
      continue
    fi
    cargo check --quiet --lib --bins --target "$t" || { echo "cargo check --target $t failed"; ok=1; }
  done
  return "$ok"
}

step fmt cargo fmt --check
step clippy cargo clippy --all-targets --quiet -- -D warnings -W clippy::too_many_lines
step shell run_shellcheck
step ruff run_ruff
step yaml check_yaml
step modules-test python3 -m unittest discover -s tests/lint -p 'test_*.py'
step modules python3 tests/lint/modules.py src
step unsafe check_no_unsafe
step targets check_targets

finish
