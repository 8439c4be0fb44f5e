#!/usr/bin/env bash
# Monitoring suite (docs/operations.md, docs/testing.md): mdtune's metrics through real
# Prometheus parts, Debian 12's `prometheus` (2.42, with promtool) and
# `prometheus-node-exporter` (1.5), on a fake host (examples/mkroot's demo host):
#   1. the alerting rules: promtool check rules, and promtool test rules with their tests
#      (packaging/prometheus/mdtune-rules.test.yml);
#   2. the service and timer: systemd-analyze verify; then the service's own ExecStart, taken
#      from packaging/systemd/mdtune-tick.service (its ${VAR}s expanded as systemd does, the
#      binary the one under test), writes the textfile of the host persisted
#      with [{"name": "*"}, {"name": "hana_data", "stripe_cache_size": 4096}] whose md0 stripe
#      cache was then set to 1024 by hand, atomically (no temporary file left), and promtool
#      check metrics passes it;
#   3. node_exporter's textfile collector serves that file on a loopback port;
#   4. a real Prometheus scrapes it every second and evaluates the shipped rules (their `for:`
#      set to 0s, the only change) every second: the query API has md0's live 1024 and
#      wanted 4096, and /api/v1/alerts has MdtuneNotCompliant and MdtunePersistenceDiverged
#      firing for that host; the cache put back and the textfile rewritten, both resolve; then
#      the drift-to-page latency: the cache drifted again, the time from the drift to the alert
#      firing, printed and loosely bounded.
# Every process and file lives in one temporary directory (kept when a check failed or
# MDTUNE_KEEP_TMP is set); node_exporter and Prometheus lead their own process groups and are
# stopped on exit (tests/lib.sh). The JSON and the unit are read by tests/monitoring/prom.py. Builds the release binary unless MDTUNE_BIN is given, and examples/mkroot
# (debug). About 15 s once both are built. Needs .ci/setup-monitoring.sh.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"
prom=$repo/tests/monitoring/prom.py
t_start=$(date +%s)

for tool in prometheus promtool prometheus-node-exporter; do
  if ! command -v "$tool" >/dev/null; then
    not_ok "$tool is installed" "run .ci/setup-monitoring.sh (apt-get install prometheus prometheus-node-exporter)"
    finish
  fi
done
for tool in systemd-analyze curl python3 setsid; do
  command -v "$tool" >/dev/null || { not_ok "$tool is installed" "apt-get install systemd curl python3 util-linux"; finish; }
done

mdtune_binary
# The fake-host builder, as cargo test builds it (debug: already there after the cargo-test suite).
echo "# cargo build --example mkroot"
if ! (cd "$repo" && cargo build --quiet --example mkroot); then
  not_ok "cargo build --example mkroot" "the fake-host builder does not build"
  finish
