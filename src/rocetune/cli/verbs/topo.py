"""rocetune topo: the GPU/NIC matrix, like `nvidia-smi topo -m`, plus what RDMA ports look like."""

from __future__ import annotations

import argparse
from typing import Dict, List, Optional

from ..result import Result

NAME = "topo"
ORDER = 20
HELP = "print the GPU/NIC topology matrix with link layer, state, speed, netdev and NUMA"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--features", metavar="FILE", help="read a saved Features JSON instead of probing")


def _gpu_gpu(f: dict, a: dict, b: dict) -> str:
    from ...sources.pci import path_type

    count = a["nvlink"].get(str(b["index"]))
    if count:
        return f"NV{count}"
    by_bdf = {d["bdf"]: d for d in f["pci"]["devices"]}
    da, db = by_bdf.get(a["bdf"] or ""), by_bdf.get(b["bdf"] or "")
    if da and db:
        return path_type(da, db, len(f["host"].get("numa_nodes", [])) <= 1)
    links = ((f.get("gpu") or {}).get("matrix") or {}).get("links", {})
    return links.get(f"GPU{a['index']}", {}).get(f"GPU{b['index']}", "?")


def matrix_rows(f: dict) -> List[List[str]]:
    gpus = f["gpus"]
    from ...sources.rdma import natural_key

    nics = sorted({p["nic"] for p in f["topology"]["gpu_nic"]} | {d["name"] for d in f["rdma"]["devices"]},
                  key=natural_key)
    pair: Dict[tuple, str] = {(p["gpu"], p["nic"]): p["path"] for p in f["topology"]["gpu_nic"]}
    header = [""] + [f"GPU{g['index']}" for g in gpus] + nics + ["CPU Affinity", "NUMA"]
    rows = [header]
    for g in gpus:
        cells = [f"GPU{g['index']}"]
        cells += ["X" if h is g else _gpu_gpu(f, g, h) for h in gpus]
        cells += [pair.get((g["index"], n), "?") for n in nics]
        cells += [g["cpu_affinity"] or "-", "-" if g["numa_node"] is None else str(g["numa_node"])]
        rows.append(cells)
    return rows


def _table(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(len(r) for r in rows))]
    return "\n".join("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows)


def nic_rows(f: dict) -> List[List[str]]:
    numa = {d["bdf"]: d["numa_node"] for d in f["pci"]["devices"]}
    rows = [["NIC", "port", "state", "link", "rate", "netdev", "mtu", "roce-mtu", "numa", "pci"]]
    for d in f["rdma"]["devices"]:
        for p in d["ports"]:
            node: Optional[int] = numa.get(d["pci"] or "")
            rows.append([d["name"], str(p["port"]), p["state"] or "?", p["link_layer"] or "?",
                         p["rate"] or "?", p["netdev"] or "-", str(p["netdev_mtu"] or "-"),
                         str(p["roce_mtu"] or "-"), "-" if node is None else str(node), d["pci"] or "-"])
    return rows


def run(args: argparse.Namespace) -> Result:
    from ... import features as features_doc
    from ... import probe as probing

    if getattr(args, "features", None):
        f = features_doc.load(args.features)
    else:
        f = probing.collect_features(args.root)
    parts = []
    if f["gpus"]:
        parts.append(_table(matrix_rows(f)))
    else:
        parts.append("no NVIDIA GPU on this host")
    if f["rdma"]["devices"]:
        parts.append(_table(nic_rows(f)))
    else:
        parts.append("no RDMA device on this host")
    if f["topology"]["disagreements"]:
        parts.append("sysfs and nvidia-smi disagree:\n" + "\n".join(
            f"  {d}" for d in f["topology"]["disagreements"]))
    data = {"gpus": f["gpus"], "gpu_nic": f["topology"]["gpu_nic"], "matrix": matrix_rows(f),
            "nics": nic_rows(f)}
    return Result(command=NAME, data=data, human="\n\n".join(parts) + "\n",
                  warnings=probing.warnings_of(f))
