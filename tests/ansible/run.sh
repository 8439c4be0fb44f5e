#!/usr/bin/env bash
# shellcheck disable=SC2317  # test functions are called through t(), which shellcheck cannot follow
# The Ansible suite: the mdtune binary driven by real ansible-core (ansible-playbook, ansible-doc,
# ansible-galaxy, ansible-test) against fake sysfs roots copied from examples/demo-host, and the
# built collection checked by the ecosystem's own tools (ansible-doc --list as Galaxy runs it,
# ansible-lint --profile production, ansible-test sanity, antsibull-changelog in the build).
#
#   tests/ansible/run.sh            from any directory; builds the release binary itself
#
# Tools come from ${MDTUNE_VENV:-<checkout>/.venv} (.ci/setup-python.sh creates it); when they are
# missing the suite fails and says so. Everything the suite and Ansible write (HOME, local and
# remote temp, collections, fake roots) goes to one temporary directory (under /dev/shm when it is
# writable), removed at the end unless a test failed or MDTUNE_KEEP_TMP is set (tests/lib.sh's
# scratch); cargo writes target/ as usual.
# Closes with "N passed, N failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
demo=$repo/examples/demo-host
sidecar=$repo/module_utils/ansible/mdtune.yml
books=$here/playbooks
t0=$SECONDS

# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"
# lib.sh's finish, after the suite's time.
finish_suite() { echo "ansible suite: $((SECONDS - t0)) s"; finish; }

missing=()
for tool in ansible-playbook ansible-doc ansible-galaxy ansible-test ansible-lint antsibull-changelog python3; do
  [ -x "$venv/bin/$tool" ] || missing+=("$venv/bin/$tool")
done
for tool in cargo chattr; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  not_ok "tools missing" "tests/ansible: missing ${missing[*]}" \
    "  run .ci/setup-python.sh (creates $venv with ansible-core 2.19, ansible-lint, antsibull-changelog)," \
    "  or set MDTUNE_VENV;" \
    "  cargo comes with Rust (rustup), chattr with e2fsprogs"
  finish_suite
fi

