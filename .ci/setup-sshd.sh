#!/usr/bin/env bash
# Installs what the salt-ssh checks of tests/salt/run.sh need on a Debian 12 machine, as root:
# OpenSSH's server (openssh-server, with openssh-sftp-server: OpenSSH 9's scp, which salt-ssh
# uses, speaks SFTP). The checks start their own sshd on a loopback port with a configuration,
# host key and client key in a temporary directory; the system's ssh service is never started:
# a policy-rc.d that refuses every start is in place while the package installs (unless the
# machine already has one).
# Idempotent: a machine with /usr/sbin/sshd and sftp-server only checks and returns.
set -euo pipefail
log() { echo "setup-sshd: $*" >&2; }
if [ -x /usr/sbin/sshd ] && [ -x /usr/lib/openssh/sftp-server ]; then
  log "in place: $(/usr/sbin/sshd -V 2>&1 | head -n1)"; exit 0
fi
[ "$(id -u)" -eq 0 ] || { log "ERROR: must run as root (apt-get install openssh-server)"; exit 1; }
# shellcheck source=.ci/apt-no-start.sh
. "$(dirname "$0")/apt-no-start.sh"
apt_no_start setup-sshd openssh-server openssh-sftp-server openssh-client
log "installed: $(/usr/sbin/sshd -V 2>&1 | head -n1)"
