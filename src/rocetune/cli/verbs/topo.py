"""rocetune topo: the GPU/NIC matrix, like `nvidia-smi topo -m`, plus what RDMA ports look like."""

from __future__ import annotations

import argparse

from .. import report
from ..result import Result

NAME = "topo"
ORDER = 20
HELP = "print the GPU/NIC topology matrix with link layer, state, speed, netdev and NUMA"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--features", metavar="FILE", help="read a saved Features file instead of probing")


def run(args: argparse.Namespace) -> Result:
    from ...probe.findings import source_warnings
    from ...render.topo_matrix import matrix_rows, nic_rows
    from ...text import table

    f = report.collect(args)
    parts = []
    if f["gpus"]:
        parts.append("\n".join(table(matrix_rows(f))))
    else:
        parts.append("no NVIDIA GPU on this host")
    if f["rdma"]["devices"]:
        parts.append("\n".join(table(nic_rows(f))))
    else:
        parts.append("no RDMA device on this host")
    if f["topology"]["disagreements"]:
        parts.append("sysfs and nvidia-smi disagree:\n" + "\n".join(
            f"  {d}" for d in f["topology"]["disagreements"]))
    data = {"gpus": f["gpus"], "gpu_nic": f["topology"]["gpu_nic"], "matrix": matrix_rows(f),
            "nics": nic_rows(f)}
    return Result(command=NAME, data=data, human="\n\n".join(parts) + "\n", warnings=source_warnings(f))
