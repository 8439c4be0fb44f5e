#!/usr/bin/env bash
# Fleet suite: a real salt-master and MDTUNE_FLEET_MINIONS (default 10) salt-minion processes on
# loopback, with the Salt of ${MDTUNE_VENV:-<repo>/.venv}, roll the mdtune formula out the way a
# SUSE Manager / Salt fleet does:
#   1. the modules reach the minions by saltutil.sync_all from the master's file_roots
#      (_modules, _states: module_utils/salt, laid out as the formula package installs them);
#   2. the formula's pillar, in the shape the SUSE Manager form writes (pillar.example), is
#      master pillar, plus one small pillar per minion naming its fake root and the binary;
#   3. a dry run, state.apply mdtune test=True on all: predicted changes, nothing written;
#   4. a canary (one minion), then a batched rollout (salt -b 3): all converge, a second apply
#      changes nothing; the rollout's wall time is printed;
#   5. the form changes; one minion's host refuses a write (its binary runs unprivileged and
#      meets a root-owned read-only attribute): its state fails with the message and rolls
#      back, the job's return names it, the other minions converge;
#   6. a compliance sweep (salt '*' mdtune.query, each minion against its own formula pillar),
#      summarised per minion; a value drifted by hand on one minion makes that minion, and only
#      that one, not compliant.
#
# Every process, config, key, socket, log and fake root lives in one temporary directory; the
# master listens on 127.0.0.1 on two free ports. The salt CLI's JSON is checked by
# tests/fleet/checks.py, one named check each. Every wait is bounded; the master and minions
# are stopped (by their process group ids) and the directory removed on exit, also on failure
# or interrupt (the directory is kept, with the logs, when a check failed or MDTUNE_KEEP_TMP is
# set). Builds the release binary unless MDTUNE_BIN=PATH is given. Needs setpriv (util-linux)
# and root (the refused write is a real EACCES met by an unprivileged run).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
n=${MDTUNE_FLEET_MINIONS:-10}

# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"

for tool in salt-master salt-minion salt salt-key python; do
  if [ ! -x "$venv/bin/$tool" ]; then
    not_ok "$tool is available" "no $venv/bin/$tool: create the venv with .ci/setup-python.sh" \
      "(python3 -m venv $venv && $venv/bin/pip install 'salt==3008.4'), or set MDTUNE_VENV"
    finish
  fi
done
if ! command -v setpriv >/dev/null; then
  not_ok "setpriv is available" "install util-linux (apt-get install util-linux)"
  finish
fi
if [ "$(id -u)" -ne 0 ]; then
  not_ok "running as root" "the refused write needs root: a root-owned file met by an unprivileged run"
  finish
fi
py=$venv/bin/python

mdtune_binary

scratch fleet
chmod 755 "$tmp"
# Every process this suite starts leads its own process group (setsid_bg): stopped on exit.
at_exit stop_groups
checks=$repo/tests/fleet/checks.py

t_suite=$SECONDS
read -r pub_port ret_port < <("$py" "$repo/tests/ports.py" 2)

# --- the master: file_roots as the formula package installs them, pillar as SUSE Manager's --
m=$tmp/master
mkdir -p "$m/conf" "$m/srv/top" "$m/srv/pillar"
cat >"$m/conf/master" <<EOF
interface: 127.0.0.1
publish_port: $pub_port
ret_port: $ret_port
root_dir: $m
pki_dir: $m/pki
cachedir: $m/cache
sock_dir: $m/sock
pidfile: $m/master.pid
log_file: $m/log
log_level_logfile: info
user: root
worker_threads: 3
enable_fqdns_grains: false
file_roots:
  base:
    - $repo/module_utils/suma/states
    - $repo/module_utils/salt
    - $m/srv/top
pillar_roots:
  base:
    - $m/srv/pillar
EOF
printf 'base:\n  "*":\n    - mdtune\n' >"$m/srv/top/top.sls"
# The formula's pillar as the SUSE Manager form writes it, for the whole group.
cp "$repo/module_utils/suma/metadata/mdtune/pillar.example" "$m/srv/pillar/mdtune.sls"
ids=()
{
  echo "base:"
  echo "  '*':"
  echo "    - mdtune"
  for i in $(seq 1 "$n"); do
    id=$(printf 'm%02d' "$i"); ids+=("$id")
    echo "  '$id':"
    echo "    - host_$id"
  done
} >"$m/srv/pillar/top.sls"

# --- the minions: own id, config, pki, cache and fake root each --------------------------------
for id in "${ids[@]}"; do
  d=$tmp/$id
  mkdir -p "$d/conf"
  cp -a "$repo/examples/demo-host" "$d/root"
  # Where this host's md sysfs is and which binary it runs: the minion's own pillar.
  printf 'mdtune:\n  root: %s\n  binary: %s\n' "$d/root" "$bin" >"$m/srv/pillar/host_$id.sls"
  cat >"$d/conf/minion" <<EOF
