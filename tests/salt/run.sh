#!/usr/bin/env bash
# Salt suite: the mdtune execution and state modules (module_utils/salt), the example top file,
# SLS and pillar (examples/salt) and the SUSE Manager / Uyuni formula (module_utils/suma), run
# with real Salt - masterless `salt-call --local` - against copies of the bundled demo host
# (examples/demo-host) in a temporary directory.
#
# The salt-call checks run twice: on Salt 3008 (the venv ${MDTUNE_VENV:-<repo>/.venv}, made by
# .ci/setup-python.sh) and on the 3006 LTS line that SUSE Manager's Salt bundle runs
# (${MDTUNE_SALT3006_VENV:-<that venv>-salt3006}, made by .ci/setup-salt3006.sh). Before them:
# Salt's docstring rule, the formula's layout, and the form checks (tests/salt/form_check.py):
# every field of form.yml against the binary, through a transcription of Uyuni's pillar merge
# (tests/salt/uyuni_pillar.py). After them, the formula over salt-ssh against a local sshd
# (tests/salt/ssh.sh). The assertions on salt-call's JSON are the functions of
# tests/salt/call_checks.py, called by name.
#
# Everything Salt writes (config, cache, pki, sockets, logs) and every fake root lives in one
# temporary directory; nothing is written to /etc, /var or /srv. The directory is removed when
# every check passes and kept (its path is printed) when one fails or MDTUNE_KEEP_TMP is set.
#
# Builds the release binary first (cargo build --release). MDTUNE_BIN=PATH runs the checks
# against another binary instead, and says so. Ends with one line "N passed, N failed" and
# exits non-zero if any check failed or a Salt venv is missing.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
venv3006=${MDTUNE_SALT3006_VENV:-$venv-salt3006}

# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"

if [ ! -x "$venv/bin/salt-call" ] || [ ! -x "$venv/bin/python" ]; then
  not_ok "salt-call (Salt 3008) is available" "no $venv/bin/salt-call: create the venv with .ci/setup-python.sh" \
    "(python3 -m venv $venv && $venv/bin/pip install 'salt==3008.4'), or set MDTUNE_VENV"
  finish
fi
py=$venv/bin/python

# --- the binary -------------------------------------------------------------------------------
mdtune_binary

scratch salt

# Salt state outside the temporary directory, to prove at the end that nothing was written there.
outside() { for d in /etc/salt /var/cache/salt /var/log/salt /var/run/salt /srv/salt /srv/pillar; do
  [ -e "$d" ] && echo "$d $(find "$d" 2>/dev/null | wc -l)"; done; }
outside_before=$(outside)

# A fresh copy of the bundled demo host, as a fresh clone has it: git keeps no empty
# directories, so without etc/ and run/ (mdtune creates them when it writes).
new_root() {
  cp -a "$repo/examples/demo-host" "$1"
  rmdir "$1/etc" "$1/run" 2>/dev/null || true
}

t0=$SECONDS
suma=$repo/module_utils/suma

# --- the formula's layout and the modules' docstrings -----------------------------------------
links=$(find "$repo/module_utils" -type l)
if [ -z "$links" ]; then ok "module_utils holds no symlinks (a package copies files, not links)"
else not_ok "module_utils holds no symlinks (a package copies files, not links)" "$links"; fi
if [ -f "$suma/metadata/mdtune/pillar.example" ] && [ ! -e "$suma/pillar.example" ]; then
  ok "pillar.example is in metadata/mdtune/, where Uyuni's FormulaFactory.getPillarExample reads it"
else
  not_ok "pillar.example is in metadata/mdtune/, where Uyuni's FormulaFactory.getPillarExample reads it"
fi

# Salt's own docstring rule for execution modules, and the salt-ssh wrapper's arguments against the
# execution module's (tests/salt/module_source.py says what each checks).
salt_src=$repo/module_utils/salt
what="docstrings: every public function documented, execution functions with 'CLI Example:' as Salt checks it"
if out=$("$py" "$repo/tests/salt/module_source.py" docstrings "$salt_src/_modules/mdtune.py" \
  "$salt_src/_states/mdtune.py" "$salt_src/_wrapper/mdtune.py" 2>&1); then ok "$what"; else not_ok "$what" "$out"; fi
