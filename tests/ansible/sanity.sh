#!/usr/bin/env bash
# Builds the mdtune.mdraid collection into a temporary directory and runs `ansible-test sanity`
# (every sanity test, without containers) and `ansible-test units` (the action plugins' and
# plugin_utils' unit tests) on it with each current ansible-core: 2.19 from
# ${MDTUNE_VENV:-<checkout>/.venv} (.ci/setup-python.sh), 2.20 and 2.21 from <venv>-ansible2.20 and
# <venv>-ansible2.21 (.ci/setup-ansible.sh; 2.20 needs Python 3.12, 2.21 Python 3.13). Called by
# run.sh; also runs on its own from any directory.
#
#   tests/ansible/sanity.sh [--no-cargo]
#
# ansible-test runs with --venv: each test gets a virtualenv with the requirements ansible-test
# pins, installed from the package index. ansible-test bootstraps pip in those virtualenvs with a
# get-pip script it downloads from a host outside the package index; get-pip-standin.py takes its
# place (it uses the standard library's ensurepip, then pip). Everything, including HOME, lives in
# a temporary directory that is removed afterwards unless a check failed or MDTUNE_KEEP_TMP is set
# (tests/lib.sh's scratch); set MDTUNE_SANITY_CACHE=DIR to keep the virtualenvs in DIR between
# runs. MDTUNE_ANSIBLE_VERSIONS="2.19 2.20 2.21" picks the versions. One check per version; closes
# with "N passed, N failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
cargo_flag=()
[ "${1:-}" = --no-cargo ] && cargo_flag=(--no-cargo)

# shellcheck source=tests/lib.sh
. "$repo/tests/lib.sh"
versions=${MDTUNE_ANSIBLE_VERSIONS:-2.19 2.20 2.21}
# venv_of VERSION: the venv that holds that ansible-core.
venv_of() { if [ "$1" = 2.19 ]; then echo "$venv"; else echo "$venv-ansible$1"; fi; }

for v in $versions; do
  for tool in ansible-test ansible-galaxy python3; do
    if [ ! -x "$(venv_of "$v")/bin/$tool" ]; then
      not_ok "ansible-core $v: $(venv_of "$v")/bin/$tool exists" \
        "sanity: $(venv_of "$v")/bin/$tool not found: run .ci/setup-python.sh and .ci/setup-ansible.sh (or set MDTUNE_VENV)"
      finish
    fi
  done
done
# Thousands of small files (virtualenvs): tmpfs when there is one, as in run.sh.
if [ -n "${MDTUNE_TEST_TMP:-}" ]; then parent=$MDTUNE_TEST_TMP
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then parent=/dev/shm
else parent=${TMPDIR:-/tmp}; fi
TMPDIR=$parent scratch sanity
# Build first: cargo and rustup find their toolchains through the real HOME (Ansible's own files
# go to $tmp all the same).
if ! MDTUNE_VENV=$venv ANSIBLE_HOME=$tmp/ansible-home ANSIBLE_LOCAL_TEMP=$tmp/ansible-local \
    "$repo/module_utils/ansible/build-collection.sh" --out "$tmp/build" "${cargo_flag[@]}"; then
  not_ok "building the collection" "sanity: module_utils/ansible/build-collection.sh failed"
  finish
fi
coll=$tmp/build/ansible_collections/mdtune/mdraid

home=${MDTUNE_SANITY_CACHE:-$tmp/home}
mkdir -p "$home"
export HOME=$home PYTHONDONTWRITEBYTECODE=1 ANSIBLE_LOCAL_TEMP=$tmp/ansible-local
# cd out of the checkout: ansible-test must see only the collection, not this git repository.
cd "$tmp" || exit 1

# run_ansible_test VERSION: ansible-test sanity and units of that ansible-core on the collection.
run_ansible_test() {
  local v=$1 venv_v pip_version python_version log kind
  venv_v=$(venv_of "$v")
  local have
  have=$("$venv_v/bin/ansible" --version 2>&1 | sed -n 1p)
  [[ $have == *"[core $v."* ]] || { echo "sanity: $venv_v does not hold ansible-core $v: $have"; return 1; }
  # The pip bootstrap script ansible-test looks for, named after the pip version it pins.
  pip_version=$(sed -n "s/.*pip='\([0-9.]*\)'.*/\1/p" \
    "$("$venv_v/bin/python3" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py" | head -1)
  [ -n "$pip_version" ] || { echo "sanity: cannot tell which pip version ansible-test $v pins"; return 1; }
  mkdir -p "$home/.ansible/test/cache"
  cp "$here/get-pip-standin.py" "$home/.ansible/test/cache/get_pip_${pip_version//./_}.py"
  python_version=$("$venv_v/bin/python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  for kind in sanity units; do
    log=$tmp/$kind-$v.log
    echo "sanity: ansible-core $v: ansible-test $kind --venv --python $python_version in $coll"
    if (cd "$coll" && "$venv_v/bin/ansible-test" "$kind" --venv --python "$python_version" --color no) >"$log" 2>&1; then
      grep -E '^(Running sanity test|WARNING: Skipping|=+ [0-9]+ passed)' "$log"
      if [ "$kind" = units ] && ! grep -qE '^=+ [0-9]+ passed' "$log"; then
        echo "sanity: ansible-test units ran no test"; return 1
      fi
    else
      grep -vE '^(Collecting|  Downloading|Downloading|Installing|Successfully|Processing|Looking in|Requirement already|  Attempting|  Found existing|    Uninstalling|    Successfully|Using cached| +━)' "$log" | tail -60
      return 1
    fi
  done
  return 0
}
for v in $versions; do
  name="ansible-core $v: ansible-test sanity and units"
  if run_ansible_test "$v"; then ok "$name"; else not_ok "$name"; fi
done
finish
