"""rocetune topo: the GPU/NIC matrix, like `nvidia-smi topo -m`, plus what RDMA ports look like."""

from __future__ import annotations

import argparse

from ..result import Result

NAME = "topo"
ORDER = 20
HELP = "print the GPU/NIC topology matrix with link layer, state, speed, netdev and NUMA"
EXAMPLE = "rocetune topo --root ./host-capture"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "the topology was printed",
}


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--features", metavar="FILE", help="read a saved Features file instead of probing")


def run(args: argparse.Namespace) -> Result:
    from ...app.topo import TopoRequest, topo
    from ...text import table

    done = topo(TopoRequest(args.root, getattr(args, "features", None)))
    f = done.features
    parts = []
    if f["gpus"]:
        parts.append("\n".join(table(done.matrix)))
    else:
        parts.append("no NVIDIA GPU on this host")
    if f["rdma"]["devices"]:
        parts.append("\n".join(table(done.nics)))
    else:
        parts.append("no RDMA device on this host")
    if f["topology"]["disagreements"]:
        parts.append("sysfs and nvidia-smi disagree:\n" + "\n".join(
            f"  {d}" for d in f["topology"]["disagreements"]))
    planned = done.nccl_topology
    if planned is not None and planned["pairs"]:
        parts.append("\n".join([f"GPU-NIC paths NCCL sees through the {planned['file']}:"] +
                               table(_planned_rows(planned))))
        if planned["unplaced_gpus"] or planned["unplaced_nics"]:
            parts.append("not in that file (NCCL places them where it detects them): " + ", ".join(
                [f"GPU{g}" for g in planned["unplaced_gpus"]] + planned["unplaced_nics"]))
    data = {"gpus": f["gpus"], "gpu_nic": f["topology"]["gpu_nic"], "matrix": done.matrix,
            "nics": done.nics, "nccl_topology": planned}
    return Result(command=NAME, data=data, human="\n\n".join(parts) + "\n", warnings=done.warnings)


def _planned_rows(planned: dict):
    from ...model.vocab import natural_key

    gpus = sorted({p["gpu"] for p in planned["pairs"]})
    nics = sorted({p["nic"] for p in planned["pairs"]}, key=natural_key)
    path = {(p["gpu"], p["nic"]): p["path"] for p in planned["pairs"]}
    return [[""] + nics] + [[f"GPU{g}"] + [path.get((g, n), "?") for n in nics] for g in gpus]