what="the salt-ssh wrapper's functions take the execution module's arguments"
if out=$("$py" "$repo/tests/salt/module_source.py" wrapper-args "$salt_src/_modules/mdtune.py" \
  "$salt_src/_wrapper/mdtune.py" 2>&1); then ok "$what"; else not_ok "$what" "$out"; fi

# --- the form against the binary ------------------------------------------------------------------
new_root "$tmp/form-root"
# A kernel of 6.16 or later, which has the system-wide sync_io_depth (the demo host's does not, so
# that its arrays show how a glob skips it): the form's field is checked against one that takes it.
echo 32 >"$tmp/form-root/proc/sys/dev/raid/sync_io_depth"
mkdir -p "$tmp/form"
form_out=$(FORM_CHECK_OUT=$tmp/form "$py" "$repo/tests/salt/form_check.py" "$repo" "$bin" "$tmp/form-root" 2>&1)
form_rc=$?
echo "$form_out"
passed=$((passed + $(grep -c '^ok   - ' <<<"$form_out")))
failed=$((failed + $(grep -c '^FAIL - ' <<<"$form_out")))
if [ "$form_rc" -ne 0 ] && ! grep -q '^FAIL - ' <<<"$form_out"; then
  not_ok "tests/salt/form_check.py ran" "exit status $form_rc"
fi

