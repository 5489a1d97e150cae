"""`nccl`: real NCCL on each node with the node's own env file, two ranks on one GPU that NCCL
connects through its network transport; NCCL's log read with doctor's reader against the plan,
the bus bandwidth against a baseline (fleet.nccl_check)."""

from __future__ import annotations

import argparse
from typing import List

from . import FleetTest, NodeContext


def run_node(ctx: NodeContext) -> dict:
    from .. import nccl_check

    return nccl_check.run_on(ctx.host.remote, ctx.host.plan_env, ctx.settings)


def add_arguments(g) -> None:
    g.add_argument("--nccl-env-file", default="/etc/rocetune/nccl.env", metavar="FILE",
                   help="with nccl: the env file the job sources on the nodes (default /etc/rocetune/nccl.env)")
    g.add_argument("--nccl-python", default="python3", metavar="PY",
                   help="with nccl: the python on the nodes that has PyTorch (default python3)")
    g.add_argument("--nccl-baseline", metavar="FILE",
                   help="with nccl: an earlier `validate -o` result; a node below --fraction of its figure fails")


def settings(args: argparse.Namespace):
    from .. import nccl_check

    baseline = nccl_check.load_baseline(args.nccl_baseline) if args.nccl_baseline else None
    return nccl_check.Settings(env_file=args.nccl_env_file, python=args.nccl_python,
                               fraction=args.fraction, baseline=baseline)


def node_row(doc: dict) -> List[str]:
    nets = sorted({p["network"] for p in doc.get("processes", []) if p.get("network")})
    devs = sorted({d["name"] for p in doc.get("processes", []) for d in p.get("devices", [])})
    where = ("network " + "/".join(nets) if nets else "") + (f" on {','.join(devs)}" if devs else "")
    return [f"{doc['busbw_gbs']:g} GB/s" if "busbw_gbs" in doc else "", where]


def defaults():
    from .. import nccl_check

    return nccl_check.Settings()


TEST = FleetTest(
    name="nccl", order=60,
    summary="NCCL on each node with its env file (two ranks through the network transport), its log "
            "read against the plan, the bus bandwidth against a baseline",
    node=run_node, add_arguments=add_arguments, settings=settings, defaults=defaults, node_row=node_row)
