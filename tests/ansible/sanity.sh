#!/usr/bin/env bash
# Builds the mdtune.mdraid collection into a temporary directory and runs `ansible-test sanity` on
# it: every sanity test of ansible-core's ansible-test, without containers. Called by run.sh;
# also runs on its own from any directory.
#
#   tests/ansible/sanity.sh [--no-cargo]
#
# ansible-test comes from ${MDTUNE_VENV:-<checkout>/.venv} (.ci/setup-python.sh creates it). It runs
# with --venv: each sanity test gets a virtualenv with the requirements ansible-test pins, installed
# from the package index. ansible-test bootstraps pip in those virtualenvs with a get-pip script it
# downloads from a host outside the package index; get-pip-standin.py takes its place (it uses
# the standard library's ensurepip, then pip). Everything, including HOME, lives in a temporary
# directory that is removed afterwards; set MDTUNE_SANITY_CACHE=DIR to keep the virtualenvs in DIR
# between runs.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${MDTUNE_VENV:-$repo/.venv}
cargo_flag=()
[ "${1:-}" = --no-cargo ] && cargo_flag=(--no-cargo)

finish() { echo "sanity: $1 passed, $2 failed"; [ "$2" -eq 0 ]; exit $?; }

for tool in ansible-test ansible-galaxy python3; do
  if [ ! -x "$venv/bin/$tool" ]; then
    echo "sanity: $venv/bin/$tool not found: run .ci/setup-python.sh (or set MDTUNE_VENV to a venv with ansible-core 2.19)" >&2
    finish 0 1
  fi
done

# Thousands of small files (virtualenvs): tmpfs when there is one, as in run.sh.
if [ -n "${MDTUNE_TEST_TMP:-}" ]; then parent=$MDTUNE_TEST_TMP
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then parent=/dev/shm
else parent=${TMPDIR:-/tmp}; fi
tmp=$(mktemp -d "$parent/mdtune-sanity.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Build first: cargo and rustup find their toolchains through the real HOME (Ansible's own files
# go to $tmp all the same).
if ! MDTUNE_VENV=$venv ANSIBLE_HOME=$tmp/ansible-home ANSIBLE_LOCAL_TEMP=$tmp/ansible-local \
    "$repo/module_utils/ansible/build-collection.sh" --out "$tmp/build" "${cargo_flag[@]}"; then
  echo "sanity: building the collection failed" >&2
  finish 0 1
fi
coll=$tmp/build/ansible_collections/mdtune/mdraid

home=${MDTUNE_SANITY_CACHE:-$tmp/home}
mkdir -p "$home"
export HOME=$home PYTHONDONTWRITEBYTECODE=1 ANSIBLE_LOCAL_TEMP=$tmp/ansible-local
# cd out of the checkout: ansible-test must see only the collection, not this git repository.
cd "$tmp" || exit 1

# The pip bootstrap script ansible-test looks for, named after the pip version it pins.
pip_version=$(sed -n "s/.*pip='\([0-9.]*\)'.*/\1/p" \
  "$("$venv/bin/python3" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py" | head -1)
if [ -z "$pip_version" ]; then
  echo "sanity: cannot tell which pip version this ansible-test pins" >&2
  finish 0 1
fi
mkdir -p "$home/.ansible/test/cache"
cp "$here/get-pip-standin.py" "$home/.ansible/test/cache/get_pip_${pip_version//./_}.py"

python_version=$("$venv/bin/python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
log=$tmp/sanity.log
echo "sanity: ansible-test sanity --venv --python $python_version in $coll"
if (cd "$coll" && "$venv/bin/ansible-test" sanity --venv --python "$python_version" --color no) > "$log" 2>&1; then
  grep -E '^(Running sanity test|WARNING: Skipping)' "$log"
  finish 1 0
else
  grep -vE '^(Collecting|  Downloading|Downloading|Installing|Successfully|Processing|Looking in|Requirement already|  Attempting|  Found existing|    Uninstalling|    Successfully|Using cached| +━)' "$log" | tail -60
  finish 0 1
fi
