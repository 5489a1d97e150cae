#!/usr/bin/env bash
# rocetune end to end on the built-in lab, from a fresh machine (run it as root):
#
#   scripts/demo.sh [--keep] [--hosts N]
#
#   1. scripts/bootstrap.sh: apt packages and .venv (rocetune, ansible-core, CPU torch)
#   2. rocetune probe, topo and env on a bundled fixture host (an 8x H100 RoCE node)
#   3. a lab of N hosts (default 4): real sshd hosts in network namespaces (docs/lab.md)
#   4. ansible-playbook site.yml against it: rocetune installed offline on every host, each
#      host probed, /etc/rocetune/nccl.env and /etc/nccl.conf written, Features fetched
#   5. one host's env file, and `rocetune explain` of it from the fetched Features
#   6. a Gloo all_reduce job across the hosts that sources the env file on each
#   7. the Slurm gate: slurmctld and a slurmd per host, `rocetune doctor --gate health-check` as
#      HealthCheckProgram; one host's rail broken on purpose is drained with rocetune's reason,
#      named by `rocetune fleet report`, repaired and resumed (docs/gate.md)
#   8. the lab torn down (also on failure or Ctrl-C); --keep leaves it up to poke at:
#        .venv/bin/python -m lab ssh node01        # a shell on a host
#        .venv/bin/python -m lab down              # when done
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
KEEP=0
HOSTS=4
while (($#)); do
  case "$1" in
    --keep) KEEP=1; shift ;;
    --hosts) HOSTS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "demo: run as root (the lab makes network namespaces, mounts and sshds)" >&2; exit 2; }
((HOSTS >= 2)) || { echo "demo: --hosts needs at least 2 (the job spans hosts)" >&2; exit 2; }

step=0
banner() {
  step=$((step + 1))
  printf '\n\033[1m==> [%d/8] %s\033[0m\n' "$step" "$*"
}
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

LAB_UP=0
TMP=$(mktemp -d)
cleanup() {
  rc=$?
  if ((LAB_UP)); then
    if ((KEEP)); then
      printf '\n\033[1mdemo: the lab is still up (--keep).\033[0m Try:\n'
      echo "  .venv/bin/python -m lab ssh node01 cat /etc/rocetune/nccl.env"
      echo "  .venv/bin/ansible-playbook site.yml --check --diff"
      echo "  .venv/bin/python -m lab down"
    else
      printf '\n==> tearing the lab down\n'
      .venv/bin/python -m lab down || true
    fi
  fi
  rm -rf "$TMP"
  ((rc == 0)) && printf '\n\033[1mdemo: done.\033[0m\n' || printf '\n\033[1mdemo: FAILED (exit %d).\033[0m\n' "$rc" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

banner "Set up this machine (scripts/bootstrap.sh)"
run scripts/bootstrap.sh
# One lab at a time on a machine: wait for a test run or another demo (tests/conftest.py).
exec 9>/run/rocetune-lab.lock
flock 9
export ROCETUNE_LAB_LOCKED=1

banner "rocetune probe and topo on a bundled fixture host (8x H100, 8 compute RoCE ports)"
FIXTURE=tests/fixtures/hosts/dgx-h100-roce
run .venv/bin/rocetune probe --root "$FIXTURE"
run .venv/bin/rocetune topo --root "$FIXTURE"
run .venv/bin/rocetune env --root "$FIXTURE"

banner "Bring up a ${HOSTS}-host lab"
LAB_UP=1
run .venv/bin/python -m lab up "$HOSTS"

banner "ansible-playbook site.yml"
PATH="$REPO/.venv/bin:$PATH" run .venv/bin/ansible-playbook site.yml

banner "node01's env file, and why each line is there"
run .venv/bin/python -m lab ssh node01 cat /etc/rocetune/nccl.env
echo
run .venv/bin/rocetune explain --features artifacts/features/node01.json

banner "A Gloo all_reduce across ${HOSTS} hosts, sourcing /etc/rocetune/nccl.env on each"
# The lab's own ssh settings (its key, its known_hosts, strict host key checking).
{ read -r SSH; mapfile -t TARGETS; } < <(.venv/bin/python - <<'PY'
import shlex
from lab import netns
info = netns.current()
print(shlex.join(info.ssh_command(info.names[0])[:-3]))  # without "-l root <address>"
for _, ip in info.hosts:
    print(f"root@{ip}")
PY
)
run examples/jobs/gloo_allreduce.sh --ssh "$SSH" --python "$REPO/.venv/bin/python" --timeout 300 \
  "${TARGETS[@]}" -- --size-mb 32 --iters 5

banner "The Slurm gate: a rail broken on purpose, drained, named, repaired, resumed"
# The lab has no RDMA: each host's rocetune (the agent site.yml installed) reads a copy of the
# bundled 8-rail H100 host, and node02's copy gets one rail at MTU 1500. Slurm is real.
GATE_START=$SECONDS
GATE="$REPO/artifacts/demo-gate"
RAIL=sys/class/net/enp64s0np0/mtu   # mlx5_3's netdev, one of the eight rails
mapfile -t NAMES < <(.venv/bin/python -c 'from lab import netns; print("\n".join(netns.current().names))')
rm -rf "$GATE" && mkdir -p "$GATE" "$TMP/fleet"
for h in "${NAMES[@]}"; do
  cp -a "$FIXTURE" "$GATE/$h"
  printf '#!/bin/sh\nPATH=/usr/local/bin:/usr/bin:/bin\nexec /usr/local/bin/rocetune doctor --gate health-check --root %s --no-counters --timeout 20\n' \
    "$GATE/$h" | .venv/bin/python -m lab ssh "$h" \
    'mkdir -p /etc/rocetune-demo && cat > /etc/rocetune-demo/health-check && chmod 0755 /etc/rocetune-demo/health-check'
done
run sh -c "echo 1500 > $GATE/node02/$RAIL"
run .venv/bin/python -m lab.slurm start --health-check /etc/rocetune-demo/health-check --interval 3
slurm() { .venv/bin/python -m lab.slurm run "$@"; }
wait_for() {  # NODE STATE: until sinfo shows it (a health check runs every 3 s)
  for _ in $(seq 60); do
    [ "$(slurm sinfo --noheader --nodes "$1" --format %T)" = "$2" ] && return 0
    sleep 0.5
  done
  echo "demo: $1 did not become $2" >&2; return 1
}
wait_for node02 drained
run slurm sinfo -R --format '%8n %E'
run slurm srun -N$((${#NAMES[@]} - 1)) -l hostname
echo
echo "Each node's own \`rocetune --json doctor\`, as it is, compared by \`rocetune fleet report\`:"
for h in "${NAMES[@]}"; do
  .venv/bin/python -m lab ssh "$h" /usr/local/bin/rocetune --json doctor --no-counters --root "$GATE/$h" \
    > "$TMP/fleet/$h.json" || true   # exit 1 (a failure) or 5 (warnings) is its verdict
done
run .venv/bin/rocetune fleet report "$TMP/fleet" || true   # exit 1: a host differs
echo
echo "Repair node02's rail; its next health check resumes it:"
run sh -c "echo 9000 > $GATE/node02/$RAIL"
wait_for node02 idle
run slurm sinfo -R --format '%8n %E'
run slurm srun -w node02 hostname
run .venv/bin/python -m lab.slurm stop
echo "(the gate took $((SECONDS - GATE_START)) s)"

banner "Done: the lab comes down next (unless --keep)"