fi
mkroot=${CARGO_TARGET_DIR:-$repo/target}/debug/examples/mkroot
case $mkroot in /*) ;; *) mkroot=$repo/$mkroot ;; esac

scratch monitoring
at_exit stop_groups

free_port() { python3 "$repo/tests/ports.py"; }
# wait_for URL SECONDS: until URL answers 200.
wait_for() {
  for _ in $(seq 1 $(($2 * 10))); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# --- 1. the alerting rules ----------------------------------------------------------------------
rules=$repo/packaging/prometheus/mdtune-rules.yml
check "promtool check rules packaging/prometheus/mdtune-rules.yml" promtool check rules "$rules"
check "promtool test rules packaging/prometheus/mdtune-rules.test.yml (drift, a rule gone, a slow rebuild, a stale file)" \
  bash -c "cd '$repo/packaging/prometheus' && promtool test rules mdtune-rules.test.yml"

# --- 2. the service and timer write the textfile ------------------------------------------------
unit=$repo/packaging/systemd/mdtune-tick.service
# systemd-analyze verify checks that ExecStart's program exists: a copy that runs the binary
# under test, the rest of the unit as shipped.
mkdir -p "$tmp/units"
sed "s|^ExecStart=/usr/sbin/mdtune |ExecStart=$bin |" "$unit" >"$tmp/units/mdtune-tick.service"
cp "$repo/packaging/systemd/mdtune-tick.timer" "$tmp/units/"
check "systemd-analyze verify mdtune-tick.service and .timer" \
  systemd-analyze verify --man=no "$tmp/units/mdtune-tick.service" "$tmp/units/mdtune-tick.timer"
# tick_command TEXTFILE_DIR MDTUNE_ROOT: the service's command as systemd runs it, one word a line:
# ExecStart's words, each ${VAR} (a whole word) replaced by its value, /usr/sbin/mdtune by the
# binary under test.
tick_command() { python3 "$prom" tick-command "$unit" "$bin" "$1" "$2"; }

host=$tmp/host
"$mkroot" demo "$host" >/dev/null
out=$(printf '{"root": "%s", "persist": true, "arrays": [{"name": "*"}, {"name": "hana_data", "stripe_cache_size": 4096}]}' "$host" | "$bin" -)
check "the demo host is persisted with hana_data's stripe cache at 4096" \
  python3 "$prom" persisted "$out"
cache=$(find "$host/sys/devices" -path '*/md0/md/stripe_cache_size' | head -n1)
echo 1024 >"$cache"
textfile=$tmp/textfile
# run_tick ROOT: the service's command on ROOT, writing into $textfile.
run_tick() {
  local cmd=()
  mapfile -t cmd < <(tick_command "$textfile" "$1") || return 1
  [ ${#cmd[@]} -gt 0 ] || return 1
  "${cmd[@]}" >/dev/null
}
# shellcheck disable=SC2317 # run by check
write_metrics() { run_tick "$host"; }
check "the service's command ($(tick_command "$textfile" "$host" | paste -sd' ')) writes $textfile/mdtune.prom" write_metrics
check "... atomically: only mdtune.prom is left in the directory" test "$(ls -A "$textfile")" = mdtune.prom
check "... as a regular file of mode 0644" test "$(stat -c '%F %a' "$textfile/mdtune.prom")" = "regular file 644"
check "promtool check metrics passes mdtune's file" bash -c "promtool check metrics <'$textfile/mdtune.prom'"
check "the file names md0's drifted stripe cache: 1024 live, 4096 wanted" bash -c "
  grep -qx 'mdtune_array_stripe_cache_size{array=\"md0\",device=\"md0\"} 1024' '$textfile/mdtune.prom' &&
  grep -qx 'mdtune_array_wanted_stripe_cache_size{array=\"md0\",device=\"md0\",source=\"arrays\[1\]\"} 4096' '$textfile/mdtune.prom'"
# A host that cannot be read: the command fails and the old file stays.
cp "$textfile/mdtune.prom" "$tmp/before.prom"
mkdir -p "$tmp/unreadable"
cp -a "$host/." "$tmp/unreadable/"
echo garbage >"$tmp/unreadable/proc/sys/dev/raid/speed_limit_min"
if run_tick "$tmp/unreadable" 2>/dev/null; then
  not_ok "with a host that cannot be read the service fails" "it exited 0"
else
  check "with a host that cannot be read the service fails, leaving the last file and no temporary one" \
    bash -c "cmp -s '$tmp/before.prom' '$textfile/mdtune.prom' && test \"\$(ls -A '$textfile')\" = mdtune.prom"
fi

# --- 3. node_exporter serves it ------------------------------------------------------------------
ne_port=$(free_port)
dash=$repo/tests/monitoring/dashboard.py
python3 "$dash" mdstat "$tmp/proc"
setsid_bg prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" --collector.disable-defaults \
  --collector.textfile --collector.textfile.directory="$textfile" \
  --collector.mdadm --path.procfs="$tmp/proc" >"$tmp/node_exporter.log" 2>&1
if wait_for "http://127.0.0.1:$ne_port/metrics" 20; then
  curl -fsS "http://127.0.0.1:$ne_port/metrics" >"$tmp/scraped"
  check "node_exporter's textfile collector serves md0's stripe cache and reads the file without error" bash -c "
    grep -qx 'mdtune_array_stripe_cache_size{array=\"md0\",device=\"md0\"} 1024' '$tmp/scraped' &&
    grep -qx 'node_textfile_scrape_error 0' '$tmp/scraped'"
else
  not_ok "node_exporter answers on 127.0.0.1:$ne_port" "$(tail -n 5 "$tmp/node_exporter.log")"
  finish
fi

# --- 4. Prometheus scrapes it and the alerts fire --------------------------------------------------
sed -E 's/^( +)for: .*/\1for: 0s/' "$rules" >"$tmp/rules.yml"
cat >"$tmp/prometheus.yml" <<EOF2
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $tmp/rules.yml
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:$ne_port"]
        labels: {host: demo, env: test}
EOF2
pr_port=$(free_port)
setsid_bg prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$pr_port" >"$tmp/prometheus.log" 2>&1
if ! wait_for "http://127.0.0.1:$pr_port/-/ready" 30; then
  not_ok "Prometheus is ready on 127.0.0.1:$pr_port" "$(tail -n 5 "$tmp/prometheus.log")"
  finish
fi
api=http://127.0.0.1:$pr_port/api/v1
# shellcheck disable=SC2317 # run by check
# alerts STATE NAMES...: waits up to 30 s until /api/v1/alerts has exactly NAMES in STATE for
# this host (none: no alert at all); prints what it saw last.
alerts() {
  local state=$1; shift
  local want seen
  want=$(printf '%s\n' "$@" | sort | paste -sd' ')
  for _ in $(seq 1 60); do
    seen=$(curl -fsS "$api/alerts" | python3 "$prom" alerts "127.0.0.1:$ne_port" "$state")
    [ "$seen" = "$want" ] && { echo "$seen"; return 0; }
    sleep 0.5
  done
  echo "firing for this host: '$seen', wanted '$want'"
  return 1
}
query() { curl -fsS --get --data-urlencode "query=$1" "$api/query" | python3 "$prom" value; }
t_alerts=$(date +%s)
check "/api/v1/alerts: MdtuneNotCompliant and MdtunePersistenceDiverged fire for the drifted host" \
  alerts firing MdtuneNotCompliant MdtunePersistenceDiverged
echo "# alerts fired $(($(date +%s) - t_alerts)) s after Prometheus was ready"
live=$(query 'mdtune_array_stripe_cache_size{array="md0"}')
wanted=$(query 'mdtune_array_wanted_stripe_cache_size{array="md0"}')
check "the query API: md0's stripe cache live $live, wanted $wanted (1024, 4096)" test "$live/$wanted" = 1024/4096
echo 4096 >"$cache"
write_metrics
check "the cache put back and the file rewritten: no mdtune alert fires for the host any more" alerts firing
# The drift-to-page latency (docs/operations.md, "How late"): from the moment a value drifts to
# the alert firing. On a host: the tick that sees it (up to 60 s) + the scrape interval + the
# rule's for:; here the tick runs at once, the scrape and the evaluation are 1 s and for: is 0s,
# so what is measured is mdtune's file, node_exporter and Prometheus' own delay. Bounded loosely
# (20 s) so that a loaded machine does not fail it; printed.
echo 2048 >"$cache"
t_drift=$(date +%s%3N)
write_metrics
if alerts firing MdtuneNotCompliant MdtunePersistenceDiverged >/dev/null; then
  ms=$(($(date +%s%3N) - t_drift))
  latency=$((ms / 1000)).$((ms % 1000 / 100))
  echo "# drift to page: ${latency} s (tick at once, scrape_interval 1s, evaluation_interval 1s, for: 0s)"
  check "a drifted value pages within 20 s of the tick that sees it (measured ${latency} s)" test "$ms" -lt 20000
else
  not_ok "a drifted value pages: MdtuneNotCompliant fires after the tick that sees it" "no alert within 30 s"
fi
echo 4096 >"$cache"
write_metrics
check "put back again: no mdtune alert fires" alerts firing
# --- 5. the health alerts and the dashboard (tests/monitoring/dashboard.py) -----------------------
check "ticks record md2's whole check with 8 mismatches; md0 degraded, md3 frozen, md1 slow" \
  python3 "$dash" simulate "$bin" "$host" "$textfile"
check "the health alerts fire keeping the target's host and env labels and the array's" \
  python3 "$dash" alerts "$api" "127.0.0.1:$ne_port" MdtuneArrayDegraded MdtuneParityMismatch MdtuneSyncFrozen MdtuneSyncSlowerThanLimit
check "every panel's query of packaging/grafana/mdtune.json returns data" \
  python3 "$dash" queries "$repo/packaging/grafana/mdtune.json" "$api"
echo "# monitoring suite: $(($(date +%s) - t_start)) s"
finish
