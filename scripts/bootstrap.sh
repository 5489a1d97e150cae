#!/usr/bin/env bash
# Install what rocetune's demo and tests need on a Debian/Ubuntu machine, then make .venv.
# Idempotent: a second run only checks. Needs root for apt (the lab needs root anyway).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(python3 python3-venv python3-pyverbs hwloc openssh-server openssh-client
              iproute2 iputils-ping procps debootstrap systemd-container
              qemu-system-x86 dpkg-dev e2fsprogs   # these three: the lab's Soft-RoCE VMs
              chromium    # opens the fleet pages in the browser tests
              slurmctld slurmd slurm-client munge   # the lab's Slurm (lab/slurm.py)
              prometheus-node-exporter prometheus   # doctor's textfile metrics, scraped; promtool
              lldpd)      # the cabling tests: LLDP on lab hosts and their "switches"
TORCH_VERSION=2.13.0   # pinned: an unpinned torch pulls gigabytes of CUDA wheels

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The system python carries python3-pyverbs; the venv sees it through --system-site-packages.
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
# Reinstall when pyproject.toml changed since the last install (a new dev dependency), not only
# when an import fails.
stamp=".venv/.rocetune-pyproject.sha256"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) torch==${TORCH_VERSION}"
if ! .venv/bin/python -c "import rocetune, pytest, hypothesis, jsonschema, ansible, paramiko, torch" 2>/dev/null \
   || ! [ -x .venv/bin/ansible-lint ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]' "torch==${TORCH_VERSION}"
  printf '%s\n' "$want" >"$stamp"
fi
echo "bootstrap: ready (.venv: $(.venv/bin/python --version), $(.venv/bin/ansible --version | head -1))"
