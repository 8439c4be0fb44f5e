#!/usr/bin/env bash
# Salt suite: the mdtune execution and state modules (module_utils/salt), the example top file,
# SLS and pillar (examples/salt) and the SUSE Manager / Uyuni formula (module_utils/suma), run
# with real Salt - masterless `salt-call --local` from the venv ${MDTUNE_VENV:-<repo>/.venv} -
# against copies of the bundled demo host (examples/demo-host) in a temporary directory.
#
# Everything Salt writes (config, cache, pki, sockets, logs) and every fake root lives in one
# temporary directory; nothing is written to /etc, /var or /srv. The directory is removed when
# every check passes and kept (its path is printed) when one fails or MDTUNE_KEEP_TMP is set.
#
# Builds the release binary first (cargo build --release). MDTUNE_BIN=PATH runs the checks
# against another binary instead, and says so. Ends with one line "N passed, N failed" and
# exits non-zero if any check failed or Salt is missing.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
salt_call=$venv/bin/salt-call
py=$venv/bin/python

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

if [ ! -x "$salt_call" ] || [ ! -x "$py" ]; then
  not_ok "salt-call is available" "no $salt_call: create the venv with .ci/setup-python.sh" \
    "(python3 -m venv $venv && $venv/bin/pip install 'salt==3008.4'), or set MDTUNE_VENV"
  finish
fi

# --- the binary -------------------------------------------------------------------------------
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

# --- a private, masterless Salt -----------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mdtune-salt.XXXXXX")
cleanup() {
  if [ "$failed" -eq 0 ] && [ -z "${MDTUNE_KEEP_TMP:-}" ]; then rm -rf "$tmp"; else echo "# kept for inspection: $tmp"; fi
}
trap cleanup EXIT

# Salt state outside the temporary directory, to prove at the end that nothing was written there.
outside() { for d in /etc/salt /var/cache/salt /var/log/salt /var/run/salt /srv/salt /srv/pillar; do
  [ -e "$d" ] && echo "$d $(find "$d" 2>/dev/null | wc -l)"; done; }
outside_before=$(outside)

