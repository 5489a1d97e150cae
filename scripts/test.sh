#!/usr/bin/env bash
# Run every test: unit, integration over the fixture hosts, and the multi-host Ansible lab.
# Needs root (the lab builds network namespaces). Installs what it needs via scripts/bootstrap.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
# Whatever happens, no lab is left behind. One lab at a time on a machine: the teardowns wait
# for /run/rocetune-lab.lock, which pytest holds while lab tests run (tests/conftest.py).
LAB_DOWN='flock /run/rocetune-lab.lock .venv/bin/python tests/lab/lab.py down >/dev/null 2>&1 || true'
trap "$LAB_DOWN" EXIT
eval "$LAB_DOWN"

.venv/bin/python -m compileall -q src >/dev/null
# The slowest tests are listed at the end: the lab tiers dominate the run.
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=20 "$@"