# --- salt-call on one Salt line ---------------------------------------------------------------
# salt_checks LABEL VENV: every salt-call check, with that venv's Salt, under $tmp/LABEL.
salt_checks() {
  local label=$1 venv=$2 base=$tmp/$1
  local salt_call=$venv/bin/salt-call
  mkdir -p "$base"

  # minion_conf NAME FILE_ROOTS... -- PILLAR_ROOTS...
  minion_conf() {
    local name=$1 dir=$base/conf/$1; shift
    mkdir -p "$dir"
    {
      echo "id: mdtune-test-$name"
      echo "file_client: local"
      echo "root_dir: $base/salt-root"
      echo "cachedir: $base/cache-$name"
      echo "pki_dir: $base/salt-root/pki"
      echo "sock_dir: $base/salt-root/run"
      echo "pidfile: $base/salt-root/run/minion.pid"
      echo "log_file: $base/salt-$name.log"
      echo "log_level_logfile: debug"
      echo "user: $(id -un)"
      # Faster start: no DNS lookups for the fqdns grain, grains computed once and cached.
      echo "enable_fqdns_grains: false"
      echo "enable_gpu_grains: false"
      echo "grains_cache: true"
      echo "file_roots:"
      echo "  base:"
      while [ "$1" != -- ]; do echo "    - $1"; shift; done; shift
      echo "pillar_roots:"
      echo "  base:"
      for p in "$@"; do echo "    - $p"; done
    } >"$dir/minion"
  }
  # The examples' layout: the example SLS and top file, the modules as a plain Salt user has them.
  minion_conf example "$repo/examples/salt/states" "$repo/module_utils/salt" -- "$repo/examples/salt/pillar"
  # The binary through the config key mdtune:binary (config.get: minion config, then pillar).
  printf 'mdtune:\n  binary: %s\n' "$bin" >>"$base/conf/example/minion"
  # The formula as the packages install it: states/mdtune in one file root
  # (/usr/share/susemanager/formulas/states), the two modules from module_utils/salt in another
  # (/usr/share/susemanager/salt/{_modules,_states}), plus a top file; the pillar is
  # pillar.example, as the form writes it.
  mkdir -p "$base/formula-top" "$base/formula-pillar"
  printf 'base:\n  "*":\n    - mdtune\n' >"$base/formula-top/top.sls"
  printf 'base:\n  "*":\n    - mdtune\n    - host\n' >"$base/formula-pillar/top.sls"
  cp "$suma/metadata/mdtune/pillar.example" "$base/formula-pillar/mdtune.sls"
  # This minion's host: a fake root and the binary, merged into the same pillar key.
  printf 'mdtune:\n  root: %s\n  binary: %s\n' "$base/root2" "$bin" >"$base/formula-pillar/host.sls"
  minion_conf formula "$suma/states" "$repo/module_utils/salt" "$base/formula-top" -- "$base/formula-pillar"

  # sc CONF OUTFILE ARGS...: salt-call with JSON output (stderr in OUTFILE.err); salt-call's status.
  sc() {
    local conf=$1 out=$2; shift 2
    calls=$((calls + 1))
    local t rc
    t=$(date +%s%N)
    (cd "$base" && "$salt_call" --local -c "$base/conf/$conf" --out=json --retcode-passthrough \
      "$@" >"$out" 2>"$out.err")
    rc=$?
    echo "$(( ($(date +%s%N) - t) / 1000000 )) ms: [$label] salt-call $*" >>"$tmp/timings"
    return $rc
  }

  local version
  version=$("$salt_call" --version 2>&1)
  echo "# [$label] $version"
  local r1=$base/root1 r2=$base/root2 over1 over2 rc
  new_root "$r1"
  over1=$(printf '{"mdtune": {"root": "%s"}}' "$r1")

  sc example "$base/sync.json" saltutil.sync_all
  check "[$label] saltutil.sync_all syncs the mdtune execution and state modules" "$base/sync.json" sync_all

  sc example "$base/query.json" mdtune.query root="$r1"
  check "[$label] mdtune.query compares with the pillar's desired state (examples/salt/pillar)" "$base/query.json" query_pillar

  sc example "$base/query-defaults.json" mdtune.query root="$r1" from_pillar=False
  check "[$label] mdtune.query from_pillar=False compares with mdtune's defaults" "$base/query-defaults.json" query_defaults

  sc example "$base/query-override.json" mdtune.query root="$r1" thread_policy=off
  check "[$label] mdtune.query thread_policy=off overrides that key of the pillar and keeps the others" \
    "$base/query-override.json" query_override

  snapshot "$r1" >"$base/r1.pristine"
  sc example "$base/ex-test.json" state.apply test=True pillar="$over1"
  check "[$label] example, test=True: result None and the predicted changes" "$base/ex-test.json" example_test
  check_unchanged "[$label] example, test=True: the fake root is untouched" "$r1" "$base/r1.pristine"

  sc example "$base/ex-apply.json" state.apply pillar="$over1"
  check "[$label] example, apply: result True, changes reported, values in place" "$base/ex-apply.json" example_applied "$r1"

  snapshot "$r1" >"$base/r1.applied"
  sc example "$base/ex-again.json" state.apply pillar="$over1"
  check "[$label] example, second apply: result True and no changes" "$base/ex-again.json" converged md-raid-tuned
  check_unchanged "[$label] example, second apply: nothing written" "$r1" "$base/r1.applied"

  sc example "$base/ex-again-test.json" state.apply test=True pillar="$over1"
  check "[$label] example, test=True after apply: result True, no changes" "$base/ex-again-test.json" converged md-raid-tuned

  sc example "$base/query-after.json" mdtune.query root="$r1"
  check "[$label] mdtune.query after the apply: compliant with the pillar" "$base/query-after.json" query_compliant

  sc example "$base/bad.json" state.single mdtune.managed name=bad-value root="$r1" \
    arrays='[{"name": "md0", "stripe_cache_size": 5}]'
  rc=$?
  check "[$label] a bad value: result False, the comment names the key and mdtune's exit status" "$base/bad.json" bad_value
  # shellcheck disable=SC2016 # check_rc evaluates the condition itself
  check_rc "[$label] a bad value: salt-call exits non-zero" "$rc" "non-zero" '[ "$rc" -ne 0 ]'
  check_unchanged "[$label] a bad value: nothing written" "$r1" "$base/r1.applied"

  sc example "$base/unknown.json" mdtune.apply root="$r1" stripe_cache=4096
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q "Error running 'mdtune.apply': mdtune failed (exit status 2): .*stripe_cache" "$base/unknown.json.err" \
    && ! grep -q "__pub" "$base/unknown.json.err"; then
    ok "[$label] mdtune.apply with an unknown argument raises CommandExecutionError naming it, with exit status 2"
  else
    not_ok "[$label] mdtune.apply with an unknown argument raises CommandExecutionError naming it, with exit status 2" \
      "salt-call exit status $rc" "$(tail -n 3 "$base/unknown.json.err")"
  fi

  sc example "$base/revert.json" mdtune.revert root="$r1"
  check "[$label] mdtune.revert restores the values saved before the first change" "$base/revert.json" example_reverted "$r1"

  # A stand-in binary that records what it was given (tests/salt/record_mdtune.py, run by this
  # venv's Python, writing to MDTUNE_RECORD_TO): what the wrappers pass, independent of mdtune.
  { echo "#!$py"; cat "$repo/tests/salt/record_mdtune.py"; } >"$base/record-mdtune"
  chmod +x "$base/record-mdtune"
  MDTUNE_RECORD_TO=$base/recorded.json sc example "$base/record.json" state.single mdtune.managed \
    name=recorded test=True binary="$base/record-mdtune" root=/nonexistent thread_policy=off speed_limit_max=500000 \
    arrays='[{"name": "back\\nslash", "group_thread_cnt": "8", "skip_copy": true}]'
  check "[$label] what reaches the binary: [binary, \"-\"], exact JSON on stdin, test=True as check_mode, no Salt keys, MDTUNE_CALLER naming Salt for the trail" \
    "$base/recorded.json" recorded_apply

  MDTUNE_RECORD_TO=$base/recorded.json sc example "$base/record-test.json" mdtune.apply \
    binary="$base/record-mdtune" root=/nonexistent from_pillar=False TEST=True
  check "[$label] mdtune.apply TEST=True: test mode as salt.utils.args.test_mode reads it (any case), not passed on" \
    "$base/recorded.json" recorded_test_mode

  sc example "$base/nojson.json" mdtune.query root="$r1" binary=/bin/echo
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q "without a JSON result" "$base/nojson.json.err" && grep -q "stdout: -" "$base/nojson.json.err"; then
    ok "[$label] a binary that prints no JSON: CommandExecutionError with its exit status and output"
  else
    not_ok "[$label] a binary that prints no JSON: CommandExecutionError with its exit status and output" \
      "salt-call exit status $rc" "$(tail -n 3 "$base/nojson.json.err")"
  fi

  sc example "$base/missing.json" state.single mdtune.managed name=no-binary binary="$base/nonexistent/mdtune"
  check "[$label] a missing binary: result False, the comment says where it looked and what to do" "$base/missing.json" missing_binary

  # --- the SUSE Manager / Uyuni formula ---------------------------------------------------------
  new_root "$r2"
  # The binary where the formula's default source, salt://mdtune/files/mdtune, finds it: like
  # /srv/salt/mdtune/files/mdtune beside the packaged formula's states/mdtune.
  mkdir -p "$base/formula-top/mdtune/files"
  cp "$bin" "$base/formula-top/mdtune/files/mdtune"
  over2=$(printf '{"mdtune": {"root": "%s", "deploy": {"enabled": true, "target": "%s"}}}' \
    "$r2" "$base/minion-bin/mdtune")
  snapshot "$r2" >"$base/r2.pristine"

  sc formula "$base/fo-install.json" state.show_sls mdtune \
    pillar='{"mdtune": {"install": {"enabled": true}, "binary": ""}}'
  check "[$label] formula with install.enabled: pkg.installed mdtune first, then tuning with /usr/sbin/mdtune" \
    "$base/fo-install.json" formula_install

  # Transactional systems: the formula's metadata as Uyuni reads it, against the rendered SLS
  # (every optional state on); inside a transactional-update snapshot the tuning refuses to run.
  sc formula "$base/fo-all.json" state.show_sls mdtune \
    pillar='{"mdtune": {"install": {"enabled": true}, "deploy": {"enabled": true}, "metrics": {"enabled": true}}}'
  check "[$label] formula with metrics.enabled: the package's mdtune-tick.timer enabled and started, after the package" \
    "$base/fo-all.json" formula_metrics
  trans_out=$("$py" "$repo/tests/salt/uyuni_transactional.py" "$suma/metadata/mdtune/metadata.yml" \
    "$base/fo-all.json" 2>&1)
  awk -v l="[$label] " '{ sub(/^(ok   - |FAIL - )/, "&" l); print }' <<<"$trans_out"
  passed=$((passed + $(grep -c '^ok   - ' <<<"$trans_out")))
  failed=$((failed + $(grep -c '^FAIL - ' <<<"$trans_out")))
  grep -q '^ok   - ' <<<"$trans_out" || not_ok "[$label] tests/salt/uyuni_transactional.py ran" "$trans_out"
  TRANSACTIONAL_UPDATE=true sc formula "$base/fo-trans.json" state.single mdtune.managed \
    name=in-snapshot from_pillar=True pillar="$over2"
  check "[$label] inside a transactional-update snapshot mdtune.managed refuses, saying why" "$base/fo-trans.json" in_snapshot
  check_unchanged "[$label] inside a transactional-update snapshot: nothing written" "$r2" "$base/r2.pristine"

  sc formula "$base/fo-test.json" state.apply test=True pillar="$over2"
  check "[$label] formula, test=True: the binary would be deployed, tuning waits for it, nothing written" "$base/fo-test.json" formula_test "$base/minion-bin/mdtune"
  check_unchanged "[$label] formula, test=True: the fake root is untouched" "$r2" "$base/r2.pristine"

  sc formula "$base/fo-apply.json" state.apply pillar="$over2"
  check "[$label] formula with pillar.example (the form's shape): deploys the binary and applies" "$base/fo-apply.json" formula_applied "$r2" "$base/minion-bin/mdtune"

  snapshot "$r2" >"$base/r2.applied"
  sc formula "$base/fo-again.json" state.apply pillar="$over2"
  check "[$label] formula, second run: converged, no changes" "$base/fo-again.json" formula_converged
  check_unchanged "[$label] formula, second run: nothing written" "$r2" "$base/r2.applied"

  sc formula "$base/fo-query.json" mdtune.query
  check "[$label] formula: mdtune.query with no arguments checks the formula's pillar (root, binary, settings): compliant" \
    "$base/fo-query.json" formula_query

  # The form's defaults and the untouched form (its sample item kept), as Uyuni's server makes
  # them into pillar (written by form_check.py), with a root and the binary: the formula runs.
  local which pillar_json
  for which in defaults untouched; do
    pillar_json=$("$py" "$repo/tests/salt/call_checks.py" --form-pillar "$tmp/form/form-$which.json" "$r2" "$bin")
    sc formula "$base/fo-$which.json" state.apply test=True pillar="$pillar_json"
    check "[$label] formula with the form's $which as Uyuni makes them into pillar: runs (test=True), tuning auto" \
      "$base/fo-$which.json" form_pillar_runs
  done

  sc formula "$base/fo-revert.json" state.single mdtune.reverted name=undo root="$r2" binary="$base/minion-bin/mdtune"
  check "[$label] mdtune.reverted: the original values are back, the persisted files gone" "$base/fo-revert.json" formula_reverted "$r2"

  sc formula "$base/fo-revert-again.json" state.single mdtune.reverted name=undo root="$r2" binary="$base/minion-bin/mdtune"
  check "[$label] mdtune.reverted again: result True, no changes" "$base/fo-revert-again.json" converged undo
}

