#!/usr/bin/env bash
# Build rocetune's offline wheelhouse: rocetune's wheel from this checkout plus its runtime
# dependencies (psutil, jinja2, markupsafe) and pip as binary wheels, packed into
# wheelhouse/rocetune-wheelhouse.tar, which the rocetune_agent role installs on nodes with
# `pip --no-index`. Needs PyPI (or a mirror) on this machine only; nodes need no network.
#
#   scripts/build-wheelhouse.sh [--out DIR] [--target PY-ARCH ...]
#     --out DIR          where the wheelhouse goes (default: wheelhouse/)
#     --target PY-ARCH   a node Python and architecture to fetch wheels for, e.g. 3.9-x86_64
#                        (EL9) or 3.12-aarch64 (Grace); repeat it. Default: this machine's.
#
# Keyed on the content of the sources and the targets: a second run with nothing changed
# does nothing. site.yml runs the same build itself (rocetune_agent_wheelhouse_build), so this
# script is for building one to ship elsewhere, or ahead of time.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
out=wheelhouse
args=()
while (($#)); do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --target) args+=(--target "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-wheelhouse: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
result=$("$PYTHON" roles/rocetune_agent/files/rocetune_wheelhouse.py build --source . --out "$out" "${args[@]}")
"$PYTHON" - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
state = "built" if r["changed"] else "up to date"
print(f"wheelhouse {state}: rocetune {r['version']} for {', '.join(r['targets'])} -> {r['archive']}")
for w in r["wheels"]:
    print(f"  {w}")
PY
