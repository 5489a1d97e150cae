"""The GPU/NIC matrix of `rocetune topo`, in nvidia-smi's vocabulary, and the RDMA port table."""

from __future__ import annotations

from typing import Dict, List, Optional

from ..model.vocab import natural_key, path_type


def _gpu_gpu(f: dict, a: dict, b: dict) -> str:
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


def nic_rows(f: dict) -> List[List[str]]:
    numa = {d["bdf"]: d["numa_node"] for d in f["pci"]["devices"]}
    rows = [["NIC", "port", "state", "link", "rate", "netdev", "mtu", "roce-mtu", "numa", "pci"]]
    for d in f["rdma"]["devices"]:
        if d.get("ports_known") is False:  # named by a pasted topo -m legend: nothing else known
            rows.append([d["name"], "?", "?", "?", "?", "-", "-", "-", "-", d["pci"] or "-"])
        for p in d["ports"]:
            node: Optional[int] = numa.get(d["pci"] or "")
            rows.append([d["name"], str(p["port"]), p["state"] or "?", p["link_layer"] or "?",
                         p["rate"] or "?", p["netdev"] or "-", str(p["netdev_mtu"] or "-"),
                         str(p["roce_mtu"] or "-"), "-" if node is None else str(node), d["pci"] or "-"])
    return rows