# check NAME FILE CHECK [ARG...]: CHECK of tests/salt/call_checks.py on salt-call's JSON in FILE
# (r = the "local" value), given the ARGs.
check() {
  local name=$1 file=$2 out; shift 2
  if [ ! -e "$file.err" ]; then : >"$file.err"; fi
  if out=$("$py" "$repo/tests/salt/call_checks.py" "$file" "$@" 2>&1); then ok "$name"; else not_ok "$name" "$(echo "$out" | tail -n 8)"; fi
}
check_rc() { # check_rc NAME ACTUAL EXPECTED-DESCRIPTION TEST
  if eval "$4"; then ok "$1"; else not_ok "$1" "salt-call exit status $2, expected $3"; fi
}
# snapshot ROOT: every path with type, size, mtime, link target and content hash.
snapshot() {
  (cd "$1" && find . -printf '%p %y %s %T@ %l\n' | sort && find . -type f -exec md5sum {} + | sort)
}
check_unchanged() { # check_unchanged NAME ROOT BEFORE-FILE
  local d
  if d=$(diff <(cat "$3") <(snapshot "$2")); then ok "$1"; else not_ok "$1" "$(echo "$d" | head -n 12)"; fi
}

calls=0
echo "# binary $bin, temp $tmp"
salt_checks salt3008 "$venv"
if [ -x "$venv3006/bin/salt-call" ]; then
  salt_checks salt3006 "$venv3006"
