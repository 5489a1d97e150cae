"""`nccl-multi`: one collective across the nodes through the scheduler (srun), each rank with its
node's own env file; NCCL's log read with doctor's reader, the bus bandwidth against a baseline, a
net-only variant, a slow collective bisected to its node (fleet.nccl_multi)."""

from __future__ import annotations

import argparse
from typing import List

from . import FleetContext, FleetTest


def run_fleet(ctx: FleetContext) -> dict:
    from .. import nccl_multi

    return nccl_multi.run_fleet(ctx.hosts, ctx.settings)


def add_arguments(g) -> None:
    g.add_argument("--slurm-from", metavar="HOST",
                   help="with nccl-multi: the host srun runs on (default: the first host)")
    g.add_argument("--nccl-multi-tasks", type=int, default=1, metavar="N",
                   help="with nccl-multi: ranks per node (default 1; one per GPU on a GPU node)")
    g.add_argument("--nccl-multi-size", type=int, default=16, metavar="MB",
                   help="with nccl-multi: the all_reduce's size in MiB (default 16)")
    g.add_argument("--nccl-multi-iters", type=int, default=10, metavar="N",
                   help="with nccl-multi: timed all_reduces (default 10, after 2 warm-up)")
    g.add_argument("--nccl-multi-min-busbw", type=float, metavar="GBS",
                   help="with nccl-multi: the bus bandwidth (GB/s) the collective must reach")
    g.add_argument("--nccl-tests-bin", metavar="PATH",
                   help="with nccl-multi: run nccl-tests' all_reduce_perf at PATH on the nodes instead of "
                        "the PyTorch script")
    g.add_argument("--nccl-multi-variants", default="env,net-only", metavar="LIST",
                   help="with nccl-multi: env (the env as deployed), net-only (NCCL_P2P_DISABLE=1 "
                        "NCCL_SHM_DISABLE=1: every byte through the network transport); default both")
    g.add_argument("--srun-arg", action="append", default=[], metavar="ARG",
                   help="with nccl-multi: one more srun argument (repeatable: --srun-arg=--partition=gpu)")


def settings(args: argparse.Namespace):
    from .. import nccl_multi

    variants = tuple(v.strip() for v in args.nccl_multi_variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in nccl_multi.VARIANTS]
    if unknown or not variants:
        from ...errors import ExitCode, RocetuneError

        raise RocetuneError(f"--nccl-multi-variants {args.nccl_multi_variants}: give any of "
                            f"{', '.join(nccl_multi.VARIANTS)}", code=ExitCode.USAGE)
    baseline = None
    if getattr(args, "nccl_baseline", None):
        baseline = load_baseline(args.nccl_baseline)
    return nccl_multi.Settings(env_file=args.nccl_env_file, python=args.nccl_python, slurm_from=args.slurm_from,
                               tasks_per_node=max(1, args.nccl_multi_tasks), fraction=args.fraction,
                               baseline=baseline, min_busbw=args.nccl_multi_min_busbw,
                               nccl_tests_bin=args.nccl_tests_bin, srun_args=tuple(args.srun_arg),
                               variants=variants, size_mb=max(1, args.nccl_multi_size),
                               iters=max(1, args.nccl_multi_iters))


def load_baseline(path: str):
    """The nccl-multi bus bandwidth of an earlier `validate -o` result; None when it has none
    (the per-node `nccl` test reads its own figures from the same file)."""
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    value = ((doc.get("fleet") or {}).get("nccl-multi") or {}).get("busbw_gbs") if isinstance(doc, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def fleet_lines(doc: dict) -> List[str]:
    out = []
    if doc.get("label"):
        out.append(doc["label"])
    for variant, r in (doc.get("variants") or {}).items():
        figure = f"{r['busbw_gbs']:g} GB/s" if "busbw_gbs" in r else "-"
        out.append(f"{variant}: {r.get('status')} {figure} ({r.get('backend') or 'no backend'}, "
                   f"{len(r.get('ranks') or [])} ranks)" + (f": {r.get('why') or r.get('error')}"
                                                            if r.get("status") != "pass" else ""))
    if doc.get("bisect"):
        out.append("bisection: " + (", ".join(doc.get("suspects") or []) or "no single node")
                   + f" in {len(doc['bisect'].get('runs') or [])} runs")
    return out


def defaults():
    from .. import nccl_multi

    return nccl_multi.Settings()


TEST = FleetTest(
    name="nccl-multi", order=65,
    summary="one collective across the nodes through srun, each rank with its node's env file: NCCL "
            "(Gloo on the socket interface where there is no GPU, labelled), its log read against the "
            "plan, bus bandwidth against a baseline, a net-only variant, a slow collective bisected",
    fleet=run_fleet, add_arguments=add_arguments, settings=settings, defaults=defaults,
    fleet_lines=fleet_lines, needs_pairs=False)
