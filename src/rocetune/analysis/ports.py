"""An RDMA port as the analysis sees it, and the compute-port selection's answer (`Selection`,
with the `Doubt`s it leaves)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model.record import FrozenRecord, Record
from ..model.vocab import GPU_LOCAL

VERBS_LINK_LAYERS = ("Ethernet", "InfiniBand")


class Port(Record):
    device: str
    port: Optional[int]  # None: a device named without its ports (nvidia-smi topo -m's legend)
    link_layer: Optional[str]
    state: Optional[str]
    rate_gbps: Optional[float]
    netdev: Optional[str]
    pci: Optional[str]
    gids: List[dict]
    v4_gids: List[int]
    v6_gids: List[int]
    iface: Optional[dict]
    best_path: Optional[str]
    local_gpus: List[int]
    function: str  # pci | auxiliary (a sub-function below a PCI function) | software
    auxiliary: Optional[str]
    _fields = ("device", "port", "link_layer", "state", "rate_gbps", "netdev", "pci", "gids",
               "v4_gids", "v6_gids", "iface", "best_path", "local_gpus", "function", "auxiliary")

    def __init__(self, device: str, port: Optional[int], link_layer: Optional[str], state: Optional[str],
                 rate_gbps: Optional[float], netdev: Optional[str], pci: Optional[str], gids: List[dict],
                 v4_gids: List[int], v6_gids: List[int], iface: Optional[dict] = None,
                 best_path: Optional[str] = None, local_gpus: Optional[List[int]] = None,
                 function: str = "pci", auxiliary: Optional[str] = None) -> None:
        self.device = device
        self.port = port
        self.link_layer = link_layer
        self.state = state
        self.rate_gbps = rate_gbps
        self.netdev = netdev
        self.pci = pci
        self.gids = gids
        self.v4_gids = v4_gids
        self.v6_gids = v6_gids
        self.iface = iface
        self.best_path = best_path
        self.local_gpus = [] if local_gpus is None else local_gpus
        self.function = function
        self.auxiliary = auxiliary

    @property
    def name(self) -> str:
        """`mlx5_0:1`; a device whose ports are unknown is named alone (NCCL: every port of it)."""
        return self.device if self.port is None else f"{self.device}:{self.port}"

    @property
    def is_roce(self) -> bool:
        return self.link_layer == "Ethernet"

    @property
    def gpu_local(self) -> bool:
        return self.best_path in GPU_LOCAL

    @property
    def types_unreadable(self) -> bool:
        return any(g.get("type") is None for g in self.gids)

    @property
    def has_routable_gid(self) -> bool:
        if self.v4_gids or self.v6_gids:
            return True
        # types unreadable: an IPv4/IPv6 GID is there, its RoCE version is unknown
        return any(g.get("type") is None and (g.get("ipv4") or g.get("ipv6")) for g in self.gids)

    def summary(self) -> Dict[str, Any]:
        return {"port": self.name, "link_layer": self.link_layer, "state": self.state,
                "rate_gbps": self.rate_gbps, "netdev": self.netdev, "pci": self.pci,
                "best_gpu_path": self.best_path}


class Doubt(FrozenRecord):
    """A doubt about the choice, as the finding it becomes (declared in rocetune.rules.nccl_ib_hca): the check id,
    its severity, what it is about and the text."""

    check_id: str
    severity: str
    subject: str
    text: str
    _fields = ("check_id", "severity", "subject", "text")

    def __init__(self, check_id: str, severity: str, subject: str, text: str) -> None:
        self._set(check_id, severity, subject, text)


class Selection(Record):
    chosen: List[Port]
    excluded: List[Tuple[Port, str]]
    doubts: List[Doubt]
    notes: List[str]
    rdma_visible: bool
    hidden_reason: Optional[str]
    locality_used: bool
    names_only: bool  # whole devices named by nvidia-smi topo -m; ports, link layer unknown
    # front-end ports chosen because no other RDMA port is usable (NCCL takes them then)
    converged: List[Tuple[Port, str]]
    _fields = ("chosen", "excluded", "doubts", "notes", "rdma_visible", "hidden_reason",
               "locality_used", "names_only", "converged")

    def __init__(self, chosen: List[Port], excluded: List[Tuple[Port, str]], doubts: List[Doubt],
                 notes: List[str], rdma_visible: bool, hidden_reason: Optional[str] = None,
                 locality_used: bool = False, names_only: bool = False,
                 converged: Optional[List[Tuple[Port, str]]] = None) -> None:
        self.chosen = chosen
        self.excluded = excluded
        self.doubts = doubts
        self.notes = notes
        self.rdma_visible = rdma_visible
        self.hidden_reason = hidden_reason
        self.locality_used = locality_used
        self.names_only = names_only
        self.converged = [] if converged is None else converged

    @property
    def uncertain(self) -> List[str]:
        return [d.text for d in self.doubts]

    @property
    def link_layer(self) -> Optional[str]:
        layers = {p.link_layer for p in self.chosen}
        return layers.pop() if len(layers) == 1 else None

    @property
    def roce(self) -> List[Port]:
        return [p for p in self.chosen if p.is_roce]

    def evidence(self) -> Dict[str, Any]:
        return {
            "chosen": [p.summary() for p in self.chosen],
            "excluded": [{"port": p.name, "why": why} for p, why in self.excluded],
            "uncertain": list(self.uncertain),
            "converged": [{"port": p.name, "why": why} for p, why in self.converged],
        }