else
  not_ok "salt-call (Salt 3006 LTS) is available" "no $venv3006/bin/salt-call: run .ci/setup-salt3006.sh" \
    "(python3 -m venv $venv3006 && $venv3006/bin/pip install 'salt>=3006,<3007'), or set MDTUNE_SALT3006_VENV"
fi

# --- SUSE Manager 5: the Salt bundle's paths are on the server container's volumes --------------
# mdtune-salt-VERSION.tar.gz (packaging/salt-bundle.sh), unpacked at / inside the container
# (docs/install.md), against the volume list transcribed from uyuni-tools; the 4.3 packages'
# /usr/share/susemanager paths are on none (which is why they are for 4.3 and plain masters).
"$repo/packaging/salt-bundle.sh" "$tmp/mdtune-salt.tar.gz"
if vol_out=$("$venv/bin/python3" "$repo/tests/salt/volumes.py" "$repo/tests/salt/uyuni-volumes.txt" \
  "$tmp/mdtune-salt.tar.gz" /usr/share/susemanager/formulas/metadata/mdtune/form.yml \
  /usr/share/susemanager/formulas/states/mdtune/init.sls /usr/share/susemanager/salt/_modules/mdtune.py 2>&1); then
  ok "SUSE Manager 5: every file of mdtune-salt.tar.gz is on a server volume ($(tail -n1 <<<"$vol_out"))"