# The fake roots add up to ~45,000 small files: on tmpfs (/dev/shm) creating and removing them takes
# seconds, on a loaded VM disk a minute. MDTUNE_TEST_TMP picks another parent directory.
if [ -n "${MDTUNE_TEST_TMP:-}" ]; then parent=$MDTUNE_TEST_TMP
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then parent=/dev/shm
else parent=${TMPDIR:-/tmp}; fi
TMPDIR=$parent scratch ansible
immutable=()
# Undo chattr +i (rollback and staged tests) so the directory can be removed.
undo_immutable() { [ ${#immutable[@]} -eq 0 ] || chattr -i "${immutable[@]}" 2>/dev/null; }
at_exit undo_immutable
mkdir -p "$tmp"/{home,local,remote,library,roots,logs,collections}

# --- helpers ------------------------------------------------------------------------------
log=""
# t NAME FUNCTION: runs one test, its output into a log shown only when it fails.
t() {
  local name=$1; shift
  log=$tmp/logs/$(echo "$name" | tr -c 'A-Za-z0-9\n' '_').log
  local start=$SECONDS
  if "$@" > "$log" 2>&1; then ok "$name ($((SECONDS - start)) s)"
  elif [ -s "$log" ]; then not_ok "$name" "($((SECONDS - start)) s; the last 60 lines of its log:)" "$(tail -60 "$log")"
  else not_ok "$name" "($((SECONDS - start)) s; no output)"; fi
}
fail() { echo "FAIL: $*"; return 1; }

# What the suite must leave as it found it in the checkout (it writes only to $tmp and target/).
watched=(examples/demo-host examples/ansible module_utils/ansible tests/ansible)
git_before=$(git -C "$repo" status --porcelain --ignored -- "${watched[@]}" 2>&1)

# --- build (before HOME moves: cargo and rustup find their toolchains through it) ---------
build() {
  (cd "$repo" && cargo build --release) || return 1
  # The collection prefers the static musl build: rebuild it too when the target is installed.
  if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
    (cd "$repo" && cargo build --release --target x86_64-unknown-linux-musl) || return 1
  fi
  # The aarch64 build, real: the collection's plain module names must pick it on an aarch64 host
  # (the CPU test below runs it under qemu-user). Its target and linker: .ci/setup-packaging.sh.
  # shellcheck source=../../packaging/targets.sh
  (cd "$repo" && . packaging/targets.sh && static_build aarch64) ||
    fail "the static aarch64 build failed (run .ci/setup-packaging.sh for its Rust target)" || return 1
  cp "$repo/target/release/mdtune" "$sidecar" "$tmp/library/"
  # mdtune_info is the same binary under its own name, with its own docs.
  ln -s mdtune "$tmp/library/mdtune_info"
  "$venv/bin/python3" "$repo/module_utils/ansible/moduledocs.py" mdtune_info yml "$tmp/library/mdtune_info.yml"
}
t "cargo build --release" build
if [ ! -x "$tmp/library/mdtune" ]; then
  not_ok "remaining tests not run" "no binary: the remaining tests cannot run"
  finish_suite
fi

# Ansible writes only under $tmp, reads no configuration but ours, and finds the module through
# ANSIBLE_LIBRARY (the examples/ansible test covers library/, the collection test the collection).
cat > "$tmp/ansible.cfg" <<EOF
[defaults]
stdout_callback = ansible.builtin.default
retry_files_enabled = false
nocolor = true
interpreter_python = $venv/bin/python3
EOF
export HOME=$tmp/home ANSIBLE_HOME=$tmp/home/.ansible ANSIBLE_CONFIG=$tmp/ansible.cfg
export ANSIBLE_LOCAL_TEMP=$tmp/local ANSIBLE_REMOTE_TMP=$tmp/remote ANSIBLE_LIBRARY=$tmp/library
export ANSIBLE_COLLECTIONS_PATH=$tmp/collections ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
export PYTHONDONTWRITEBYTECODE=1
unset ANSIBLE_INVENTORY ANSIBLE_ROLES_PATH ANSIBLE_VAULT_PASSWORD_FILE
cd "$tmp" || exit 1

# --- fake roots and checks -------------------------------------------------------------------
# A fresh copy of the demo host.
newroot() { local r=$tmp/roots/$1; rm -rf "$r"; mkdir -p "$r"; cp -a "$demo/." "$r/"; echo "$r"; }
# Every file and link under a root with content and mtime, and every directory, except the lock
# (run/mdtune.lock, and run/ when a run had to create it): taking the lock is not a change.
snapshot() {
  (cd "$1" && find . -path ./run/mdtune.lock -prune -o \( -type f -o -type l \) -print0 | sort -z |
    xargs -0 stat -c '%n %Y.%y %s' && find . -path ./run/mdtune.lock -prune -o -type f -print0 |
    sort -z | xargs -0 md5sum && find . -type d ! -path ./run | sort)
}
md() { tr -d '\n' < "$1/sys/block/$2/md/$3"; }
expect_md() { # ROOT ARRAY ATTR VALUE
  local got; got=$(md "$1" "$2" "$3")
  [ "$got" = "$4" ] || fail "$2/md/$3 is '$got', expected '$4'"
}
inv() { # HOST-NAME ROOT -> inventory file for one local host
  local f=$tmp/inv-$1.ini
  echo "$1 ansible_connection=local mdtune_root=$2" > "$f"; echo "$f"
}
play() { "$venv/bin/ansible-playbook" "$@"; }
# PLAY RECAP line of a host: "changed=N failed=N" check.
recap() { # LOGFILE HOST CHANGED
  grep -E "^$2 +: ok=[0-9]+ +changed=$3 +unreachable=0 +failed=0" "$1" >/dev/null ||
    fail "$2: expected changed=$3 failed=0 in the recap: $(grep -E "^$2 " "$1")"
}


# --- 1-4: the community matrix on one root --------------------------------------------------
R=$(newroot matrix); I=$(inv matrix "$R")
s0=$tmp/matrix.0; snapshot "$R" > "$s0"

check_mode_reports_changed_and_writes_nothing() {
  play -i "$I" "$books/tune.yml" --check -e expect_changed=true || return 1
  expect_md "$R" md0 group_thread_cnt 0 && expect_md "$R" md0 stripe_cache_size 256 &&
    expect_md "$R" md2 group_thread_cnt 0 && expect_md "$R" md1 sync_speed_min "1000 (system)" || return 1
  snapshot "$R" | diff "$s0" - || fail "check mode wrote to the fake root"
}
t "1. check mode reports changed and writes nothing" check_mode_reports_changed_and_writes_nothing

real_run_changes_and_values_are_in_place() {
  play -i "$I" "$books/tune.yml" -e expect_changed=true || return 1
  expect_md "$R" md0 group_thread_cnt 8 && expect_md "$R" md0 stripe_cache_size 4096 &&
    expect_md "$R" md2 group_thread_cnt 16 && expect_md "$R" md3 group_thread_cnt 0 &&
    expect_md "$R" md1 sync_speed_min 50000 && expect_md "$R" md1 sync_speed_max 500000 &&
    expect_md "$R" md3 stripe_cache_size 256
}
t "2. a real run reports changed and the values are in place" real_run_changes_and_values_are_in_place
s2=$tmp/matrix.2; snapshot "$R" > "$s2"

check_mode_again_reports_unchanged() {
  play -i "$I" "$books/tune.yml" --check -e expect_changed=false || return 1
  snapshot "$R" | diff "$s2" - || fail "check mode wrote to the fake root"
}
t "3. check mode again reports unchanged" check_mode_again_reports_unchanged

real_run_again_is_unchanged_and_writes_nothing() {
  play -i "$I" "$books/tune.yml" -e expect_changed=false || return 1
  snapshot "$R" | diff "$s2" - || fail "a second identical run wrote to the fake root (content or mtime)"
}
t "4. a real run again reports unchanged and writes nothing" real_run_again_is_unchanged_and_writes_nothing

# The quick path's playbook (docs/ansible.md step 4) on a host with no Python: no facts, a binary
# module. Then a bare YAML off for thread_policy and group_thread_cnt.
quick_path_needs_no_python_and_takes_a_bare_off() {
  local r; r=$(newroot quick)
  play -i "$(inv quick "$r")" "$books/quickstart.yml" -e ansible_python_interpreter=/nonexistent/python3 ||
    return 1
  expect_md "$r" md0 stripe_cache_size 4096 && expect_md "$r" md0 group_thread_cnt 0 &&
    expect_md "$r" md2 group_thread_cnt 0
}
t "the quick path's playbook runs without Python on the host; a bare YAML off is off" \
  quick_path_needs_no_python_and_takes_a_bare_off

# --- 5: failures ----------------------------------------------------------------------------
failures_are_failed_tasks_naming_the_setting() {
  local r; r=$(newroot failures); local s; s=$(snapshot "$r")
  play -i "$(inv failures "$r")" "$books/failures.yml" || return 1
  diff <(echo "$s") <(snapshot "$r") || fail "a failed run wrote to the fake root"
}
t "5a. bad value, unknown option, unknown array, inapplicable setting: failed tasks naming it" \
  failures_are_failed_tasks_naming_the_setting

failed_write_rolls_back() {
  local r; r=$(newroot rollback)
  local before; before=$(cd "$r" && find sys proc -type f -print0 | sort -z | xargs -0 md5sum)
  # EPERM on write, even for root: the kernel refusing a value, as far as mdtune can tell.
  immutable+=("$r/sys/block/md3/md/group_thread_cnt")
  chattr +i "$r/sys/block/md3/md/group_thread_cnt" || fail "chattr +i not supported on $tmp's filesystem"
  play -i "$(inv rollback "$r")" "$books/rollback.yml" || return 1
  chattr -i "$r/sys/block/md3/md/group_thread_cnt"
  diff <(echo "$before") <(cd "$r" && find sys proc -type f -print0 | sort -z | xargs -0 md5sum) ||
    fail "values not restored after the failed write"
}
t "5b. a failed write fails the task, names the setting and rolls back" failed_write_rolls_back

# --- 6: --diff ------------------------------------------------------------------------------
diff_shows_old_and_new() {
  local r; r=$(newroot diff); local i; i=$(inv diff "$r")
  play -i "$i" "$books/tune.yml" --check --diff -e expect_changed=true || return 1
  for line in '-group_thread_cnt: 0' '+group_thread_cnt: 8' '-stripe_cache_size: 256' '+stripe_cache_size: 4096' \
              '+group_thread_cnt: 16'; do
    grep -qxF -- "$line" "$log" || fail "--check --diff output lacks the line '$line'"
  done
  grep -qE -- '^--- before: md0' "$log" || fail "--diff output lacks a 'before: md0' header"
  play -i "$i" "$books/tune.yml" --diff -e expect_changed=true || return 1
  play -i "$i" "$books/tune.yml" --diff -e expect_changed=false > "$tmp/diff-again.log" || return 1
  ! grep -qE '^[-+]group_thread_cnt' "$tmp/diff-again.log" || fail "--diff shows a change on an unchanged run"
}
t "6. --diff shows old -> new (and nothing once converged)" diff_shows_old_and_new

# --- 7: a fleet of 20 hosts, forks 10 -------------------------------------------------------
fleet_of_20_converges() {
  local f=$tmp/fleet.ini n r
  echo "[fleet]" > "$f"
  for n in $(seq -w 1 20); do
    r=$(newroot "host$n")
    # Every other host has 4 CPUs online: auto caps the thread count at the CPUs (md0 4, md2 4).
    if [ $((10#$n % 2)) -eq 0 ]; then
      echo 0-3 > "$r/sys/devices/system/cpu/online"
      echo "host$n ansible_connection=local mdtune_root=$r expect_md0=4 expect_md2=4" >> "$f"
    else
      echo "host$n ansible_connection=local mdtune_root=$r" >> "$f"
    fi
  done
  play -i "$f" -f 10 "$books/tune.yml" -e expect_changed=true > "$tmp/fleet1.log" || { cat "$tmp/fleet1.log"; return 1; }
  play -i "$f" -f 10 "$books/tune.yml" -e expect_changed=false > "$tmp/fleet2.log" || { cat "$tmp/fleet2.log"; return 1; }
  for n in $(seq -w 1 20); do
    recap "$tmp/fleet1.log" "host$n" 1 && recap "$tmp/fleet2.log" "host$n" 0 || return 1
    r=$tmp/roots/host$n
    if [ $((10#$n % 2)) -eq 0 ]; then expect_md "$r" md0 group_thread_cnt 4 || return 1
    else expect_md "$r" md0 group_thread_cnt 8 && expect_md "$r" md2 group_thread_cnt 16 || return 1; fi
    expect_md "$r" md0 stripe_cache_size 4096 || return 1
  done
  echo "20 hosts converged; second run changed nothing"
}
t "7. 20 hosts (local, own root each), forks 10: every host converges" fleet_of_20_converges

# --- query, persist, revert ----------------------------------------------------------------
query_persist_revert() {
  local r; r=$(newroot lifecycle)
  play -i "$(inv lifecycle "$r")" "$books/lifecycle.yml" || return 1
  expect_md "$r" md0 group_thread_cnt 0 && expect_md "$r" md0 stripe_cache_size 256 || return 1
  [ ! -e "$r/etc/udev/rules.d" ] || [ -z "$(ls -A "$r/etc/udev/rules.d")" ] ||
    fail "reverted, but udev rules remain: $(ls "$r/etc/udev/rules.d")"
  [ ! -e "$r/usr/local/sbin/mdtune" ] || fail "reverted, but usr/local/sbin/mdtune remains"
}
t "query + assert, persist, reverted" query_persist_revert

# --- docs -----------------------------------------------------------------------------------
docs_match_the_module() {
  local r; r=$(newroot docs)
  play -i "$(inv docs "$r")" "$books/docs.yml" -e mdtune_sidecar="$sidecar" \
    -e mdtune_info_sidecar="$tmp/library/mdtune_info.yml"
}
t "sidecar docs and the binary agree (options, defaults, return keys)" docs_match_the_module

ansible_doc_renders_the_module() {
  "$venv/bin/ansible-doc" -M "$tmp/library" mdtune > "$tmp/doc.txt" 2>&1 || { cat "$tmp/doc.txt"; return 1; }
  for word in thread_policy group_thread_cnt stripe_cache_size sync_speed_max speed_limit_max persist \
              reverted 'RETURN VALUES' rolled_back EXAMPLES 'hana_data'; do
    grep -q -- "$word" "$tmp/doc.txt" || fail "ansible-doc output lacks '$word'"
  done
  ! grep -qiE '^\[?(ERROR|WARNING)' "$tmp/doc.txt" || { grep -iE 'ERROR|WARNING' "$tmp/doc.txt"; fail "ansible-doc complained"; }
  "$venv/bin/ansible-doc" -M "$tmp/library" -j mdtune | "$venv/bin/python3" "$repo/tests/ansible/doc_checks.py" attributes
}
t "8a. ansible-doc -M <dir> mdtune renders the module" ansible_doc_renders_the_module

# --- examples/ansible (library/ next to the playbook) -----------------------------------------
example_playbook_converges() {
  local r; r=$(newroot example); local ex=$repo/examples/ansible
  local git0; git0=$(git -C "$repo" status --porcelain --ignored -- examples/demo-host examples/ansible 2>&1)
  [ -x "$ex/library/mdtune" ] || fail "examples/ansible/library/mdtune does not resolve to an executable"
  ANSIBLE_LIBRARY='' play -i "$ex/inventory.ini" "$ex/site.yml" -e mdtune_root="$r" > "$tmp/ex1.log" || { cat "$tmp/ex1.log"; return 1; }
  ANSIBLE_LIBRARY='' play -i "$ex/inventory.ini" "$ex/site.yml" -e mdtune_root="$r" > "$tmp/ex2.log" || { cat "$tmp/ex2.log"; return 1; }
  recap "$tmp/ex1.log" demo 1 && recap "$tmp/ex2.log" demo 0 || return 1
  expect_md "$r" md0 group_thread_cnt 8 || return 1
  ANSIBLE_LIBRARY='' play -i "$ex/inventory.ini" "$ex/revert.yml" -e mdtune_root="$r" || return 1
  expect_md "$r" md0 group_thread_cnt 0 || return 1
  # Without mdtune_root the demo refuses to run (it must never tune the machine it runs on).
  if ANSIBLE_LIBRARY='' play -i "$ex/inventory.ini" "$ex/site.yml" > "$tmp/ex3.log" 2>&1; then
    fail "site.yml ran without mdtune_root"
  fi
  grep -q 'mdtune_root' "$tmp/ex3.log" || { cat "$tmp/ex3.log"; fail "the refusal does not name mdtune_root"; }
  ANSIBLE_LIBRARY='' "$venv/bin/ansible-doc" -M "$ex/library" mdtune | grep -q thread_policy ||
    fail "ansible-doc -M examples/ansible/library mdtune"
  [ "$(git -C "$repo" status --porcelain --ignored -- examples/demo-host examples/ansible 2>&1)" = "$git0" ] ||
    fail "the example wrote into the checkout: $(git -C "$repo" status --porcelain --ignored -- examples/demo-host examples/ansible)"
}
t "examples/ansible: library/ placement, converges, second run unchanged, revert" example_playbook_converges

# --- the collection ---------------------------------------------------------------------------
# The URLs a release build needs (only the publisher knows the real ones).
urls=(--repository https://git.example.org/mdtune --documentation https://git.example.org/mdtune/docs/ansible.md
      --issues https://git.example.org/mdtune/issues)
coll=$tmp/build/ansible_collections/mdtune/mdraid
# arch_copy DIR TRIPLE MACHINE: DIR/TRIPLE/release/mdtune, a copy of the static x86_64 binary with
# the ELF machine field MACHINE (hex: b7 aarch64, 15 ppc64le). The collection's build reads that
# field; nothing here runs such a copy.
arch_copy() {
  mkdir -p "$1/$2/release"
  cp "$repo/target/x86_64-unknown-linux-musl/release/mdtune" "$1/$2/release/mdtune" || return 1
  printf '%b' "\\x$3\\x00" | dd of="$1/$2/release/mdtune" bs=1 seek=18 conv=notrunc status=none
}
# A release build carries x86_64, aarch64 and ppc64le: the builds in target/, and for an
# architecture not built there a stand-in made by arch_copy.
release_target=$tmp/release-target
collection_builds_installs_and_runs() {
  local t triple machine
  for t in x86_64-unknown-linux-musl: aarch64-unknown-linux-musl:b7 powerpc64le-unknown-linux-gnu:15; do
    triple=${t%:*} machine=${t#*:}
    if [ -f "$repo/target/$triple/release/mdtune" ]; then
      mkdir -p "$release_target/$triple/release"
      cp "$repo/target/$triple/release/mdtune" "$release_target/$triple/release/mdtune"
    elif [ -n "$machine" ]; then
      echo "no $triple build in target/: the release build takes a stand-in"
      arch_copy "$release_target" "$triple" "$machine" || return 1
    fi
  done
  CARGO_TARGET_DIR=$release_target MDTUNE_VENV=$venv "$repo/module_utils/ansible/build-collection.sh" \
    --out "$tmp/build" --no-cargo --release "${urls[@]}" || return 1
  local tarball; tarball=$(ls "$tmp"/build/mdtune-mdraid-*.tar.gz) || return 1
  tar -tzvf "$tarball" | awk '{print $1, $6, $7, $8}' | sort -k2 > "$tmp/tar.txt"
  for f in MANIFEST.json FILES.json README.md LICENSE CHANGELOG.md changelogs/changelog.yaml meta/runtime.yml \
           binaries/mdtune-x86_64 plugins/modules/mdtune.py plugins/modules/mdtune_info.py tests/sanity/ignore-2.19.txt \
           tests/sanity/ignore-2.20.txt tests/sanity/ignore-2.21.txt plugins/action/mdtune.py \
           plugins/action/mdtune_info.py plugins/plugin_utils/builds.py tests/unit/plugins/action/test_mdtune.py; do
    grep -qE "^-\S* $f$" "$tmp/tar.txt" || fail "$f missing from $tarball"
  done
  # The modules are links to the binaries, so that ansible-doc --list and ansible-test skip the ELF files.
  for m in mdtune mdtune_info mdtune_x86_64 mdtune_info_x86_64; do
    grep -qE "^l\S* plugins/modules/$m -> ../../binaries/mdtune-x86_64$" "$tmp/tar.txt" ||
      fail "plugins/modules/$m is not a link to ../../binaries/mdtune-x86_64 in $tarball"
  done
  ! grep -q 'validate-modules!skip' "$coll/tests/sanity/ignore-2.19.txt" || fail "ignore-2.19.txt still skips validate-modules"
  # The release carries every architecture, with its modules.
  local arch
  for arch in aarch64 ppc64le; do
    { grep -qE "^l\S* plugins/modules/mdtune_$arch -> ../../binaries/mdtune-$arch$" "$tmp/tar.txt" &&
      grep -qE "^-\S* plugins/modules/mdtune_info_$arch.py$" "$tmp/tar.txt"; } ||
      fail "the release collection lacks mdtune_$arch"
  done
  # With --no-cargo, a release build whose target/ lacks an architecture is refused, naming it.
  mkdir -p "$tmp/x86-only/x86_64-unknown-linux-musl/release"
  cp "$repo/target/x86_64-unknown-linux-musl/release/mdtune" "$tmp/x86-only/x86_64-unknown-linux-musl/release/"
  if CARGO_TARGET_DIR=$tmp/x86-only MDTUNE_VENV=$venv "$repo/module_utils/ansible/build-collection.sh" \
       --out "$tmp/build-x86" --no-cargo --release "${urls[@]}" > "$tmp/x86-only.log" 2>&1; then
    fail "a --release build with the x86_64 binary alone succeeded"
  fi
  cat "$tmp/x86-only.log"
  grep -q 'no binary for: aarch64 ppc64le' "$tmp/x86-only.log" || fail "the refusal does not name aarch64 and ppc64le"
  ! ls "$tmp"/build-x86/*.tar.gz 2>/dev/null || fail "a tarball was written"
  "$venv/bin/ansible-galaxy" collection install -p "$tmp/collections" "$tarball" || return 1
  "$venv/bin/ansible-doc" mdtune.mdraid.mdtune > "$tmp/cdoc.txt" || return 1
  { grep -q 'mdtune.mdraid.mdtune' "$tmp/cdoc.txt" && grep -q thread_policy "$tmp/cdoc.txt"; } ||
    fail "ansible-doc mdtune.mdraid.mdtune does not render"
  local r; r=$(newroot collection)
  ANSIBLE_LIBRARY='' play -i "$(inv collection "$r")" "$books/collection.yml"
}
t "8b. collection: release build, install, ansible-doc, FQCN, mdtune_info and per-arch names" \
  collection_builds_installs_and_runs

# One module name on every CPU: the action plugins of mdtune and mdtune_info run the build for
# the host's architecture: asked with uname -m (native), reported as aarch64 (arm: the real
# aarch64 build runs, under qemu-user through binfmt_misc), or s390x (no build: both fail naming
# it and the builds carried). -vvv shows which build Ansible copied to each host.
plain_names_pick_the_build_for_the_cpu() {
  local bm=/proc/sys/fs/binfmt_misc/qemu-aarch64
  grep -qs '^enabled' "$bm" ||
    fail "no binfmt_misc entry for aarch64 ($bm): run .ci/setup-ansible.sh (it registers qemu-user-static's)" || return 1
  file -b "$tmp/collections/ansible_collections/mdtune/mdraid/binaries/mdtune-aarch64" | grep -q "ARM aarch64" ||
    fail "the installed collection's aarch64 build is not an aarch64 binary: $(file -b "$coll/binaries/mdtune-aarch64")" || return 1
  local f=$tmp/arch.ini
  {
    echo "native ansible_connection=local mdtune_root=$(newroot arch-native)"
    echo "arm ansible_connection=local mdtune_root=$(newroot arch-arm) ansible_architecture=aarch64"
    echo "s390 ansible_connection=local mdtune_root=$(newroot arch-s390) ansible_architecture=s390x"
  } >"$f"
  ANSIBLE_LIBRARY='' play -vvv -i "$f" "$books/arch.yml" >"$tmp/arch.log" 2>&1 || { tail -n 80 "$tmp/arch.log"; return 1; }
  grep -E 'TASK \[|^(ok|changed|failed|fatal)' "$tmp/arch.log"
  local host build
  for host in native:x86_64 arm:aarch64; do
    build=${host#*:} host=${host%:*}
    grep -qE "<$host> PUT .*AnsiballZ_mdtune_$build( |\$)" "$tmp/arch.log" ||
      fail "$host: Ansible did not copy the $build build (AnsiballZ_mdtune_$build)" || return 1
    grep -qE "<$host> PUT .*AnsiballZ_mdtune_info_$build( |\$)" "$tmp/arch.log" ||
      fail "$host: Ansible did not copy the $build build of mdtune_info" || return 1
  done
  ! grep -qE '<s390> PUT ' "$tmp/arch.log" || fail "s390: something was copied to a host without a build"
  expect_md "$tmp/roots/arch-arm" md0 stripe_cache_size 4096 && expect_md "$tmp/roots/arch-native" md0 stripe_cache_size 4096
}
t "one module name on every CPU: x86_64 (uname -m), aarch64 (its build under qemu-user), s390x refused" \
  plain_names_pick_the_build_for_the_cpu

# What Galaxy's importer does (galaxy_importer/loaders/doc_string.py): list the modules with
# ansible-doc --list, then load each one's docs. A module the list drops shows on Galaxy as missing.
ansible_doc_lists_every_module() {
  local expected=(mdtune mdtune_info) arch b
  for b in "$coll/binaries"/mdtune-*; do
    [ -e "$b" ] || continue
    arch=${b##*/mdtune-}; expected+=("mdtune_$arch" "mdtune_info_$arch")
  done
  ANSIBLE_LIBRARY='' "$venv/bin/ansible-doc" -t module -l mdtune.mdraid > "$tmp/list.txt" 2>&1 || { cat "$tmp/list.txt"; return 1; }
  cat "$tmp/list.txt"
  ! grep -qiE 'WARNING|ERROR' "$tmp/list.txt" || fail "ansible-doc -l warned"
  local m
  for m in "${expected[@]}"; do
    grep -qE "^mdtune\.mdraid\.$m +\S" "$tmp/list.txt" || fail "ansible-doc -l mdtune.mdraid does not list $m"
  done
  [ "$(wc -l < "$tmp/list.txt")" -eq ${#expected[@]} ] || fail "expected ${#expected[@]} modules: ${expected[*]}"
  ANSIBLE_LIBRARY='' "$venv/bin/ansible-doc" -t module --json "${expected[@]/#/mdtune.mdraid.}" |
    "$venv/bin/python3" "$repo/tests/ansible/doc_checks.py" listed ${#expected[@]}
}
t "ansible-doc -l mdtune.mdraid lists every module, and each one's docs load (Galaxy's import)" \
  ansible_doc_lists_every_module

# Galaxy itself: galaxy-importer (its own venv, see .ci/setup-python.sh) imports the release
# tarball as Galaxy does on upload (metadata, changelog, ansible-doc) and loads every module. Its
# own ansible-lint run is switched off: the next test runs ansible-lint with the stricter profile.
galaxy_importer_loads_every_module() {
  local gi=${MDTUNE_IMPORTER_VENV:-$venv-galaxy-importer}
  [ -x "$gi/bin/python3" ] && "$gi/bin/python3" -c 'import galaxy_importer' 2>/dev/null ||
    fail "galaxy-importer not found in $gi: run .ci/setup-python.sh (or set MDTUNE_IMPORTER_VENV)" || return 1
  local out=$tmp/importer; mkdir -p "$out"
  (cd "$out" && ANSIBLE_LIBRARY='' PATH=$gi/bin:$PATH GALAXY_IMPORTER_RUN_ANSIBLE_LINT=false \
    "$gi/bin/python3" -m galaxy_importer.main \
    "$(ls "$tmp"/build/mdtune-mdraid-*.tar.gz)") || return 1
  local expected=(mdtune mdtune_info) arch b
  for b in "$coll/binaries"/mdtune-*; do
    [ -e "$b" ] || continue
    arch=${b##*/mdtune-}; expected+=("mdtune_$arch" "mdtune_info_$arch")
  done
  "$venv/bin/python3" "$repo/tests/ansible/doc_checks.py" importer "$out/importer_result.json" "${expected[@]}"
}
t "galaxy-importer imports the release tarball and lists every module with its docs" galaxy_importer_loads_every_module

ansible_lint_production_passes() {
  [ -x "$venv/bin/ansible-lint" ] || fail "$venv/bin/ansible-lint missing: run .ci/setup-python.sh"
  (cd "$coll" && ANSIBLE_LIBRARY='' "$venv/bin/ansible-lint" --profile production --offline --nocolor) || return 1
  # A release build without the URLs is refused, naming what is missing.
  if MDTUNE_VENV=$venv "$repo/module_utils/ansible/build-collection.sh" --out "$tmp/build-nourl" --no-cargo \
       --release --repository https://git.example.org/mdtune > "$tmp/nourl.log" 2>&1; then
    fail "a --release build without --documentation and --issues succeeded"
  fi
  cat "$tmp/nourl.log"
  grep -q -- '--documentation' "$tmp/nourl.log" || fail "the refusal does not name --documentation"
}
t "ansible-lint --profile production passes on the release build (and a release build needs the URLs)" \
  ansible_lint_production_passes

# The build takes each architecture's binary from target/ (CARGO_TARGET_DIR): a dynamically linked
# one that needs a glibc newer than 2.31 is refused, not shipped.
build_refuses_a_new_glibc_binary() {
  local fake=$tmp/fake-target need
  mkdir -p "$fake/release"
  cp "$repo/target/release/mdtune" "$fake/release/mdtune"
  need=$(grep -aoE 'GLIBC_[0-9]+\.[0-9]+(\.[0-9]+)?' "$fake/release/mdtune" | sort -uV | tail -1)
  echo "target/release/mdtune needs $need"
  [ "$(printf '%s\n' "${need#GLIBC_}" 2.31 | sort -V | tail -1)" != 2.31 ] ||
    fail "target/release/mdtune needs only $need here: this host cannot show the refusal"
  if CARGO_TARGET_DIR=$fake MDTUNE_VENV=$venv "$repo/module_utils/ansible/build-collection.sh" --out "$tmp/build-glibc" \
       --no-cargo > "$tmp/glibc.log" 2>&1; then
    fail "a binary that needs $need was packed"
  fi
  cat "$tmp/glibc.log"
  grep -q "needs glibc ${need#GLIBC_}" "$tmp/glibc.log" || fail "the refusal does not say which glibc it needs"
  ! ls "$tmp"/build-glibc/*.tar.gz 2>/dev/null || fail "a tarball was written"
}
t "the build refuses a binary that needs a glibc newer than 2.31" build_refuses_a_new_glibc_binary

# Every architecture's binary found in target/ ships as mdtune_<arch> and mdtune_info_<arch>. No
# cross toolchain needed here: the aarch64 and ppc64le "builds" are copies of the static x86_64
# binary with the ELF machine field of that CPU (the build reads it; nothing runs them).
build_ships_every_architecture() {
  local fake=$tmp/arch-target t
  for t in x86_64-unknown-linux-musl:3e aarch64-unknown-linux-musl:b7 powerpc64le-unknown-linux-gnu:15; do
    arch_copy "$fake" "${t%:*}" "${t#*:}" || return 1
  done
  CARGO_TARGET_DIR=$fake MDTUNE_VENV=$venv "$repo/module_utils/ansible/build-collection.sh" --out "$tmp/build-arch" \
    --no-cargo || return 1
  local c=$tmp/build-arch/ansible_collections/mdtune/mdraid arch m
  for arch in x86_64 aarch64 ppc64le; do
    cmp -s "$c/binaries/mdtune-$arch" "$fake/${arch/ppc64le/powerpc64le}"-*/release/mdtune ||
      fail "binaries/mdtune-$arch is not the $arch build"
    for m in "mdtune_$arch" "mdtune_info_$arch"; do
      [ "$(readlink "$c/plugins/modules/$m")" = "../../binaries/mdtune-$arch" ] || fail "plugins/modules/$m does not link to the $arch build"
    done
  done
  ANSIBLE_COLLECTIONS_PATH=$tmp/build-arch ANSIBLE_LIBRARY='' "$venv/bin/ansible-doc" -t module -l mdtune.mdraid > "$tmp/arch-list.txt" || return 1
  cat "$tmp/arch-list.txt"
  [ "$(grep -c '^mdtune\.mdraid\.' "$tmp/arch-list.txt")" -eq 8 ] || fail "expected 8 modules (2 + 2 per architecture)"
  grep -q '^mdtune\.mdraid\.mdtune_info_ppc64le ' "$tmp/arch-list.txt" || fail "mdtune_info_ppc64le is not listed"
}
t "the build ships every architecture's binary (x86_64, aarch64, ppc64le), each with its modules" \
  build_ships_every_architecture

# Every task in the EXAMPLES of mdtune and mdtune_info, in order, on one fake root (the root option
# added to each, become dropped: the suite runs as the user it is). They name the modules by their
# FQCN, as a collection user copies them: only the collection installed by 8b resolves them.
examples_in_the_docs_run() {
  local r; r=$(newroot doc-examples)
  "$venv/bin/python3" "$repo/tests/ansible/doc_checks.py" examples-play \
    "$sidecar" "$repo/module_utils/ansible/mdtune_info.yml" "$r" "$tmp/doc-examples.yml" || return 1
  ANSIBLE_LIBRARY='' play -i "$(inv doc-examples "$r")" "$tmp/doc-examples.yml"
}
t "every EXAMPLES task of the docs runs by its FQCN (in order, on a fake root)" examples_in_the_docs_run

# --- a staged rollout (serial 1, 30%, 100%) and a compliance sweep, 20 hosts ---------
# Fresh roots stage01..stage20, through the collection installed by 8b. stage01 is the canary.
staged=$tmp/staged.ini
staged_inventory() {
  local n
  echo "[fleet]" > "$staged"
  for n in $(seq -w 1 20); do
    echo "stage$n ansible_connection=local mdtune_root=$(newroot "stage$n")" >> "$staged"
  done
}
# The result lines of each "TASK [Tune md RAID]" section: one line per host, in batch order.
batches() { awk '/^TASK \[Tune md RAID\]/{n++} n && /^(ok|changed|failed|fatal): \[/{print n, $0}' "$1"; }

canary_failure_stops_the_rollout() {
  staged_inventory
  local before; before=$(for n in $(seq -w 1 20); do snapshot "$tmp/roots/stage$n"; done)
  # The canary's kernel refuses a write (EPERM, as chattr +i makes it even for root).
  local locked=$tmp/roots/stage01/sys/block/md0/md/stripe_cache_size
  immutable+=("$locked")
  chattr +i "$locked" || fail "chattr +i not supported on $tmp's filesystem"
  if ANSIBLE_LIBRARY='' play -i "$staged" -f 10 "$books/staged.yml" > "$tmp/staged-fail.log" 2>&1; then
    cat "$tmp/staged-fail.log"; fail "the rollout succeeded although the canary failed"
  fi
  chattr -i "$locked"
  cat "$tmp/staged-fail.log"
  batches "$tmp/staged-fail.log" > "$tmp/staged-fail.batches"
  [ "$(cut -d' ' -f1-3 "$tmp/staged-fail.batches")" = "1 fatal: [stage01]:" ] ||
    fail "expected only the canary stage01 to run, and fail: $(cat "$tmp/staged-fail.batches")"
  grep -q 'stripe_cache_size' "$tmp/staged-fail.log" || fail "the canary's failure does not name the setting"
  grep -qE '^NO MORE HOSTS LEFT' "$tmp/staged-fail.log" || fail "Ansible did not stop the play"
  # Every root as it was: the canary rolled back, the other 19 never touched.
  diff <(echo "$before") <(for n in $(seq -w 1 20); do snapshot "$tmp/roots/stage$n"; done) ||
    fail "a host's root changed"
  echo "the canary failed and rolled back; stage02..stage20 untouched"
}
t "staged rollout: a canary that fails stops it before any other host is touched" canary_failure_stops_the_rollout

staged_rollout_converges_in_batches() {
  [ -f "$staged" ] || staged_inventory
  ANSIBLE_LIBRARY='' play -i "$staged" -f 10 "$books/staged.yml" > "$tmp/staged1.log" 2>&1 || { cat "$tmp/staged1.log"; return 1; }
  ANSIBLE_LIBRARY='' play -i "$staged" -f 10 "$books/staged.yml" > "$tmp/staged2.log" 2>&1 || { cat "$tmp/staged2.log"; return 1; }
  batches "$tmp/staged1.log" > "$tmp/staged1.batches"
  local sizes; sizes=$(cut -d' ' -f1 "$tmp/staged1.batches" | uniq -c | awk '{printf "%s ", $1}')
  [ "$sizes" = "1 6 13 " ] || fail "batch sizes: expected 1 6 13, got $sizes"
  head -1 "$tmp/staged1.batches" | grep -q '\[stage01\]' || fail "the canary batch is not stage01"
  local n
  for n in $(seq -w 1 20); do
    recap "$tmp/staged1.log" "stage$n" 1 && recap "$tmp/staged2.log" "stage$n" 0 || return 1
    expect_md "$tmp/roots/stage$n" md0 stripe_cache_size 4096 || return 1
  done
  echo "batches of $sizes; 20 hosts converged; the second run changed nothing"
}
t "staged rollout: batches of 1, 30%, the rest; every host converges; a second run changes nothing" \
  staged_rollout_converges_in_batches

compliance_sweep_finds_the_drifted_host() {
  local before; before=$(for n in $(seq -w 1 20); do snapshot "$tmp/roots/stage$n"; done)
  ANSIBLE_LIBRARY='' play -i "$staged" -f 10 "$books/sweep.yml" > "$tmp/sweep1.log" 2>&1 || { cat "$tmp/sweep1.log"; return 1; }
  # Someone sets a value by hand on one host.
  echo 256 > "$tmp/roots/stage07/sys/block/md0/md/stripe_cache_size"
  before=$(for n in $(seq -w 1 20); do snapshot "$tmp/roots/stage$n"; done)
  if ANSIBLE_LIBRARY='' play -i "$staged" -f 10 "$books/sweep.yml" > "$tmp/sweep2.log" 2>&1; then
    cat "$tmp/sweep2.log"; fail "the sweep passed although stage07 drifted"
  fi
  local n
  for n in $(seq -w 1 20); do
    if [ "$n" = 07 ]; then
      grep -qE "^stage07 +: .* failed=1 " "$tmp/sweep2.log" || fail "stage07 is not failed: $(grep -E '^stage07 ' "$tmp/sweep2.log")"
    else
      recap "$tmp/sweep2.log" "stage$n" 0 || return 1
    fi
  done
  grep -q 'drifted: md0' "$tmp/sweep2.log" || fail "the sweep does not name md0"
  diff <(echo "$before") <(for n in $(seq -w 1 20); do snapshot "$tmp/roots/stage$n"; done) || fail "the sweep wrote"
  echo "only stage07 reported, naming md0; nothing written"
}
t "compliance sweep with mdtune_info: only the drifted host fails, nothing is written" \
  compliance_sweep_finds_the_drifted_host

t "ansible-test sanity on the built collection" env MDTUNE_VENV="$venv" "$here/sanity.sh" --no-cargo

checkout_left_clean() {
  local now; now=$(git -C "$repo" status --porcelain --ignored -- "${watched[@]}" 2>&1)
  [ "$now" = "$git_before" ] || fail "the suite changed the checkout: $(diff <(echo "$git_before") <(echo "$now"))"
}
t "the suite wrote nothing into the checkout (${watched[*]})" checkout_left_clean

finish_suite
