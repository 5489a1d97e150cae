#!/usr/bin/env bash
# Run every test: unit, integration over the fixture hosts, and the multi-host Ansible lab.
# Needs root (the lab builds network namespaces). Installs what it needs via scripts/bootstrap.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
# One lab at a time on a machine: wait for any other test run or demo (tests/conftest.py).
exec 9>/run/rocetune-lab.lock
flock 9
export ROCETUNE_LAB_LOCKED=1
# Whatever happens, no lab is left behind.
trap '.venv/bin/python tests/lab/lab.py down >/dev/null 2>&1 || true' EXIT
.venv/bin/python tests/lab/lab.py down >/dev/null 2>&1 || true

.venv/bin/python -m compileall -q src >/dev/null
# The slowest tests are listed at the end: the lab tiers dominate the run.
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=20 "$@"
