# shellcheck shell=bash
# Sourced by the setup scripts that install a service's package only for its programs
# (.ci/setup-sshd.sh, .ci/setup-monitoring.sh): apt_no_start WHO PACKAGE... installs the packages
# with a policy-rc.d that keeps their services from starting (the tests start what they need
# themselves), leaving an existing policy-rc.d alone, and runs apt-get update only when the
# install fails without it.
apt_no_start() {
  local who=$1 policy=/usr/sbin/policy-rc.d made=
  shift
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# %s: no service starts while its packages install\nexit 101\n' "$who" >"$policy"
    chmod 0755 "$policy"
    made=1
  fi
  local status=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null; } ||
    status=$?
  if [ -n "$made" ]; then rm -f "$policy"; fi
  return "$status"
}