# minion_conf NAME CACHEDIR FILE_ROOTS... -- PILLAR_ROOTS...
minion_conf() {
  local name=$1 cache=$2 dir=$tmp/conf/$1; shift 2
  mkdir -p "$dir" "$cache"
  {
    echo "id: mdtune-test-$name"
    echo "file_client: local"
    echo "root_dir: $tmp/salt-root"
    echo "cachedir: $cache"
    echo "pki_dir: $tmp/salt-root/pki"
    echo "sock_dir: $tmp/salt-root/run"
    echo "pidfile: $tmp/salt-root/run/minion.pid"
    echo "log_file: $tmp/salt-$name.log"
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
minion_conf example "$tmp/cache-example" "$repo/examples/salt/states" "$repo/module_utils/salt" \
  -- "$repo/examples/salt/pillar"
# The binary through the config key mdtune:binary (config.get: minion config, then pillar).
printf 'mdtune:\n  binary: %s\n' "$bin" >>"$tmp/conf/example/minion"
# The formula's layout as SUSE Manager installs it (/usr/share/salt-formulas/states), plus a
# top file; its own cache, so the formula's _modules/_states are what gets synced.
mkdir -p "$tmp/formula-top" "$tmp/formula-pillar"
printf 'base:\n  "*":\n    - mdtune\n' >"$tmp/formula-top/top.sls"
printf 'base:\n  "*":\n    - mdtune\n' >"$tmp/formula-pillar/top.sls"
cp "$repo/module_utils/suma/pillar.example" "$tmp/formula-pillar/mdtune.sls"
minion_conf formula "$tmp/cache-formula" "$repo/module_utils/suma/states" "$tmp/formula-top" \
  -- "$tmp/formula-pillar"

# sc CONF OUTFILE ARGS...: salt-call with JSON output; the exit status is salt-call's.
calls=0
sc() {
  local conf=$1 out=$2; shift 2
  calls=$((calls + 1))
  local t=$(date +%s%N) rc
  (cd "$tmp" && "$salt_call" --local -c "$tmp/conf/$conf" --out=json --retcode-passthrough \
    "$@" >"$out" 2>>"$tmp/salt-stderr.log")
  rc=$?
  echo "$(( ($(date +%s%N) - t) / 1000000 )) ms: salt-call $*" >>"$tmp/timings"
  return $rc
}

# check NAME FILE PYTHON: run assertions on salt-call's JSON in FILE (r = the "local" value).
prelude='
import json, os, sys
def _load(path):
    text = open(path).read()
    try:
        data = json.loads(text)
    except ValueError:
        raise AssertionError("salt-call printed no JSON: " + text[-1500:])
    return data.get("local", data) if isinstance(data, dict) else data
r = _load(sys.argv[1])
def state(sid):
    if not isinstance(r, dict):
        raise AssertionError("not a state run result: %r" % (r,))
    for key, value in r.items():
        if key.split("_|-")[1] == sid:
            return value
    raise AssertionError("no state %s in %s" % (sid, list(r)))
def md(root, dev, attr):
    return open(os.path.join(root, "sys/block", dev, "md", attr)).read().strip()
def proc(root, name):
    return open(os.path.join(root, "proc/sys/dev/raid", name)).read().strip()
def eq(actual, expected, what):
    assert actual == expected, "%s: expected %r, got %r" % (what, expected, actual)
'
check() {
  local name=$1 file=$2 code=$3 out
  if out=$("$py" -c "$prelude$code" "$file" 2>&1); then ok "$name"; else not_ok "$name" "$(echo "$out" | tail -n 8)"; fi
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

# A fresh copy of the bundled demo host, as a fresh clone has it: git keeps no empty
# directories, so without etc/ and run/ (mdtune creates them when it writes).
new_root() {
  cp -a "$repo/examples/demo-host" "$1"
  rmdir "$1/etc" "$1/run" 2>/dev/null || true
}

t0=$SECONDS
echo "# salt $("$salt_call" --version), binary $bin, temp $tmp"

# --- execution and state modules with the examples --------------------------------------------
r1=$tmp/root1
new_root "$r1"
over1=$(printf '{"mdtune": {"root": "%s"}}' "$r1")

sc example "$tmp/sync.json" saltutil.sync_all
check "saltutil.sync_all syncs the mdtune execution and state modules" "$tmp/sync.json" '
assert "modules.mdtune" in r["modules"], r
assert "states.mdtune" in r["states"], r'

sc example "$tmp/query.json" mdtune.query root="$r1"
check "mdtune.query (binary from the config key mdtune:binary) returns the report" "$tmp/query.json" '
eq(r.get("failed"), False, "failed")
names = [a["name"] for a in r["arrays"]]
for n in ("md0", "md1", "md2", "md3"):
    assert n in names, "no %s in %s" % (n, names)
by = {a["name"]: a for a in r["arrays"]}
eq(by["md0"]["devname"], "hana_data", "md0 devname")
eq(by["md1"]["sync"]["action"], "resync", "md1 sync action")
eq(r["compliant"], False, "compliant (auto wants 8 threads on md0)")
eq(r["changed"], False, "changed")'

snapshot "$r1" >"$tmp/r1.pristine"
sc example "$tmp/ex-test.json" state.apply test=True pillar="$over1"
check "example, test=True: result None and the predicted changes" "$tmp/ex-test.json" '
s = state("md-raid-tuned")
eq(s["result"], None, "result")
c = s["changes"]
eq(c.get("md0", {}).get("group_thread_cnt"), {"old": 0, "new": 8}, "md0 group_thread_cnt")
eq(c.get("md0", {}).get("stripe_cache_size"), {"old": 256, "new": 4096}, "md0 stripe_cache_size")
eq(c.get("md0", {}).get("sync_speed_max"), {"old": "system", "new": 500000}, "md0 sync_speed_max")
eq(c.get("md1", {}).get("sync_speed_min"), {"old": "system", "new": 50000}, "md1 sync_speed_min")
eq(c.get("md2", {}).get("group_thread_cnt"), {"old": 0, "new": 16}, "md2 group_thread_cnt")
eq(c.get("md2", {}).get("skip_copy"), {"old": False, "new": True}, "md2 skip_copy")
eq(c.get("system", {}).get("speed_limit_max"), {"old": 200000, "new": 500000}, "speed_limit_max")
assert "md3" not in c, "md3 (auto gives 0, in place) must not change: %r" % c.get("md3")'
check_unchanged "example, test=True: the fake root is untouched" "$r1" "$tmp/r1.pristine"

sc example "$tmp/ex-apply.json" state.apply pillar="$over1"
check "example, apply: result True, changes reported, values in place" "$tmp/ex-apply.json" "
root = '$r1'
s = state('md-raid-tuned')
eq(s['result'], True, 'result: ' + s['comment'])
assert s['changes'].get('md0'), s['changes']
eq(md(root, 'md0', 'group_thread_cnt'), '8', 'md0 group_thread_cnt')
eq(md(root, 'md0', 'stripe_cache_size'), '4096', 'md0 stripe_cache_size')
eq(md(root, 'md0', 'sync_speed_max').split()[0], '500000', 'md0 sync_speed_max')
eq(md(root, 'md1', 'sync_speed_min').split()[0], '50000', 'md1 sync_speed_min')
eq(md(root, 'md2', 'group_thread_cnt'), '16', 'md2 group_thread_cnt')
eq(md(root, 'md2', 'stripe_cache_size'), '8192', 'md2 stripe_cache_size')
eq(md(root, 'md2', 'skip_copy'), '1', 'md2 skip_copy')
eq(md(root, 'md3', 'group_thread_cnt'), '0', 'md3 group_thread_cnt')
eq(proc(root, 'speed_limit_max'), '500000', 'speed_limit_max')
eq(proc(root, 'speed_limit_min'), '1000', 'speed_limit_min (unmanaged)')"

snapshot "$r1" >"$tmp/r1.applied"
sc example "$tmp/ex-again.json" state.apply pillar="$over1"
check "example, second apply: result True and no changes" "$tmp/ex-again.json" '
s = state("md-raid-tuned")
eq(s["result"], True, "result: " + s["comment"])
eq(s["changes"], {}, "changes")'
check_unchanged "example, second apply: nothing written" "$r1" "$tmp/r1.applied"

sc example "$tmp/ex-again-test.json" state.apply test=True pillar="$over1"
check "example, test=True after apply: result True, no changes" "$tmp/ex-again-test.json" '
s = state("md-raid-tuned")
eq(s["result"], True, "result: " + s["comment"])
eq(s["changes"], {}, "changes")'

sc example "$tmp/bad.json" state.single mdtune.managed name=bad-value root="$r1" \
  arrays='[{"name": "md0", "stripe_cache_size": 5}]'
rc=$?
check "a bad value: result False, the comment names the key" "$tmp/bad.json" '
s = state("bad-value")
eq(s["result"], False, "result")
assert "mdtune failed" in s["comment"] and "stripe_cache_size" in s["comment"], s["comment"]
eq(s["changes"], {}, "changes")'
check_rc "a bad value: salt-call exits non-zero" "$rc" "non-zero" '[ "$rc" -ne 0 ]'
check_unchanged "a bad value: nothing written" "$r1" "$tmp/r1.applied"

sc example "$tmp/unknown.json" mdtune.apply root="$r1" stripe_cache=4096
rc=$?
check "mdtune.apply with an unknown argument returns mdtune's JSON failure naming it" "$tmp/unknown.json" '
eq(r.get("failed"), True, "failed")
assert "stripe_cache" in r.get("msg", ""), r
assert "__pub" not in r.get("msg", ""), r'
check_rc "mdtune.apply with an unknown argument: exit status 2 (unusable input)" "$rc" 2 '[ "$rc" -eq 2 ]'

sc example "$tmp/revert.json" mdtune.revert root="$r1"
check "mdtune.revert restores the values saved before the first change" "$tmp/revert.json" "
root = '$r1'
eq(r.get('failed'), False, 'failed: %s' % r.get('msg'))
eq(r.get('changed'), True, 'changed')
eq(md(root, 'md0', 'group_thread_cnt'), '0', 'md0 group_thread_cnt')
eq(md(root, 'md0', 'stripe_cache_size'), '256', 'md0 stripe_cache_size')
eq(md(root, 'md2', 'skip_copy'), '0', 'md2 skip_copy')
assert md(root, 'md1', 'sync_speed_min') in ('system', '1000 (system)'), md(root, 'md1', 'sync_speed_min')
eq(proc(root, 'speed_limit_max'), '200000', 'speed_limit_max')"

# A stand-in binary that records what it was given: what the wrappers pass, independent of mdtune.
cat >"$tmp/record-mdtune" <<EOF
#!$py
import json, sys
open("$tmp/recorded.json", "w").write(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read()}))
print(json.dumps({"changed": False, "failed": False, "msg": "recorded", "arrays": []}))
EOF
chmod +x "$tmp/record-mdtune"
sc example "$tmp/record.json" state.single mdtune.managed name=recorded test=True \
  binary="$tmp/record-mdtune" root=/nonexistent thread_policy=off speed_limit_max=500000 \
  arrays='[{"name": "back\\nslash", "group_thread_cnt": "8", "skip_copy": true}]'
check "what reaches the binary: [binary, \"-\"], exact JSON on stdin, test=True as check_mode, no Salt keys" \
  "$tmp/recorded.json" '
eq(r.get("argv"), ["-"], "argv")
given = json.loads(r["stdin"])
eq(given, {"arrays": [{"name": "back\\nslash", "group_thread_cnt": "8", "skip_copy": True}],
           "thread_policy": "off", "speed_limit_max": 500000, "root": "/nonexistent",
           "check_mode": True, "state": "present"}, "stdin JSON")'

sc example "$tmp/nojson.json" mdtune.query root="$r1" binary=/bin/echo
check "a binary that prints no JSON: failed, with its exit status and output" "$tmp/nojson.json" '
eq(r.get("failed"), True, "failed")
assert "without a JSON result" in r["msg"] and "stdout: -" in r["msg"], r["msg"]'

sc example "$tmp/missing.json" state.single mdtune.managed name=no-binary binary="$tmp/nonexistent/mdtune"
check "a missing binary: result False, the comment says where it looked and what to do" "$tmp/missing.json" '
s = state("no-binary")
eq(s["result"], False, "result")
assert "nonexistent/mdtune" in s["comment"] and "mdtune:binary" in s["comment"], s["comment"]'

# --- the SUSE Manager / Uyuni formula -------------------------------------------------------------
# The form and the sample pillar describe the same keys: pillar.example is what the form writes.
if out=$("$py" - "$repo/module_utils/suma" <<'EOF' 2>&1
import sys, yaml
base = sys.argv[1]
form = yaml.safe_load(open(base + "/metadata/mdtune/form.yml"))
pillar = yaml.safe_load(open(base + "/pillar.example"))
meta = yaml.safe_load(open(base + "/metadata/mdtune/metadata.yml"))
assert meta.get("description") and meta.get("group"), "metadata.yml needs description and group"
def fields(node):
    """The pillar keys a form node produces: {key: sub-fields or None}, edit-groups as {"$key": ...}."""
    out = {}
    for key, spec in node.items():
        if key.startswith("$"):
            continue
        kind = spec.get("$type", "text")
        if kind in ("group", "namespace"):
            out[key] = fields(spec)
        elif kind == "edit-group":
            out[key] = {"$key": fields(spec["$prototype"])}
        else:
            assert kind in ("text", "number", "boolean", "select"), "%s: type %s" % (key, kind)
            if kind == "select":
                assert spec["$values"] and all(isinstance(v, str) for v in spec["$values"]), key
            out[key] = None
    return out
def compare(expected, actual, path):
    if expected is None:
        return
    assert isinstance(actual, dict), "%s: expected a group, got %r" % (path, actual)
    if set(expected) == {"$key"}:
        assert actual, "%s: the sample has no entries" % path
        for name, entry in actual.items():
            compare(expected["$key"], entry, "%s.%s" % (path, name))
        return
    assert set(expected) == set(actual), "%s: form has %s, pillar.example has %s" % (
        path, sorted(expected), sorted(actual))
    for key in expected:
        compare(expected[key], actual[key], path + "." + key)
compare(fields(form), pillar, "pillar")
EOF
); then ok "form.yml and pillar.example describe the same pillar keys"
else not_ok "form.yml and pillar.example describe the same pillar keys" "$(echo "$out" | tail -n 4)"; fi

r2=$tmp/root2
new_root "$r2"
# The binary where the formula's default source, salt://mdtune/files/mdtune, finds it: like
# /srv/salt/mdtune/files/mdtune next to the formula in /usr/share/salt-formulas/states/mdtune.
mkdir -p "$tmp/formula-top/mdtune/files"
cp "$bin" "$tmp/formula-top/mdtune/files/mdtune"
over2=$(printf '{"mdtune": {"root": "%s", "deploy": {"enabled": true, "target": "%s"}}}' \
  "$r2" "$tmp/minion-bin/mdtune")
snapshot "$r2" >"$tmp/r2.pristine"

sc formula "$tmp/fo-test.json" state.apply test=True pillar="$over2"
check "formula, test=True: the binary would be deployed, tuning waits for it, nothing written" "$tmp/fo-test.json" "
f = state('mdtune-binary')
eq(f['result'], None, 'file.managed result')
s = state('mdtune-tuned')
eq(s['result'], None, 'mdtune.managed result')
assert 'not there yet' in s['comment'], s['comment']
assert not os.path.exists('$tmp/minion-bin/mdtune'), 'binary deployed in test mode'"
check_unchanged "formula, test=True: the fake root is untouched" "$r2" "$tmp/r2.pristine"

sc formula "$tmp/fo-apply.json" state.apply pillar="$over2"
check "formula with the form-shaped pillar: deploys the binary and applies" "$tmp/fo-apply.json" "
root = '$r2'
f = state('mdtune-binary')
eq(f['result'], True, 'file.managed result: ' + f['comment'])
assert os.access('$tmp/minion-bin/mdtune', os.X_OK), 'deployed binary not executable'
s = state('mdtune-tuned')
eq(s['result'], True, 'result: ' + s['comment'])
c = s['changes']
eq(c.get('md0', {}).get('stripe_cache_size'), {'old': 256, 'new': 4096}, 'md0 stripe_cache_size (exact beats glob)')
eq(md(root, 'md0', 'stripe_cache_size'), '4096', 'md0 stripe_cache_size')
eq(md(root, 'md0', 'preread_bypass_threshold'), '64', 'md0 preread_bypass_threshold')
eq(md(root, 'md0', 'group_thread_cnt'), '8', 'md0 group_thread_cnt (auto)')
eq(md(root, 'md0', 'sync_speed_max').split()[0], '500000', 'md0 sync_speed_max')
eq(md(root, 'md1', 'sync_speed_min').split()[0], '50000', 'md1 sync_speed_min')
eq(md(root, 'md2', 'stripe_cache_size'), '1024', 'md2 stripe_cache_size (glob)')
eq(md(root, 'md2', 'group_thread_cnt'), '4', 'md2 group_thread_cnt (entry)')
eq(md(root, 'md2', 'skip_copy'), '1', 'md2 skip_copy')
eq(md(root, 'md3', 'stripe_cache_size'), '1024', 'md3 stripe_cache_size (glob)')
eq(md(root, 'md3', 'group_thread_cnt'), '0', 'md3 group_thread_cnt (auto, one queue)')
eq(proc(root, 'speed_limit_max'), '400000', 'speed_limit_max')
assert c.get('persist', {}).get('files'), 'persist: %r' % c.get('persist')
assert os.listdir(os.path.join(root, 'etc/mdtune')), 'nothing persisted under etc/mdtune'"

snapshot "$r2" >"$tmp/r2.applied"
sc formula "$tmp/fo-again.json" state.apply pillar="$over2"
check "formula, second run: converged, no changes" "$tmp/fo-again.json" '
for sid in ("mdtune-binary", "mdtune-tuned"):
    s = state(sid)
    eq(s["result"], True, sid + " result: " + s["comment"])
    eq(s["changes"], {}, sid + " changes")'
check_unchanged "formula, second run: nothing written" "$r2" "$tmp/r2.applied"

sc formula "$tmp/fo-revert.json" state.single mdtune.reverted name=undo root="$r2" binary="$tmp/minion-bin/mdtune"
check "mdtune.reverted: the original values are back, the persisted files gone" "$tmp/fo-revert.json" "
root = '$r2'
s = state('undo')
eq(s['result'], True, 'result: ' + s['comment'])
eq(s['changes'].get('md0', {}).get('stripe_cache_size'), {'old': 4096, 'new': 256}, 'md0 stripe_cache_size')
eq(md(root, 'md0', 'stripe_cache_size'), '256', 'md0 stripe_cache_size')
eq(md(root, 'md2', 'group_thread_cnt'), '0', 'md2 group_thread_cnt')
eq(proc(root, 'speed_limit_max'), '200000', 'speed_limit_max')
assert not os.path.exists(os.path.join(root, 'etc/mdtune/mdtune.json')), 'etc/mdtune/mdtune.json is still there'"

sc formula "$tmp/fo-revert-again.json" state.single mdtune.reverted name=undo root="$r2" binary="$tmp/minion-bin/mdtune"
check "mdtune.reverted again: result True, no changes" "$tmp/fo-revert-again.json" '
s = state("undo")
eq(s["result"], True, "result: " + s["comment"])
eq(s["changes"], {}, "changes")'

# --- nothing outside the temporary directory ------------------------------------------------------
outside_after=$(outside)
if [ "$outside_before" = "$outside_after" ]; then ok "Salt wrote nothing outside $tmp"
else not_ok "Salt wrote nothing outside $tmp" "before: $outside_before" "after: $outside_after"; fi

echo "# $calls salt-call runs in $((SECONDS - t0)) s; slowest:"
sort -rn "$tmp/timings" | head -n 3 | cut -c1-110 | sed 's/^/#   /'
[ "$failed" -eq 0 ] || echo "# Salt logs: $tmp/salt-*.log, $tmp/salt-stderr.log"
finish
