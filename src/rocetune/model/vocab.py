"""Vocabulary shared by the probe, the analysis and the rules: PCI path types and name order."""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Tuple

# nvidia-smi's path vocabulary, nearest first (NODE is across host bridges in one NUMA node).
PATH_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
# Paths at which NCCL uses GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL defaults to PXB).
GPU_LOCAL = ("PIX", "PXB")
# GPUs joined to their CPU by NVLink-C2C (Grace superchips; NVIDIA's product names). NCCL calls the path
# from such a GPU to a NIC on its own CPU P2C (2.27.3+), and its default GDR level is P2C when
# NCCL_NET_GDR_C2C is on (v2.30.7-1 src/graph/paths.cc:510).
C2C_GPU = re.compile(r"\bG[BH]\d{3}\b")

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> Tuple[Any, ...]:
    """mlx5_2 before mlx5_10; names are compared piecewise, never assumed to follow a pattern."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _DIGITS.split(name) if p)


def path_rank(path: Optional[str]) -> int:
    """Position of a path type in PATH_ORDER; unknown paths rank after SYS."""
    return PATH_ORDER.index(path) if path in PATH_ORDER else len(PATH_ORDER)


def path_type(a: dict, b: dict, single_node: bool = False) -> str:
    """Classify the PCIe path between two devices the way `nvidia-smi topo -m` does.

    Across host bridges the NUMA node decides NODE vs SYS; an unknown node counts as the same
    one only on a host with a single NUMA node.
    """
    if a["root_complex"] is None or a["root_complex"] != b["root_complex"]:
        na, nb = a.get("numa_node"), b.get("numa_node")
        if na is None or nb is None:
            return "NODE" if single_node else "SYS"
        return "NODE" if na == nb else "SYS"
    sa, sb = a["switches"], b["switches"]
    if sa and sb and sa[-1] == sb[-1]:
        return "PIX"
    common = 0
    for x, y in zip(sa, sb):
        if x != y:
            break
        common += 1
    return "PXB" if common else "PHB"


def some_of(names: Sequence[str], shown: int = 4) -> str:
    """`a, b, c, d and 8 more`: the first names of a list, and how many were left out."""
    text = ", ".join(names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")