else
  not_ok "SUSE Manager 5: every file of mdtune-salt.tar.gz is on a server volume" "$(grep -v '^ok' <<<"$vol_out")"
fi

# --- the formula over salt-ssh (tests/salt/ssh.sh) ---------------------------------------------
ssh_out=$("$repo/tests/salt/ssh.sh" "$bin" 2>&1)
ssh_rc=$?
echo "$ssh_out"
passed=$((passed + $(grep -c '^ok   - ' <<<"$ssh_out")))
failed=$((failed + $(grep -c '^FAIL - ' <<<"$ssh_out")))
if [ "$ssh_rc" -ne 0 ] && ! grep -q '^FAIL - ' <<<"$ssh_out"; then
  not_ok "tests/salt/ssh.sh ran" "exit status $ssh_rc"
fi

# --- nothing outside the temporary directory ------------------------------------------------------
outside_after=$(outside)
if [ "$outside_before" = "$outside_after" ]; then ok "Salt wrote nothing outside $tmp"
else not_ok "Salt wrote nothing outside $tmp" "before: $outside_before" "after: $outside_after"; fi

echo "# $calls salt-call runs in $((SECONDS - t0)) s; slowest:"
sort -rn "$tmp/timings" | head -n 3 | cut -c1-110 | sed 's/^/#   /'
[ "$failed" -eq 0 ] || echo "# Salt logs: $tmp/*/salt-*.log, $tmp/*/*.json.err"
finish
