#!/usr/bin/env bash
# The SUSE Manager / Uyuni formula over salt-ssh, as SUSE Manager drives SSH-push systems: a
# local sshd on a loopback port (its host key, the client key, the roster and the master's
# config in a temporary directory), salt-ssh from each Salt venv (3008 and the 3006 LTS line),
# the formula, the Salt modules and pillar.example from the master's file and pillar roots, and
# a copy of the bundled demo host (examples/demo-host) as the target's root.
#
# The master's file root is mdtune-salt-VERSION.tar.gz unpacked (packaging/salt-bundle.sh), as on a
# plain master or SUSE Manager 5. Per Salt version, against two roster targets on 127.0.0.1:
# `tuned` (pillar.example plus its root and binary), `bare` (no pillar at all; root and binary
# from the roster's minion_opts):
#   without the wrapper: mdtune.query, mdtune.desired and mdtune.apply refuse, naming the install
#                                  command; from_pillar=False runs; then the wrapper is installed
#                                  with that command (both versions; sync_wrapper on 3008 too)
#   state.show_sls mdtune          renders
#   state.apply mdtune test=True   the pillar's changes predicted, nothing written (for `bare`:
#                                  a valid SLS, mdtune's defaults)
#   state.apply mdtune             the pillar's values in the root, persisted
#   state.apply mdtune test=True   after a hand-made drift: that drift and nothing else
# Needs root (sshd logs in as root) and openssh-server (.ci/setup-sshd.sh). Called by
# tests/salt/run.sh; on its own: tests/salt/ssh.sh BINARY. Prints "ok   - ..." / "FAIL - ..."
# lines and "N passed, N failed"; exits non-zero when a check failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
venv3006=${MDTUNE_SALT3006_VENV:-$venv-salt3006}
bin=${1:?usage: tests/salt/ssh.sh MDTUNE_BINARY}

# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  not_ok "salt-ssh checks run as root" "sshd must run as root to log in; run the suite as root"
  finish
fi
if [ ! -x /usr/sbin/sshd ] || [ ! -x /usr/lib/openssh/sftp-server ]; then
  not_ok "sshd is installed" "no /usr/sbin/sshd or sftp-server: run .ci/setup-sshd.sh" \
    "(apt-get install openssh-server openssh-sftp-server)"
  finish
fi

scratch salt-ssh
sshd_pid=
# shellcheck disable=SC2317 # run on exit
stop_sshd() { if [ -n "$sshd_pid" ]; then kill "$sshd_pid" 2>/dev/null; fi; }
at_exit stop_sshd
t0=$SECONDS

# --- the sshd: keys, config, a free loopback port -------------------------------------------
mkdir -p "$tmp/ssh"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/client_key"
cp "$tmp/ssh/client_key.pub" "$tmp/ssh/authorized_keys"
port=$(python3 "$repo/tests/ports.py")
cat >"$tmp/ssh/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/ssh/host_key
PidFile $tmp/ssh/sshd.pid
AuthorizedKeysFile $tmp/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
# sshd insists on its privilege separation directory (compiled in as /run/sshd).
mkdir -p /run/sshd
/usr/sbin/sshd -f "$tmp/ssh/sshd_config" -E "$tmp/ssh/sshd.log"
for _ in $(seq 50); do [ -s "$tmp/ssh/sshd.pid" ] && break; sleep 0.1; done
sshd_pid=$(cat "$tmp/ssh/sshd.pid" 2>/dev/null)
if [ -z "$sshd_pid" ]; then
  not_ok "a local sshd runs on 127.0.0.1:$port" "$(tail -n 5 "$tmp/ssh/sshd.log")"
  finish
fi
# A known_hosts file of our own (salt-ssh uses it when it exists): nothing goes to ~/.ssh.
: >"$tmp/ssh/known_hosts"

new_root() {
  cp -a "$repo/examples/demo-host" "$1"
  rmdir "$1/etc" "$1/run" 2>/dev/null || true
}
snapshot() {
  (cd "$1" && find . -printf '%p %y %s %T@ %l\n' | sort && find . -type f -exec md5sum {} + | sort)
}

