#!/usr/bin/env bash
# A torchrun job across hosts that sources rocetune's env file on every host, then runs a
# torch.distributed Gloo all_reduce and checks the result (examples/jobs/allreduce_check.py).
#
# Fan out from a login node / controller over ssh (one torchrun per host, node rank = the
# host's position; this script must be at the same path on every host, e.g. a shared FS):
#   examples/jobs/gloo_allreduce.sh [options] HOST [HOST ...] [-- CHECK_ARGS ...]
# Under Slurm, one task per node (rank, size and master from SLURM_*):
#   srun --nodes=4 --ntasks-per-node=1 examples/jobs/gloo_allreduce.sh --slurm
# The per-node step (what the two above run on each host):
#   examples/jobs/gloo_allreduce.sh --node NODE_RANK NNODES MASTER_ADDR [-- CHECK_ARGS ...]
#
# Options:
#   --env FILE         env file to source on each host (default /etc/rocetune/nccl.env)
#   --python PY        Python with torch on the hosts (default: python3)
#   --launcher L       torchrun (default) or python (start the ranks directly, no agent)
#   --nproc-per-node N processes per host (default 1: this is a CPU job)
#   --port N           rendezvous port on the first host (default 29500)
#   --ssh "CMD"        ssh command for the fan-out (default: ssh -o BatchMode=yes -o ConnectTimeout=10)
#   --timeout S        seconds the whole job may take on each host (default 300)
#
# The rendezvous address is the first host's address on the interface the env file names
# (GLOO_SOCKET_IFNAME), read on that host: nothing about the fabric is hard-coded here.
# Exit status: 0 when every host passed, else the first non-zero status.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
ENV_FILE=/etc/rocetune/nccl.env
PYTHON=python3
LAUNCHER=torchrun
NPROC=1
PORT=29500
SSH="ssh -o BatchMode=yes -o ConnectTimeout=10"
TIMEOUT=300
MODE=fanout
HOSTS=()
CHECK_ARGS=()

die() { echo "gloo_allreduce: error: $*" >&2; exit 2; }

while (($#)); do
  case "$1" in
    --env) ENV_FILE=$2; shift 2 ;;
    --python) PYTHON=$2; shift 2 ;;
    --launcher) LAUNCHER=$2; shift 2 ;;
    --nproc-per-node) NPROC=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --ssh) SSH=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --slurm) MODE=slurm; shift ;;
    --node) MODE=node; NODE_RANK=$2; NNODES=$3; MASTER_ADDR=$4; shift 4 ;;
    --) shift; CHECK_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) HOSTS+=("$1"); shift ;;
  esac
done
case "$LAUNCHER" in torchrun|python) ;; *) die "--launcher must be torchrun or python" ;; esac

# Source the env file rocetune wrote (exports NCCL_*/GLOO_*/UCX_* ... for this host).
load_env() {
  [ -r "$ENV_FILE" ] || die "$(hostname): $ENV_FILE not found: run 'ansible-playbook site.yml' (or 'rocetune env --format sh -o $ENV_FILE') first"
  set -a
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  set +a
  [ -n "${GLOO_SOCKET_IFNAME:-}" ] || die "$(hostname): $ENV_FILE sets no GLOO_SOCKET_IFNAME"
}

# This host's IPv4 address on the interface the env file chose.
env_address() {
  local ifname=${GLOO_SOCKET_IFNAME%%,*}
  ip -o -4 addr show dev "$ifname" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}'
}

run_node() {
  load_env
  [ "$MASTER_ADDR" = auto ] && MASTER_ADDR=$(env_address)
  [ -n "$MASTER_ADDR" ] || die "$(hostname): no IPv4 address on $GLOO_SOCKET_IFNAME for the rendezvous"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  # c10d warns for every peer whose address has no reverse DNS name (clusters and the lab
  # without DNS); errors still show.
  export TORCH_CPP_LOG_LEVEL=${TORCH_CPP_LOG_LEVEL:-ERROR}
  # A CPU-only torch without numpy says so at import; harmless for this job.
  export PYTHONWARNINGS=${PYTHONWARNINGS:-"ignore:Failed to initialize NumPy"}
  local check="$HERE/allreduce_check.py"
  if [ "$LAUNCHER" = torchrun ]; then
    exec timeout "$TIMEOUT" "$PYTHON" -m torch.distributed.run \
      --nnodes="$NNODES" --node-rank="$NODE_RANK" --nproc-per-node="$NPROC" \
      --master-addr="$MASTER_ADDR" --master-port="$PORT" --max-restarts=0 \
      "$check" "${CHECK_ARGS[@]}"
  fi
  [ "$NPROC" = 1 ] || die "--launcher python starts one rank per host; use torchrun for --nproc-per-node"
  RANK=$NODE_RANK WORLD_SIZE=$NNODES MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$PORT \
    exec timeout "$TIMEOUT" "$PYTHON" "$check" "${CHECK_ARGS[@]}"
}

q() { printf '%q ' "$@"; }

case "$MODE" in
  node)
    run_node ;;
  slurm)
    : "${SLURM_NODEID:?--slurm needs SLURM_NODEID (run it with srun)}"
    NODE_RANK=$SLURM_NODEID NNODES=$SLURM_NNODES
    # The store's address only: Gloo's data connections follow GLOO_SOCKET_IFNAME.
    MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
    run_node ;;
  fanout)
    ((${#HOSTS[@]})) || die "no hosts given (see --help)"
    read -r -a ssh <<<"$SSH"
    common=(--env "$ENV_FILE" --python "$PYTHON" --launcher "$LAUNCHER" --nproc-per-node "$NPROC"
            --port "$PORT" --timeout "$TIMEOUT")
    # 1. The rendezvous address: the first host's address on the interface its env names.
    master=$(timeout 60 "${ssh[@]}" "${HOSTS[0]}" -- \
      "set -a; . $(q "$ENV_FILE") && ip -o -4 addr show dev \"\${GLOO_SOCKET_IFNAME%%,*}\"" \
      | awk '{split($4, a, "/"); print a[1]; exit}') || true
    [ -n "$master" ] || die "${HOSTS[0]}: cannot read its address on GLOO_SOCKET_IFNAME from $ENV_FILE"
    echo "gloo_allreduce: ${#HOSTS[@]} hosts, rendezvous ${master}:${PORT} (${HOSTS[0]}), launcher $LAUNCHER" >&2
    # 2. One torchrun per host, all at once; rank 0's line is the result.
    pids=()
    for i in "${!HOSTS[@]}"; do
      remote="$(q "$SELF" --node "$i" "${#HOSTS[@]}" "$master" "${common[@]}" -- "${CHECK_ARGS[@]}")"
      timeout $((TIMEOUT + 30)) "${ssh[@]}" "${HOSTS[$i]}" -- "$remote" &
      pids+=($!)
    done
    rc=0
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}" || {
        st=$?
        echo "gloo_allreduce: ${HOSTS[$i]}: exited $st" >&2
        ((rc)) || rc=$st
      }
    done
    exit "$rc" ;;
esac
