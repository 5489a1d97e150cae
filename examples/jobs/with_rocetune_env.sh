#!/usr/bin/env bash
# Run a command with this node's rocetune env, for launchers that start every rank or task
# themselves (mpirun, srun with one task per GPU, DeepSpeed's pdsh/openmpi/slurm launchers):
#
#   mpirun ... examples/jobs/with_rocetune_env.sh python train.py
#   srun --ntasks-per-node=8 examples/jobs/with_rocetune_env.sh python train.py
#
# 1. Sources the node's env file (default /etc/rocetune/nccl.env, written by site.yml).
# 2. With --per-rank, adds the variables for this rank's GPU (its NIC, NUMA node, CPUs) from
#    `rocetune env --local-rank N`, where N comes from the launcher (LOCAL_RANK,
#    OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, in that order).
# 3. execs the command.
# Any failure (no env file, rocetune missing or failing, no local rank) stops here with a
# one-line error and exit status 2, before the command starts: a rank never runs with half an env.
#
# Options (before the command):
#   --env FILE    node env file (default /etc/rocetune/nccl.env)
#   --per-rank    also apply the per-rank variables (needs rocetune on the node)
#   --rocetune R  rocetune executable (default: rocetune on PATH)
set -euo pipefail

ENV_FILE=/etc/rocetune/nccl.env
PER_RANK=0
ROCETUNE=rocetune

die() { echo "with_rocetune_env: error: $(hostname): $*" >&2; exit 2; }

while (($#)); do
  case "$1" in
    --env) ENV_FILE=$2; shift 2 ;;
    --per-rank) PER_RANK=1; shift ;;
    --rocetune) ROCETUNE=$2; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
(($#)) || die "no command given"

[ -r "$ENV_FILE" ] || die "$ENV_FILE not found: run 'ansible-playbook site.yml' or 'rocetune env --format sh -o $ENV_FILE'"
set -a
# shellcheck disable=SC1090
. "$ENV_FILE"
set +a

if ((PER_RANK)); then
  rank=${LOCAL_RANK:-${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-}}}
  [ -n "$rank" ] || die "--per-rank: no LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID"
  # Capture first, then eval: `eval "$(rocetune ...)"` would run an empty string and succeed
  # when rocetune fails.
  env_text=$("$ROCETUNE" env --local-rank "$rank" --format sh) \
    || die "'$ROCETUNE env --local-rank $rank' failed"
  set -a
  eval "$env_text"
  set +a
fi

exec "$@"