id: $id
master: 127.0.0.1
master_port: $ret_port
publish_port: $pub_port
root_dir: $d
pki_dir: $d/pki
cachedir: $d/cache
sock_dir: $d/sock
pidfile: $d/minion.pid
log_file: $d/log
log_level_logfile: info
user: root
# Light minions for a 2-core machine: jobs in threads, grains once, no lookups.
multiprocessing: false
enable_fqdns_grains: false
enable_gpu_grains: false
grains_cache: true
grains_refresh_every: 0
mine_enabled: false
loop_interval: 1
acceptance_wait_time: 1
acceptance_wait_time_max: 2
random_reauth_delay: 0
random_startup_delay: 0
auth_timeout: 10
EOF
done

# salt_cmd OUTFILE ARGS...: the salt CLI against this master, bounded (each minion's return
# within $to seconds, the whole command within 300); JSON on OUTFILE.
to=60
salt_cmd() {
  local out=$1; shift
  timeout 300 "$venv/bin/salt" -c "$m/conf" --out=json --timeout="$to" "$@" >"$out" 2>"$out.err"
}

echo "# $("$venv/bin/salt-master" --version), $n minions, master 127.0.0.1:$ret_port/$pub_port, temp $tmp"
t0=$SECONDS
setsid_bg "$venv/bin/salt-master" -c "$m/conf" --disable-keepalive -l quiet </dev/null >/dev/null 2>&1
for id in "${ids[@]}"; do
  setsid_bg "$venv/bin/salt-minion" -c "$tmp/$id/conf" --disable-keepalive -l quiet </dev/null >/dev/null 2>&1
done

# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds, at most SECONDS.
wait_for() {
  local limit=$1; shift 2 # $2, the DESCRIPTION, is for the reader of the call
  local start=$SECONDS
  until "$@"; do
    if [ $((SECONDS - start)) -ge "$limit" ]; then return 1; fi
    sleep 1
  done
}
# shellcheck disable=SC2317 # run by wait_for
pending_all() {
  "$venv/bin/salt-key" -c "$m/conf" -l unaccepted --out=json 2>/dev/null | "$py" "$checks" pending "$n"
}
if wait_for 120 "keys" pending_all; then
  ok "$n minions started and sent their keys ($((SECONDS - t0)) s)"
else
  not_ok "$n minions started and sent their keys" "$("$venv/bin/salt-key" -c "$m/conf" -L 2>&1)"
  finish
fi
"$venv/bin/salt-key" -c "$m/conf" -A -y >/dev/null 2>&1
# A minion logs this once its key is accepted and it listens; a ping before that is lost.
# shellcheck disable=SC2317 # run by wait_for
all_ready() {
  [ "$(grep -l "Minion is ready to receive requests" "$tmp"/m*/log 2>/dev/null | wc -l)" -ge "$n" ]
}
wait_for 120 "ready" all_ready
# shellcheck disable=SC2317 # run by wait_for
all_answer() {
  to=5 salt_cmd "$tmp/ping.json" --static '*' test.ping
  "$py" "$checks" answer "$tmp/ping.json" "${ids[*]}" 2>/dev/null
}
if wait_for 120 "ping" all_answer; then
  ok "keys accepted by the test (salt-key -A); all $n minions answer test.ping ($((SECONDS - t0)) s after start)"
else
  not_ok "keys accepted by the test (salt-key -A); all $n minions answer test.ping" "$(cat "$tmp/ping.json" "$tmp/ping.json.err")"
  finish
fi

# salt_check NAME FILE CHECK [ARG...]: tests/fleet/checks.py's CHECK on the salt CLI's JSON in FILE.
salt_check() {
  local name=$1 file=$2 code=$3 out; shift 3
  [ -e "$file.err" ] || : >"$file.err"
  if out=$("$py" "$checks" "$code" "$file" "${ids[*]}" "$tmp" "$@" 2>&1); then ok "$name"
  else not_ok "$name" "$(echo "$out" | tail -n 10)"; fi
}
snapshot_roots() {
  local id
  for id in "${ids[@]}"; do (cd "$tmp/$id/root" && find . -printf "$id %p %y %s %T@\n" | sort); done
}

# --- 1. the modules reach the minions from the master -----------------------------------------
salt_cmd "$tmp/sync.json" --static '*' saltutil.sync_all
salt_check "1. saltutil.sync_all: every minion gets modules.mdtune and states.mdtune from the master's file_roots" "$tmp/sync.json" synced

# --- 2./3. the formula's pillar drives state.apply mdtune; a dry run first -----------------------
salt_cmd "$tmp/desired.json" --static '*' mdtune.desired
salt_check "2. each minion's desired state is the form's pillar plus its own root (mdtune.desired)" "$tmp/desired.json" desired
snapshot_roots >"$tmp/roots.before"
salt_cmd "$tmp/dry.json" --static '*' state.apply mdtune test=True
salt_check "3. dry run (state.apply mdtune test=True): every minion predicts the form's changes, result None" "$tmp/dry.json" dry-run
if d=$(diff "$tmp/roots.before" <(snapshot_roots)); then ok "3. dry run: no minion's root was written"
else not_ok "3. dry run: no minion's root was written" "$(echo "$d" | head -n 8)"; fi

