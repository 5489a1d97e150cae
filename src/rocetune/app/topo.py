"""The topo use case: a host's GPU/NIC matrix, its RDMA ports, and the GPU-NIC paths NCCL sees
through the topology file a plan gives it."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..model.record import FrozenRecord, Record


class TopoRequest(FrozenRecord):
    root: str
    features_path: Optional[str]  # the host's Features from a file instead of a probe of the root
    _fields = ("root", "features_path")

    def __init__(self, root: str = "/", features_path: Optional[str] = None) -> None:
        self._set(root, features_path)


class Topology(Record):
    features: dict
    matrix: List[List[str]]  # like `nvidia-smi topo -m`: a header row, then a row per GPU
    nics: List[List[str]]  # a header row, then a row per RDMA port
    nccl_topology: Optional[Dict[str, Any]]  # nccl_topology(); None when no file is planned
    warnings: List[str]  # what the sources could not read
    _fields = ("features", "matrix", "nics", "nccl_topology", "warnings")

    def __init__(self, features: dict, matrix: List[List[str]], nics: List[List[str]],
                 nccl_topology: Optional[Dict[str, Any]], warnings: List[str]) -> None:
        self.features = features
        self.matrix = matrix
        self.nics = nics
        self.nccl_topology = nccl_topology
        self.warnings = warnings


def topo(request: TopoRequest) -> Topology:
    from ..render.topo_matrix import matrix_rows, nic_rows
    from .findings import source_warnings
    from .inputs import host_features

    f = host_features(request.root, request.features_path)
    return Topology(f, matrix_rows(f), nic_rows(f), nccl_topology(f), source_warnings(f))


def nccl_topology(features: dict) -> Optional[dict]:
    """The NCCL topology file a plan gives NCCL on this host and the GPU-NIC paths NCCL sees
    through it (rocetune.analysis.topofile); None when no file is planned or it cannot be read."""
    from ..analysis.hostview import HostView

    plan = HostView(features).topology().plan
    if plan is None or plan.tree is None:
        return None
    pairs = [{"gpu": g, "nic": nic, "path": path}
             for nic, by_gpu in sorted(plan.paths.items()) for g, path in sorted(by_gpu.items())]
    return {"file": plan.label(), "kind": plan.kind, "path": plan.path, "pairs": pairs,
            "unplaced_gpus": plan.unplaced_gpus, "unplaced_nics": plan.unplaced_nics}
