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
# shellcheck source=.ci/apt-no-start.sh
. "$(dirname "$0")/apt-no-start.sh"
apt_no_start setup-monitoring prometheus prometheus-node-exporter
have || { log "ERROR: prometheus, promtool or prometheus-node-exporter still missing after the install"; exit 1; }
log "installed: $(/usr/bin/prometheus --version 2>&1 | head -n1); $(/usr/bin/prometheus-node-exporter --version 2>&1 | head -n1)"