# --- 4. canary, then batches of 3 ----------------------------------------------------------------
t_roll=$(date +%s%N)
salt_cmd "$tmp/canary.json" --static "${ids[0]}" state.apply mdtune
salt_check "4. canary: ${ids[0]} alone converges first" "$tmp/canary.json" canary "${ids[0]}"
salt_cmd "$tmp/batch.json" -b 3 '*' state.apply mdtune
batch_rc=$?
roll_ms=$(( ($(date +%s%N) - t_roll) / 1000000 ))
salt_check "4. batched rollout (salt -b 3 '*' state.apply mdtune): every minion converges" "$tmp/batch.json" rolled-out "${ids[0]}"
if [ "$batch_rc" -eq 0 ]; then ok "4. batched rollout: salt exits 0"
else not_ok "4. batched rollout: salt exits 0" "exit status $batch_rc"; fi
echo "# $n-minion rollout (canary + batches of 3): $((roll_ms / 1000)).$(printf '%03d' $((roll_ms % 1000))) s"
snapshot_roots >"$tmp/roots.converged"
salt_cmd "$tmp/again.json" -b 3 '*' state.apply mdtune
salt_check "4. second batched apply: every minion result True, no changes" "$tmp/again.json" unchanged
if d=$(diff "$tmp/roots.converged" <(snapshot_roots)); then ok "4. second apply: nothing written on any minion"
else not_ok "4. second apply: nothing written on any minion" "$(echo "$d" | head -n 8)"; fi

# --- 5. the form changes; one host refuses a write ------------------------------------------------
bad=${ids[6]:-${ids[-1]}}
# The group's form: md0 gets a bigger stripe cache and skip_copy on.
"$py" "$checks" form "$m/srv/pillar/mdtune.sls"
# $bad's host: its mdtune runs unprivileged (uid 65534, owner of the root) and md0's skip_copy is
# root's and read-only, so that write gets EACCES after stripe_cache_size was written.
chown -R 65534:65534 "$tmp/$bad/root"
chown 0:0 "$tmp/$bad/root/sys/block/md0/md/skip_copy"
chmod 0444 "$tmp/$bad/root/sys/block/md0/md/skip_copy"
cat >"$tmp/$bad/mdtune-unprivileged" <<EOF
#!/bin/sh
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" "\$@"
EOF
chmod 755 "$tmp/$bad/mdtune-unprivileged"
printf 'mdtune:\n  root: %s\n  binary: %s\n' "$tmp/$bad/root" "$tmp/$bad/mdtune-unprivileged" >"$m/srv/pillar/host_$bad.sls"
salt_cmd "$tmp/refused.json" -b 3 '*' state.apply mdtune
refused_rc=$?
salt_check "5. $bad's host refuses a write: its state fails with the message and what was rolled back" "$tmp/refused.json" refused "$bad"
salt_check "5. the other minions are unaffected: they converge on the new form values" "$tmp/refused.json" others-converged "$bad"
salt_check "5. the job's return names the failed minion, and only it" "$tmp/refused.json" only-failed "$bad"
if [ "$refused_rc" -ne 0 ]; then ok "5. salt exits non-zero when a minion's state failed (exit status $refused_rc)"
else not_ok "5. salt exits non-zero when a minion's state failed"; fi

# --- 6. compliance sweep --------------------------------------------------------------------------
# Fix the host (the write is allowed again) and apply on that minion only.
chmod 0644 "$tmp/$bad/root/sys/block/md0/md/skip_copy"
chown 65534:65534 "$tmp/$bad/root/sys/block/md0/md/skip_copy"
salt_cmd "$tmp/fix.json" --static "$bad" state.apply mdtune
salt_check "6. $bad, its host fixed, converges on its own" "$tmp/fix.json" fixed "$bad"

# sweep FILE: salt '*' mdtune.query, then one line per minion.
sweep() {
  salt_cmd "$1" --static '*' mdtune.query
  "$py" "$checks" sweep "$1" "${ids[*]}" "$tmp"
}
echo "# compliance sweep: salt '*' mdtune.query"
sweep "$tmp/sweep1.json"
salt_check "6. compliance sweep: every minion compliant with its formula pillar" "$tmp/sweep1.json" all-compliant
drift=${ids[2]}
# By hand on one host: md2's stripe cache (the form's md* says 1024) set back to 256.
echo 256 >"$tmp/$drift/root/sys/block/md2/md/stripe_cache_size"
echo "# drifted by hand: $drift md2 stripe_cache_size 1024 -> 256"
sweep "$tmp/sweep2.json"
salt_check "6. after drift on $drift: only $drift is not compliant, and it names md2 stripe_cache_size" "$tmp/sweep2.json" drifted "$drift"
salt_cmd "$tmp/defaults.json" --static "$drift" mdtune.query from_pillar=False
salt_check "6. the same drift is named by a query without desired state of its own (from_pillar=False): it compares with what was rolled out, the persisted state" "$tmp/defaults.json" drifted-from-persisted "$drift"

stop_groups
ok "master and $n minions stopped"
echo "# fleet suite: $((SECONDS - t_suite)) s"
finish
