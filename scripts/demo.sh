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
#   7. the lab torn down (also on failure or Ctrl-C); --keep leaves it up to poke at:
#        .venv/bin/python tests/lab/lab.py ssh node01        # a shell on a host
#        .venv/bin/python tests/lab/lab.py down              # when done
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
  printf '\n\033[1m==> [%d/7] %s\033[0m\n' "$step" "$*"
}
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

LAB_UP=0
TMP=$(mktemp -d)
cleanup() {
  rc=$?
  if ((LAB_UP)); then
    if ((KEEP)); then
      printf '\n\033[1mdemo: the lab is still up (--keep).\033[0m Try:\n'
      echo "  .venv/bin/python tests/lab/lab.py ssh node01 cat /etc/rocetune/nccl.env"
      echo "  .venv/bin/ansible-playbook site.yml --check --diff"
      echo "  .venv/bin/python tests/lab/lab.py down"
    else
      printf '\n==> tearing the lab down\n'
      .venv/bin/python tests/lab/lab.py down || true
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
run .venv/bin/python tests/lab/lab.py up "$HOSTS"

banner "ansible-playbook site.yml"
PATH="$REPO/.venv/bin:$PATH" run .venv/bin/ansible-playbook site.yml

banner "node01's env file, and why each line is there"
run .venv/bin/python tests/lab/lab.py ssh node01 cat /etc/rocetune/nccl.env
echo
run .venv/bin/rocetune explain --features artifacts/features/node01.json

banner "A Gloo all_reduce across ${HOSTS} hosts, sourcing /etc/rocetune/nccl.env on each"
# The lab's own ssh settings (its key, its known_hosts, strict host key checking).
{ read -r SSH; mapfile -t TARGETS; } < <(.venv/bin/python - <<'PY'
import shlex
from tests.lab import lab
info = lab.current()
print(shlex.join(info.ssh_command(info.names[0])[:-3]))  # without "-l root <address>"
for _, ip in info.hosts:
    print(f"root@{ip}")
PY
)
run examples/jobs/gloo_allreduce.sh --ssh "$SSH" --python "$REPO/.venv/bin/python" --timeout 300 \
  "${TARGETS[@]}" -- --size-mb 32 --iters 5

banner "Done: the lab comes down next (unless --keep)"
