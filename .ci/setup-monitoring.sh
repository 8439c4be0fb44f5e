#!/usr/bin/env bash
# Installs what tests/monitoring/run.sh needs on a Debian 12 machine, as root: Debian's
# `prometheus` (the server and promtool, 2.42) and `prometheus-node-exporter` (1.5). The suite
# starts its own node_exporter and Prometheus on loopback ports with their data in a temporary
# directory; the packages' services are never started: a policy-rc.d that refuses every start is
# in place while the packages install (unless the machine already has one), and recommended
# packages (the collectors' timers) are not installed.
# Idempotent: a machine with all three programs only checks and returns.
set -euo pipefail
log() { echo "setup-monitoring: $*" >&2; }
have() {
  [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ] && [ -x /usr/bin/prometheus-node-exporter ]
}
if have; then
  log "in place: $(/usr/bin/prometheus --version 2>&1 | head -n1); $(/usr/bin/prometheus-node-exporter --version 2>&1 | head -n1)"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { log "ERROR: must run as root (apt-get install prometheus prometheus-node-exporter)"; exit 1; }
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# setup-monitoring: no service starts while prometheus installs\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
  made_policy=1
fi
cleanup() { if [ -n "$made_policy" ]; then rm -f "$policy"; fi; }
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
pkgs=(prometheus prometheus-node-exporter)
apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null ||
  { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null; }
have || { log "ERROR: prometheus, promtool or prometheus-node-exporter still missing after the install"; exit 1; }
log "installed: $(/usr/bin/prometheus --version 2>&1 | head -n1); $(/usr/bin/prometheus-node-exporter --version 2>&1 | head -n1)"