# check NAME FILE TARGET CHECK [ARG...]: CHECK of tests/salt/ssh_checks.py on salt-ssh's JSON in
# FILE (TARGET's value; "-": all of it), given the ARGs.
check() {
  local name=$1 out; shift
  if out=$("$venv/bin/python" "$repo/tests/salt/ssh_checks.py" "$@" 2>&1); then ok "$name"
  else not_ok "$name" "$(echo "$out" | tail -n 8)"; fi
}
check_unchanged() { # check_unchanged NAME ROOT BEFORE-FILE
  local d
  if d=$(diff "$3" <(snapshot "$2")); then ok "$1"; else not_ok "$1" "$(echo "$d" | head -n 12)"; fi
}

# ssh_checks LABEL VENV: every salt-ssh check with that venv's Salt, under $tmp/LABEL.
ssh_checks() {
  local label=$1 venv=$2 base=$tmp/$1
  local r1=$base/root-tuned r2=$base/root-bare
  mkdir -p "$base/conf" "$base/top" "$base/pillar"
  new_root "$r1"
  new_root "$r2"
  printf 'base:\n  "*":\n    - mdtune\n' >"$base/top/top.sls"
  printf 'base:\n  tuned:\n    - mdtune\n    - host\n' >"$base/pillar/top.sls"
  cp "$repo/module_utils/suma/metadata/mdtune/pillar.example" "$base/pillar/mdtune.sls"
  printf 'mdtune:\n  root: %s\n  binary: %s\n' "$r1" "$bin" >"$base/pillar/host.sls"
  # The formula and the modules as mdtune-salt-VERSION.tar.gz lays them out (packaging/
  # salt-bundle.sh; docs/install.md: on a plain master and on SUSE Manager 5 it is unpacked at
  # /), unpacked here under $base/server: /srv/salt is the file root, /srv/formula_metadata
  # holds the form. The wrapper it also carries goes to var/cache/salt/master/extmods/wrapper,
  # the master's default extension_modules; here extension_modules is the default under this
  # master's own cachedir (as Salt resolves it, below the root_dir), empty at first, so that
  # salt-ssh runs without the wrapper before it is installed.
  mkdir -p "$base/server"
  tar -xzf "$bundle" -C "$base/server"
  cat >"$base/conf/master" <<EOF
root_dir: $base/salt-root
cachedir: $base/cache
pki_dir: $base/pki
sock_dir: $base/sock
log_file: $base/master.log
ssh_log_file: $base/ssh.log
log_level_logfile: debug
user: root
roster_file: $base/conf/roster
known_hosts_file: $tmp/ssh/known_hosts
file_roots:
  base:
    - $base/server/srv/salt
    - $base/top
pillar_roots:
  base:
    - $base/pillar
EOF
  local opts cache extmods
  opts=$("$venv/bin/python" "$repo/tests/salt/ssh_checks.py" --master-dirs "$base/conf/master")
  cache=$(sed -n 1p <<<"$opts") extmods=$(sed -n 2p <<<"$opts")
  # One thin_dir for both (one host: one copy of Salt's thin). set_path: the login shell's PATH
  # may put a python3 wrapper script first (pyenv), which salt-ssh's shim mistakes for a
  # Software Collections one; the system's python3 runs the thin.
  local target
  for target in tuned bare; do
    cat <<EOF
$target:
  host: 127.0.0.1
  port: $port
  user: root
  priv: $tmp/ssh/client_key
  thin_dir: $base/thin
  set_path: /usr/sbin:/usr/bin:/sbin:/bin
  minion_opts:
    enable_fqdns_grains: false
    enable_gpu_grains: false
EOF
    if [ "$target" = bare ]; then
      printf '    mdtune:\n      root: %s\n      binary: %s\n' "$r2" "$bin"
    fi
  done >"$base/conf/roster"

  # ss TARGET OUTFILE ARGS...: salt-ssh with JSON output (stderr in OUTFILE.err).
  ss() {
    local target=$1 out=$2 t; shift 2
    t=$(date +%s%N)
    "$venv/bin/salt-ssh" -c "$base/conf" --ignore-host-keys --out=json "$target" "$@" \
      >"$out" 2>"$out.err"
    echo "$(( ($(date +%s%N) - t) / 1000000 )) ms: [$label] salt-ssh $target $*" >>"$tmp/timings"
  }
  echo "# [$label] $("$venv/bin/salt-ssh" --version)"

  # Without the wrapper: the functions that read the pillar refuse, saying how to install it,
  # instead of answering against mdtune's defaults; from_pillar=False still runs.
  local fun
  for fun in mdtune.query mdtune.desired "mdtune.apply test=True"; do
    # shellcheck disable=SC2086 # fun carries its argument
    ss tuned "$base/nowrapper.json" $fun
    check "[$label] salt-ssh $fun without the wrapper refuses and names the install command" \
      "$base/nowrapper.json" tuned refuses_without_wrapper
  done
  ss tuned "$base/defaults.json" mdtune.query from_pillar=False root="$r1" binary="$bin"
  check "[$label] salt-ssh mdtune.query from_pillar=False root=... binary=... without the wrapper: mdtune's defaults" \
    "$base/defaults.json" tuned query_defaults
  # The one command docs/install.md gives for Salt 3006 and 3008, under this master's
  # extension_modules (the bundle's copy stands for the package's).
  install -D -m 0644 "$base/server/srv/salt/_wrapper/mdtune.py" "$extmods/wrapper/mdtune.py"
  if cmp -s "$base/server/srv/salt/_wrapper/mdtune.py" "$base/server/var/cache/salt/master/extmods/wrapper/mdtune.py"; then
    ok "[$label] the bundle carries the wrapper in the default extension_modules too"
  else
    not_ok "[$label] the bundle carries the wrapper in the default extension_modules too"
  fi

  ss tuned "$base/show.json" state.show_sls mdtune
  check "[$label] salt-ssh state.show_sls mdtune renders (no custom function called while rendering)" \
    "$base/show.json" tuned show_sls

  snapshot "$r1" >"$base/r1.pristine"
  ss tuned "$base/test.json" state.apply mdtune test=True
  check "[$label] salt-ssh state.apply mdtune test=True: the pillar's changes predicted" \
    "$base/test.json" tuned apply_test_predicted
  check_unchanged "[$label] salt-ssh test=True: the target's root is untouched" "$r1" "$base/r1.pristine"

  # The execution functions over salt-ssh: the wrapper gives them the pillar (on the target alone
  # they would see an empty one and compare with mdtune's defaults).
  ss tuned "$base/query.json" mdtune.query
  check "[$label] salt-ssh mdtune.query: compared with the pillar's desired state" \
    "$base/query.json" tuned query_pillar
  ss tuned "$base/mtest.json" mdtune.apply test=True
  check "[$label] salt-ssh mdtune.apply test=True: previews the pillar's values" \
    "$base/mtest.json" tuned module_apply_test
  check_unchanged "[$label] salt-ssh mdtune.apply test=True: the target's root is untouched" "$r1" "$base/r1.pristine"
  ss tuned "$base/binary.json" mdtune.binary_path
  check "[$label] salt-ssh mdtune.binary_path: the pillar's mdtune:binary" \
    "$base/binary.json" tuned binary_path "$bin"

  ss tuned "$base/apply.json" state.apply mdtune
  check "[$label] salt-ssh state.apply mdtune: the pillar's values written on the target, persisted" \
    "$base/apply.json" tuned apply_written "$r1"

  # The compliance check over salt-ssh: a test run against the pillar finds a hand-made drift,
  # and only that (every other value is in place after the one apply).
  echo 512 >"$r1/sys/block/md0/md/stripe_cache_size"
  snapshot "$r1" >"$base/r1.drifted"
  ss tuned "$base/drift.json" state.apply mdtune test=True
  check "[$label] salt-ssh compliance (test=True against the pillar) finds a drifted stripe_cache_size" \
    "$base/drift.json" tuned drift_found
  ss tuned "$base/drift-query.json" mdtune.query
  check "[$label] salt-ssh mdtune.query after the drift: not compliant in that one setting" \
    "$base/drift-query.json" tuned drift_query
  check_unchanged "[$label] salt-ssh compliance test run: nothing written" "$r1" "$base/r1.drifted"

  # desired and revert over salt-ssh: the pillar's desired state as the master translates it,
  # then the revert previewed (nothing written) and made (the values before the first apply).
  ss tuned "$base/desired.json" mdtune.desired
  check "[$label] salt-ssh mdtune.desired: the pillar's desired state, translated on the master" \
    "$base/desired.json" tuned desired "$r1" "$bin"
  ss tuned "$base/revert-test.json" mdtune.revert test=True
  check "[$label] salt-ssh mdtune.revert test=True: previews the restore in the pillar's root" \
    "$base/revert-test.json" tuned revert_test
  check_unchanged "[$label] salt-ssh mdtune.revert test=True: the target's root is untouched" "$r1" "$base/r1.drifted"
  ss tuned "$base/revert.json" mdtune.revert
  check "[$label] salt-ssh mdtune.revert: the values saved before the first apply are back" \
    "$base/revert.json" tuned reverted "$r1"

  snapshot "$r2" >"$base/r2.pristine"
  ss bare "$base/bare.json" state.apply mdtune test=True
  check "[$label] salt-ssh state.apply mdtune test=True with an empty pillar: a valid SLS, mdtune's defaults (auto threads)" \
    "$base/bare.json" bare bare_defaults
  check_unchanged "[$label] salt-ssh test=True with an empty pillar: nothing written" "$r2" "$base/r2.pristine"

  # Salt 3007 and later have a runner for it as well: salt-run saltutil.sync_wrapper copies
  # salt://_wrapper/mdtune.py to extension_modules. (salt-run writes a job file under
  # cachedir/proc, which only a running master creates.)
  if [ "$label" = salt3008 ]; then
    rm -f "$extmods/wrapper/mdtune.py"
    mkdir -p "$cache/proc"
    "$venv/bin/salt-run" -c "$base/conf" --out=json saltutil.sync_wrapper >"$base/sync.json" 2>"$base/sync.json.err"
    check "[$label] salt-run saltutil.sync_wrapper syncs _wrapper/mdtune.py to the master" \
      "$base/sync.json" - sync_wrapper
    ss tuned "$base/synced-query.json" mdtune.binary_path
    check "[$label] salt-ssh mdtune.binary_path with the synced wrapper: the pillar's mdtune:binary" \
      "$base/synced-query.json" tuned binary_path "$bin"
  fi
}

