#!/usr/bin/env bash
# Run every test: unit, integration over the fixture hosts, the multi-host Ansible lab, and the demo.
# Needs root (the lab builds network namespaces). Installs what it needs via scripts/bootstrap.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
# Whatever happens, no lab is left behind. One lab at a time on a machine: the teardowns wait
# for /run/rocetune-lab.lock, which pytest holds while lab tests run (tests/conftest.py).
LAB_DOWN='flock /run/rocetune-lab.lock .venv/bin/python -m lab down >/dev/null 2>&1 || true'
trap "$LAB_DOWN" EXIT
eval "$LAB_DOWN"

.venv/bin/python -m compileall -q src >/dev/null
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider)
if [ "$#" -gt 0 ]; then
    "${PYTEST[@]}" --durations=20 "$@"
    exit 0
fi
# Every test, in two runs: the unit and integration tests on every core (pytest-xdist), then
# the lab tiers, one at a time (one lab on a machine). The slowest are listed after each.
status=0
"${PYTEST[@]}" -n auto -m "not lab" --durations=10 || status=$?
"${PYTEST[@]}" -m lab --durations=20 || status=$?
# The README's other command, end to end on a lab of its own (it takes the lab lock itself).
./scripts/demo.sh || status=$?
exit "$status"