echo "# salt-ssh against sshd on 127.0.0.1:$port, binary $bin, temp $tmp"
bundle=$tmp/mdtune-salt.tar.gz
"$repo/packaging/salt-bundle.sh" "$bundle" || { not_ok "packaging/salt-bundle.sh makes the Salt bundle"; finish; }
run_line() { # run_line LABEL VENV SETUP-SCRIPT
  if [ -x "$2/bin/salt-ssh" ]; then ssh_checks "$1" "$2"
  else not_ok "salt-ssh ($1) is available" "no $2/bin/salt-ssh: run $3"; fi
}
run_line salt3008 "$venv" .ci/setup-python.sh
run_line salt3006 "$venv3006" .ci/setup-salt3006.sh
if [ -e "$HOME/.ssh/known_hosts" ] && grep -q "$port" <(ssh-keygen -F "[127.0.0.1]:$port" -f "$HOME/.ssh/known_hosts" 2>/dev/null); then
  not_ok "salt-ssh wrote nothing to ~/.ssh/known_hosts" "$HOME/.ssh/known_hosts has [127.0.0.1]:$port"
else
  ok "salt-ssh wrote nothing to ~/.ssh/known_hosts"
fi
echo "# salt-ssh checks in $((SECONDS - t0)) s; slowest:"
sort -rn "$tmp/timings" | head -n 3 | sed 's/^/#   /'
finish
