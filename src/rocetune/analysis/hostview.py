"""Shared, pure analysis of a Features document that several rules need.

The central question is which RDMA ports are the compute fabric (`HostView.selection`): the
answer feeds NCCL_IB_HCA, the GID choice, the traffic class, UCX_NET_DEVICES, the queue pairs
and the topology file, so it is computed once here and every rule reads the same answer.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..model.frontend import FrontEnd, front_end
from ..model.vocab import GPU_LOCAL, PATH_ORDER, natural_key, path_rank
from ..nccl.versions import parse_version

VERBS_LINK_LAYERS = ("Ethernet", "InfiniBand")

# A role in an RDMA device's name (udev or vendor naming): storage or management, not a compute rail.
_ROLE_WORD = re.compile(r"(?:^|[_\-.0-9])(storage|stor|mgmt|mgt|management)(?=$|[_\-.0-9])", re.I)

# Interfaces that never carry NCCL traffic between nodes.
_VIRTUAL_PREFIXES = ("docker", "veth", "virbr", "cni", "flannel", "cilium", "kube", "lxc",
                     "vxlan", "tun", "tap", "genev", "weave", "calico", "cali", "br-", "podman",
                     "tailscale", "wg", "zt")

# Cloud NICs whose vendor NCCL net plugin (or NCCL's own socket auto-tuning) must not be
# second-guessed: PCI vendor ids and kernel drivers.
_PLUGIN_CLOUDS = {
    "aws-efa": {"vendors": ("0x1d0f",), "drivers": ("efa", "ena"),
                "what": "AWS EFA/ENA (aws-ofi-nccl plugin; NCCL auto-tunes sockets for vendor 0x1d0f)"},
    "gcp-gvnic": {"vendors": ("0x1ae0",), "drivers": ("gve",),
                  "what": "Google gVNIC (GPUDirect-TCPX/TCPXO plugins; NCCL auto-tunes sockets for vendor 0x1ae0)"},
}


@dataclass
class Port:
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
    iface: Optional[dict] = None
    best_path: Optional[str] = None
    local_gpus: List[int] = field(default_factory=list)
    function: str = "pci"  # pci | auxiliary (a sub-function below a PCI function) | software
    auxiliary: Optional[str] = None

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


@dataclass(frozen=True)
class Doubt:
    """A doubt about the choice, as the finding it becomes (rocetune.checks.plan): the check id,
    its severity, what it is about and the text."""

    check_id: str
    severity: str
    subject: str
    text: str


@dataclass
class Selection:
    chosen: List[Port]
    excluded: List[Tuple[Port, str]]
    doubts: List[Doubt]
    notes: List[str]
    rdma_visible: bool
    hidden_reason: Optional[str] = None
    locality_used: bool = False
    names_only: bool = False  # whole devices named by nvidia-smi topo -m; ports, link layer unknown
    # front-end ports chosen because no other RDMA port is usable (NCCL takes them then)
    converged: List[Tuple[Port, str]] = field(default_factory=list)

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


@dataclass
class _Verdicts:
    """What the selection's stages say: ports left out (with why), doubts, notes."""
    excluded: List[Tuple[Port, str]] = field(default_factory=list)
    doubts: List[Doubt] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def doubt(self, text: str, check_id: str = "compute-ports-uncertain", subject: str = "compute ports",
              severity: str = "warning") -> None:
        self.doubts.append(Doubt(check_id=check_id, severity=severity, subject=subject, text=text))


class HostView:
    """Derived facts about one host; every method reads only the Features."""

    def __init__(self, features: dict):
        self.f = features
        net = features.get("net") or {}
        self.interfaces: Dict[str, dict] = {i["name"]: i for i in net.get("interfaces", [])}
        self.front: FrontEnd = front_end(net)
        self.default_ifaces: List[str] = list(self.front.interfaces)
        self.gpus: List[dict] = list(features.get("gpus") or [])
        self.pci: Dict[str, dict] = {d["bdf"]: d for d in (features.get("pci") or {}).get("devices", [])}
        self._selection: Optional[Selection] = None
        self._gpu_paths: Optional[Dict[str, Dict[int, str]]] = None
        self._socket_candidates: Optional[List[dict]] = None
        self._ports: Optional[List[Port]] = None
        self._topology: Optional[Any] = None

    # --- NCCL ------------------------------------------------------------------------------
    def nccl_version(self) -> Optional[Tuple[int, int, int]]:
        lib = (self.f.get("kernel") or {}).get("nccl")
        return parse_version(lib.get("version") if isinstance(lib, dict) else None)

    def nccl_version_text(self) -> Optional[str]:
        v = self.nccl_version()
        return ".".join(str(x) for x in v) if v else None

    def nccl_libraries(self) -> List[dict]:
        lib = (self.f.get("kernel") or {}).get("nccl")
        return list(lib.get("libraries") or []) if isinstance(lib, dict) else []

    def nccl_evidence(self) -> Dict[str, Any]:
        """What a version-gated decision was gated on: the release, the library (path, how its
        version was known), and why that one (kernel.nccl.basis; docs/rules/nccl-version.md)."""
        lib = (self.f.get("kernel") or {}).get("nccl")
        lib = lib if isinstance(lib, dict) else {}
        libs = self.nccl_libraries()
        basis = lib.get("basis") or ("single" if self.nccl_version() else "none")
        out: Dict[str, Any] = {"version": self.nccl_version_text(), "library": lib.get("path"),
                               "basis": basis, "libraries_found": len(libs)}
        chosen = next((x for x in libs if x.get("path") == lib.get("path")), None)
        if chosen:
            out["how"], out["package"] = chosen.get("how"), chosen.get("package")
        if basis == "declared":
            out["declared_by"] = (lib.get("declared") or {}).get("by")
        return out

    def nccl_basis_text(self) -> str:
        return nccl_evidence_text(self.nccl_evidence())

    # --- clouds ----------------------------------------------------------------------------
    def plugin_cloud(self) -> Optional[Tuple[str, str]]:
        vendors = {d.get("vendor") for d in self.pci.values() if d.get("kind") == "nic"}
        drivers = {i.get("driver") for i in self.interfaces.values()}
        drivers |= {d.get("driver") for d in self.pci.values() if d.get("kind") == "nic"}
        for key, spec in sorted(_PLUGIN_CLOUDS.items()):
            if vendors & set(spec["vendors"]) or drivers & set(spec["drivers"]):
                return key, spec["what"]
        return None

    # --- interfaces -------------------------------------------------------------------------
    def is_default_route(self, ifname: Optional[str]) -> bool:
        """Whether the interface carries the default route that makes it the front end
        (rocetune.model.frontend: the IPv4 one; an IPv6 router advertisement's does not count)."""
        return bool(ifname) and ifname in self.default_ifaces

    def frontend_reason(self, port: Port) -> Optional[str]:
        """Why this port is the host's management/front-end path, or None."""
        nd = port.netdev
        if not nd:
            return None
        iface = self.interfaces.get(nd) or {}
        if self.is_default_route(nd):
            return f"{nd} {self.front.why}: the management/front-end network"
        master = iface.get("master")
        if master and self.is_default_route(master):
            kind = (self.interfaces.get(master) or {}).get("kind") or "master"
            return f"{nd} is enslaved to {master} ({kind}), which carries the default route"
        for gid in port.gids:
            ndev = gid.get("ndev")
            if ndev and ndev != nd and self.is_default_route(ndev):
                return f"GID {gid['index']} belongs to {ndev}, which carries the default route"
        return None

    def mgmt_subnet_reason(self, port: Port) -> Optional[str]:
        """The port has an address on the default-route interface's subnet."""
        for addr in self.port_addresses(port):
            for net, ifname in self.default_networks():
                if ifname != port.netdev and addr.version == net.version and addr in net:
                    return f"address {addr} is on {ifname}'s subnet {net} (management/front-end network)"
        return None

    def default_networks(self) -> List[Tuple[Any, str]]:
        out = []
        for name in self.default_ifaces:
            for a in (self.interfaces.get(name) or {}).get("addresses", []):
                net = _network(a)
                if net is not None and not net.is_link_local and net.prefixlen > 0:
                    out.append((net, name))
        return out

    def port_addresses(self, port: Port) -> List[Any]:
        out = []
        for g in port.gids:
            for key in ("ipv4", "ipv6"):
                if g.get(key):
                    try:
                        out.append(ipaddress.ip_address(g[key]))
                    except ValueError:
                        pass
        return out

    def prefixlen_of(self, address: str, ifnames: Sequence[Optional[str]]) -> Optional[int]:
        for ifname in ifnames:
            for a in (self.interfaces.get(ifname or "") or {}).get("addresses", []):
                if a.get("address") == address and a.get("prefixlen") is not None:
                    return int(a["prefixlen"])
        for iface in self.interfaces.values():
            for a in iface.get("addresses", []):
                if a.get("address") == address and a.get("prefixlen") is not None:
                    return int(a["prefixlen"])
        return None

    def socket_candidates(self) -> List[dict]:
        """Interfaces the socket transport could use (a new list; looked for once per view)."""
        if self._socket_candidates is None:
            self._socket_candidates = self._find_socket_candidates()
        return list(self._socket_candidates)

    def _find_socket_candidates(self) -> List[dict]:
        out = []
        for name, iface in sorted(self.interfaces.items()):
            kind = iface.get("kind")
            # "virtual" is kept: Hyper-V's eth0 and a pod's eth0/net1 are virtual and carry traffic
            if kind == "loopback" or name.startswith(_VIRTUAL_PREFIXES) or name == "lo":
                continue
            if kind == "bridge" and not self.is_default_route(name):
                continue
            if iface.get("master"):
                continue  # the bond or bridge above it holds the address
            if (iface.get("operstate") or "up").lower() not in ("up", "unknown"):
                continue
            routable = any(_routable(a) for a in iface.get("addresses", []))
            if not routable and not self.unknown_address_networks(name):
                continue
            out.append(iface)
        return out

    def unknown_address_networks(self, ifname: str) -> List[str]:
        """Where IPv4 addresses are unknown (no `ip`, no fib_trie): the IPv4 networks the
        interface has a connected route to. The kernel adds such a route for each address, so
        the interface has an address in each -- its value is what stays unknown."""
        if (self.f.get("net") or {}).get("addresses_known", True):
            return []
        iface = self.interfaces.get(ifname) or {}
        if any(a.get("family") == "inet" for a in iface.get("addresses", [])):
            return []
        return [n for n in iface.get("connected_networks") or [] if ":" not in n]

    # --- GPUs --------------------------------------------------------------------------------
    def gpu_paths(self) -> Dict[str, Dict[int, str]]:
        """RDMA device -> {gpu index: path}; built once per view (a dozen rules ask, and a
        522-device host has 4k pairs): callers read it and never change it."""
        if self._gpu_paths is None:
            self._gpu_paths = self._build_gpu_paths()
        return self._gpu_paths

    def _build_gpu_paths(self) -> Dict[str, Dict[int, str]]:
        out: Dict[str, Dict[int, str]] = {}
        for pair in (self.f.get("topology") or {}).get("gpu_nic", []):
            if pair.get("path"):
                out.setdefault(pair["nic"], {})[int(pair["gpu"])] = pair["path"]
        for g in self.gpus:
            for n in g.get("nearest_nics") or []:
                if n.get("device") and n.get("path"):
                    out.setdefault(n["device"], {}).setdefault(int(g["index"]), n["path"])
        return out

    def topology(self):
        """The NCCL topology file this host's plan gives NCCL, with what planning it said
        (rocetune.analysis.topofile.TopologyOutcome); computed once per view."""
        if self._topology is None:
            from .topofile import plan_topology

            self._topology = plan_topology(self)
        return self._topology

    def nccl_gpu_paths(self) -> Tuple[Dict[str, Dict[int, str]], Optional[Any]]:
        """RDMA device -> {gpu index: path} as NCCL will see it, and the TopologyPlan the paths
        came from (None: the probe's view). A planned topology file places the devices it names;
        a pair it does not place keeps the probe's path (NCCL detects that device where it is)."""
        plan = self.topology().plan
        if plan is None or plan.tree is None:
            return self.gpu_paths(), None
        out = {dev: dict(pairs) for dev, pairs in self.gpu_paths().items()}
        for dev, pairs in plan.paths.items():
            out.setdefault(dev, {}).update(pairs)
        return out, plan

    # --- RDMA ports ---------------------------------------------------------------------------
    def rdma_visible(self) -> Tuple[bool, Optional[str]]:
        rdma = self.f.get("rdma") or {}
        if "known" in rdma:  # decided by the probe (probe.topology.rdma_evidence)
            return bool(rdma["known"]), rdma.get("unknown_reason")
        st = (self.f.get("sources") or {}).get("rdma") or {}
        if st and not st.get("ok", True):
            return False, f"the RDMA source failed: {st.get('reason') or 'unknown reason'}"
        devices = (self.f.get("rdma") or {}).get("devices") or []
        matrix = (self.f.get("gpu") or {}).get("matrix") or {}
        legend = [n.get("name") for n in matrix.get("nics", []) if n.get("name")]
        if not devices and legend:
            return False, ("nvidia-smi lists NICs (" + ", ".join(sorted(legend, key=natural_key)[:4]) +
                           ") that /sys/class/infiniband does not show: RDMA devices not mapped "
                           "into this container?")
        return True, None

    def ports(self) -> List[Port]:
        """Every RDMA port, in name order (a new list; the ports are built once per view)."""
        if self._ports is None:
            self._ports = self._build_ports()
        return list(self._ports)

    def _build_ports(self) -> List[Port]:
        paths = self.gpu_paths()
        out = []
        for dev in (self.f.get("rdma") or {}).get("devices", []):
            per_gpu = paths.get(dev["name"], {})
            best = min(per_gpu.values(), key=path_rank) if per_gpu else None
            local = sorted(g for g, p in per_gpu.items() if p in GPU_LOCAL)
            if dev.get("ports_known") is False:
                out.append(Port(device=dev["name"], port=None, link_layer=None, state=None,
                                rate_gbps=None, netdev=None, pci=dev.get("pci"), gids=[], v4_gids=[],
                                v6_gids=[], best_path=best, local_gpus=local,
                                function=dev.get("function") or "unknown"))
            for p in dev.get("ports", []):
                out.append(Port(
                    device=dev["name"], port=int(p["port"]), link_layer=p.get("link_layer"),
                    state=p.get("state"), rate_gbps=p.get("rate_gbps"), netdev=p.get("netdev"),
                    pci=dev.get("pci"), gids=list(p.get("gids") or []),
                    v4_gids=sorted(p.get("roce_v2_ipv4_gids") or []),
                    v6_gids=sorted(p.get("roce_v2_ipv6_gids") or []),
                    iface=self.interfaces.get(p.get("netdev") or ""), best_path=best,
                    local_gpus=local, function=dev.get("function") or "pci",
                    auxiliary=dev.get("auxiliary")))
        return sorted(out, key=lambda p: (natural_key(p.device), p.port or 0))

    def selection(self) -> Selection:
        if self._selection is None:
            names_only = any(d.get("ports_known") is False
                             for d in (self.f.get("rdma") or {}).get("devices", []))
            self._selection = self._select_names_only() if names_only else self._select()
        return self._selection

    def _select_names_only(self) -> Selection:
        """RDMA devices that only nvidia-smi topo -m's NIC legend names (pasted outputs, no
        sysfs, no ibv_devinfo): each device's path to every GPU is known, its ports, state and
        link layer are not. A device PIX/PXB to some GPU is a compute NIC; one that no GPU
        reaches at PIX/PXB (NODE/SYS/PHB to all) is front-end or storage. Without any GPU-local
        device nothing tells compute from front-end, and nothing is chosen."""
        devices = self.ports()
        local = [p for p in devices if p.gpu_local]
        if not local:
            names = ", ".join(p.device for p in devices)
            return Selection([], [], [], [], False,
                             f"nvidia-smi topo -m names {names} but none is PIX/PXB to a GPU, and "
                             "without sysfs or ibv_devinfo their state and link layer are unknown: "
                             "compute and front-end NICs cannot be told apart", names_only=True)
        excluded = [(p, f"no GPU at PIX/PXB (nearest GPU path {p.best_path or 'unknown'}) while "
                        "GPU-local devices exist: front-end or storage NIC")
                    for p in devices if not p.gpu_local]
        local, side = self._drop_side_nics(local)
        excluded += side
        covered = {g for p in local for g in p.local_gpus}
        missing = sorted(int(g["index"]) for g in self.gpus if int(g["index"]) not in covered)
        gpus = ", ".join(f"GPU{g}" for g in missing)
        uncertain = ([Doubt(check_id="gpu-without-rail", severity="warning", subject=gpus,
                            text="no GPU-local RDMA device for " + gpus)] if missing else [])
        notes = ["RDMA devices named by nvidia-smi topo -m alone: each chosen device is given "
                 "without a port (NCCL then takes every ACTIVE port of it); its link layer is "
                 "unknown, so no RoCE setting (GID index, traffic class, queue pairs) is planned"]
        return Selection(local, excluded, uncertain, notes, True, locality_used=True, names_only=True)

    def _drop_side_nics(self, local: List[Port]) -> Tuple[List[Port], List[Tuple[Port, str]]]:
        """Storage and management NICs among the GPU-near devices of a legend-only topo -m: where
        every GPU has a PIX device of its own (one rail per GPU), a further device that is PIX to
        no GPU -- PXB to several, behind a switch the GPUs share -- is not a rail; and a device
        whose name gives it a storage or management role is not one either, as long as the GPUs
        it is near keep another PIX/PXB device. (kept, [(device, why)])."""
        paths = self.gpu_paths()
        gpus = [int(g["index"]) for g in self.gpus]
        pix = {g: [p for p in local if paths.get(p.device, {}).get(g) == "PIX"] for g in gpus}
        out: List[Tuple[Port, str]] = []
        kept = list(local)
        if gpus and all(pix[g] for g in gpus):
            for p in local:
                if not any(paths.get(p.device, {}).get(g) == "PIX" for g in gpus):
                    gpus_near = ", ".join(f"GPU{g}" for g in p.local_gpus)
                    out.append((p, f"PIX to no GPU (PXB to {gpus_near}) while every GPU has a PIX device of "
                                   "its own: a storage or management NIC behind a shared PCIe switch, not a rail"))
            kept = [p for p in kept if p not in [x for x, _ in out]]
        for p in list(kept):
            m = _ROLE_WORD.search(p.device)
            if not m:
                continue
            others = [q for q in kept if q is not p]
            if all(any(g in q.local_gpus for q in others) for g in p.local_gpus):
                out.append((p, f"its name says '{m.group(1)}' (a storage or management role) and the GPUs near it "
                               "have another PIX/PXB device"))
                kept.remove(p)
        return kept, out

    def _select(self) -> Selection:
        """The compute ports, stage by stage: each stage drops ports with the reason, or doubts
        the choice, into `said`."""
        visible, hidden = self.rdma_visible()
        if not visible:
            return Selection([], [], [], [], False, hidden)
        said = _Verdicts()
        self._doubt_the_front_end(said)
        candidates, front = self._usable_ports(said)
        candidates = self._one_port_per_link(candidates, said)
        candidates, converged = self._fall_back_to_converged(candidates, front, said)
        if not candidates:
            self._doubt_unusable_local_ports([], said)
            return Selection([], said.excluded, said.doubts, said.notes, True)
        pool, locality = self._prefer_gpu_local(candidates, said)
        pool = self._keep_one_fabric(pool, said)
        pool = self._drop_slow_ports(pool, said)
        pool = self._drop_management_subnet_ports(pool, said)
        pool = self._drop_roce_ports_without_address(pool, said)
        self._doubt_unusable_local_ports(pool, said)
        if locality and len(self.gpus) > 1:
            self._doubt_uneven_rails(pool, said)
        chosen = sorted(pool, key=lambda p: (natural_key(p.device), p.port))
        converged = [(p, why) for p, why in converged if p in chosen]
        return Selection(chosen, said.excluded, said.doubts, said.notes, True, locality_used=locality,
                         converged=converged)

    def _doubt_the_front_end(self, said: _Verdicts) -> None:
        """The front end's own doubts count where its choice touches an RDMA port."""
        routed = set((self.f.get("net") or {}).get("default_route_interfaces") or [])
        if any(p.netdev in routed for p in self.ports()):
            for text in self.front.doubts:
                said.doubt(text, subject="front end")
            said.notes.extend(self.front.notes)

    def _usable_ports(self, said: _Verdicts) -> Tuple[List[Port], List[Tuple[Port, str]]]:
        """ACTIVE IB/RoCE ports: (candidates, front-end ports with the reason they are)."""
        candidates: List[Port] = []
        front: List[Tuple[Port, str]] = []
        for p in self.ports():
            if p.link_layer not in VERBS_LINK_LAYERS:
                said.excluded.append((p, f"link layer {p.link_layer or 'unknown'}: not an InfiniBand/RoCE "
                                         "port NCCL's verbs transport can use"))
                continue
            if p.state != "ACTIVE":
                said.excluded.append((p, f"port state {p.state or 'unknown'}: NCCL only uses ACTIVE ports"))
                continue
            why = self.frontend_reason(p)
            if why:
                front.append((p, why))
                continue
            candidates.append(p)
        return candidates, front

    def _fall_back_to_converged(self, candidates: List[Port], front: List[Tuple[Port, str]],
                                said: _Verdicts) -> Tuple[List[Port], List[Tuple[Port, str]]]:
        """(candidates, converged front-end ports). NCCL's IB transport takes every ACTIVE IB/RoCE
        port (net_ib.cc ncclIbInit): with no other port usable, the front-end port is its fabric
        (a converged port); otherwise the front-end ports are left out."""
        if not candidates and front:
            return self._one_port_per_link([p for p, _ in front], said), front
        said.excluded.extend(front)
        return candidates, []

    def _prefer_gpu_local(self, candidates: List[Port], said: _Verdicts) -> Tuple[List[Port], bool]:
        """(pool, locality used): the ports PIX/PXB to a GPU where there are any, else all."""
        local = [p for p in candidates if p.gpu_local]
        if local:
            for p in candidates:
                if not p.gpu_local:
                    said.excluded.append((p, f"no GPU at PIX/PXB (nearest GPU path {p.best_path or 'unknown'}) "
                                             "while GPU-local ports exist: storage or front-end NIC"))
            return local, True
        if self.gpus:
            said.notes.append("no RDMA port is PIX/PXB to a GPU in the PCI tree this host shows: without a "
                              "topology file placing them together, NCCL will not use GPUDirect RDMA at its "
                              "default level; every active port is offered")
        return candidates, False

    def _keep_one_fabric(self, pool: List[Port], said: _Verdicts) -> List[Port]:
        """One fabric: the dominant link layer (ties: the faster)."""
        layers: Dict[str, int] = {}
        for p in pool:
            layers[p.link_layer or ""] = layers.get(p.link_layer or "", 0) + 1
        if len(layers) <= 1:
            return pool
        ranked = sorted(layers.items(), key=lambda kv: (-kv[1], -self._max_rate(pool, kv[0]), kv[0]))
        keep = ranked[0][0]
        if ranked[0][1] == ranked[1][1]:
            said.doubt(f"as many {ranked[0][0]} as {ranked[1][0]} ports: kept {keep} "
                       "(the faster); check which fabric is the compute one")
        for p in pool:
            if p.link_layer != keep:
                said.excluded.append((p, f"link layer {p.link_layer} differs from the other compute ports "
                                         f"({keep}): a separate fabric (storage?)"))
        return [p for p in pool if p.link_layer == keep]

    @staticmethod
    def _drop_slow_ports(pool: List[Port], said: _Verdicts) -> List[Port]:
        """A port at most half as fast as the fastest is not part of the compute rails."""
        rates = [p.rate_gbps for p in pool if p.rate_gbps]
        top = max(rates) if rates else None
        if not top:
            return pool
        kept = []
        for p in pool:
            if p.rate_gbps and p.rate_gbps * 2 <= top:
                said.excluded.append((p, f"rate {_g(p.rate_gbps)} Gb/s is at most half the compute ports' "
                                         f"{_g(top)} Gb/s"))
                continue
            if p.rate_gbps and p.rate_gbps < top:
                said.doubt(f"{p.name} runs at {_g(p.rate_gbps)} Gb/s, the others at {_g(top)} Gb/s",
                           check_id="rail-slower", subject=p.name)
            kept.append(p)
        return kept

    def _drop_management_subnet_ports(self, pool: List[Port], said: _Verdicts) -> List[Port]:
        """A port with an address on the management subnet is not a compute rail (unless all are)."""
        on_mgmt = [(p, self.mgmt_subnet_reason(p)) for p in pool]
        flagged = [(p, why) for p, why in on_mgmt if why]
        if flagged and len(flagged) < len(pool):
            said.excluded.extend(flagged)
            return [p for p, why in on_mgmt if not why]
        if flagged:
            said.doubt("every compute port has an address on the management subnet: "
                       "the compute and front-end networks are not separated")
        return pool

    @staticmethod
    def _drop_roce_ports_without_address(pool: List[Port], said: _Verdicts) -> List[Port]:
        """RoCE needs an IP address on the port for a routable (v2) GID."""
        roce = [p for p in pool if p.is_roce]
        with_gid = [p for p in roce if p.has_routable_gid]
        if with_gid and len(with_gid) < len(roce):
            for p in roce:
                if not p.has_routable_gid:
                    said.excluded.append((p, f"no IPv4/IPv6 RoCE v2 GID (no address on {p.netdev or 'its netdev'}) "
                                             "while the other ports have one"))
            return [p for p in pool if not p.is_roce or p.has_routable_gid]
        if roce and not with_gid:
            said.doubt("no chosen RoCE port has an IP address: RoCE v2 cannot be routed "
                       "(NCCL would fall back to a link-local GID)")
        return pool

    def _doubt_uneven_rails(self, pool: List[Port], said: _Verdicts) -> None:
        """Every GPU should see as many local compute ports as the others, and at least one."""
        counts: Dict[int, int] = {}
        for p in pool:
            for g in p.local_gpus:
                counts[g] = counts.get(g, 0) + 1
        values = sorted(set(counts.values()))
        if len(values) > 1:
            odd = sorted(g for g, c in counts.items() if c == values[-1])
            said.doubt(
                "GPUs do not all see the same number of local compute ports (" +
                ", ".join(f"GPU{g}: {c}" for g, c in sorted(counts.items())) +
                f"): a storage port beside GPU{odd[0]}? check addresses and ibdev2netdev")
        explained = {g for d in said.doubts if d.check_id == "rail-port-unusable" for g in _gpus_in(d.subject, self)}
        missing = sorted(int(g["index"]) for g in self.gpus
                         if int(g["index"]) not in counts and int(g["index"]) not in explained)
        if missing and counts:
            gpus = ", ".join(f"GPU{g}" for g in missing)
            said.doubt("no GPU-local compute port for " + gpus, check_id="gpu-without-rail", subject=gpus)

    def _doubt_unusable_local_ports(self, pool: List[Port], said: _Verdicts) -> None:
        """A port at PIX/PXB to a GPU that is left out for being down or unaddressed: an error
        when that GPU has no other rail of its own (the rail is there and broken), else a doubt
        (a spare port of a dual-port NIC, say)."""
        covered = {g for p in pool for g in p.local_gpus}
        for p, why in list(said.excluded):
            if not p.gpu_local or p.function == "software":
                continue
            down = p.state != "ACTIVE"
            unaddressed = p.is_roce and not p.has_routable_gid and not down
            if not (down or unaddressed) or p.link_layer not in VERBS_LINK_LAYERS:
                continue
            alone = [g for g in p.local_gpus if g not in covered]
            what = (f"{p.state or 'not ACTIVE'}" if down else
                    f"without an IPv4/IPv6 RoCE v2 GID (no address on {p.netdev or 'its netdev'})")
            if alone:
                gpus = ", ".join(f"GPU{g}" for g in alone)
                said.doubt(f"{p.name} is GPU-local ({p.best_path}) to {gpus} but {what}, and {gpus} has no "
                           "other rail: its traffic crosses to another GPU's NIC", check_id="rail-port-unusable",
                           subject=p.name, severity="error")
            elif down:
                said.doubt(f"{p.name} is GPU-local ({p.best_path}) but {p.state or 'not ACTIVE'}: "
                           "a compute port that is down?", subject=p.name)

    @staticmethod
    def _one_port_per_link(candidates: List[Port], said: _Verdicts) -> List[Port]:
        """Software RDMA devices only where no hardware port is usable; a sub-function only
        where its PCI function's own port is not (both ride one physical link)."""
        hardware = [p for p in candidates if p.function != "software"]
        kept = []
        for p in candidates:
            if p.function == "software" and hardware:
                said.excluded.append((p, f"software RDMA device on {p.netdev or 'a netdev'} (e.g. rdma_rxe): "
                                         "a stand-in, not used while hardware RDMA ports are present"))
                continue
            if p.function == "auxiliary":
                parent = next((h for h in hardware if h.function == "pci" and h.pci == p.pci), None)
                if parent is not None:
                    said.excluded.append((p, f"sub-function {p.auxiliary or ''} of {parent.name}'s PCI function "
                                             f"{p.pci}: both ride one physical port, so NCCL would split "
                                             "one link between them"))
                    continue
            kept.append(p)
        if kept and all(p.function == "software" for p in kept):
            said.notes.append("only software RDMA devices (Soft-RoCE/siw): NCCL's IB transport runs over "
                              "them, which exercises the RDMA path but not a NIC's speed, and never GPUDirect")
        return kept

    @staticmethod
    def _max_rate(pool: List[Port], layer: str) -> float:
        return max([p.rate_gbps or 0 for p in pool if (p.link_layer or "") == layer] or [0])

    # --- sockets --------------------------------------------------------------------------------
    def socket_interface(self) -> Tuple[Optional[dict], str, List[str]]:
        """The IP interface for NCCL's sockets, Gloo and MPI's TCP: (interface, why, doubts).

        With compute RDMA (or a cloud plugin) the default-route interface, which every node
        reaches; without RDMA the fastest routable one, since sockets then carry the data."""
        cands = self.socket_candidates()
        doubts: List[str] = []
        if not cands:
            net_status = (self.f.get("sources") or {}).get("net") or {}
            if not net_status.get("ok", True):
                return None, f"network interfaces not read ({net_status.get('reason')})", doubts
            if not (self.f.get("net") or {}).get("addresses_known", True):
                return None, ("interface addresses are unknown (no 'ip -j addr show' output, no "
                              "/proc/net/fib_trie) and no interface has a connected route"), doubts
            return None, "no routable, up interface", doubts
        defaults = [c for c in cands if self.is_default_route(c["name"])]
        sel = self.selection()
        rdma = bool(sel.chosen) or not sel.rdma_visible  # hidden RDMA: still not a socket-data host
        cloud = self.plugin_cloud()
        if rdma or cloud:
            if defaults:
                pick = defaults[0]
                if len(defaults) > 1:
                    doubts.append("several interfaces carry a default route (" +
                                  ", ".join(c["name"] for c in defaults) + f"); took {pick['name']}")
                return pick, "carries the default route: the network every node reaches", doubts
            compute_netdevs = {p.netdev for p in self.selection().chosen}
            others = [c for c in cands if c["name"] not in compute_netdevs] or cands
            doubts.append(f"no front-end interface known ({self.front.why}); took the first routable "
                          "one that is not a compute port")
            return others[0], f"first routable interface ({self.front.why})", doubts
        fastest = max(c.get("speed_mbps") or 0 for c in cands)
        top = [c for c in cands if (c.get("speed_mbps") or 0) == fastest]
        top.sort(key=lambda c: (not self.is_default_route(c["name"]), c["name"]))
        pick = top[0]
        if not self.is_default_route(pick["name"]) and defaults:
            doubts.append(f"{pick['name']} is the fastest interface but {defaults[0]['name']} carries the "
                          "default route: make sure the nodes reach each other on "
                          f"{pick['name']}")
        speed = pick.get("speed_mbps")
        why = (f"fastest routable interface ({speed // 1000 if speed else '?'} Gb/s): "
               "the socket transport carries the data on this host")
        return pick, why, doubts

    # --- per GPU ------------------------------------------------------------------------------
    def compute_ports_of_gpu(self, gpu: dict) -> List[Port]:
        """The chosen ports nearest to this GPU (best path among the chosen ports)."""
        chosen = self.selection().chosen
        paths = self.gpu_paths()
        idx = int(gpu["index"])
        ranked = [(path_rank(paths.get(p.device, {}).get(idx)), p) for p in chosen]
        known = [(r, p) for r, p in ranked if r < len(PATH_ORDER)]
        if not known:
            return []
        best = min(r for r, _ in known)
        return [p for r, p in known if r == best]


def _gpus_in(port_name: str, view: "HostView") -> List[int]:
    return next((p.local_gpus for p in view.ports() if p.name == port_name), [])


def _g(x: float) -> str:
    return f"{x:g}"


def _network(addr: dict) -> Any:
    try:
        plen = addr.get("prefixlen")
        if plen is None:
            plen = 32 if addr.get("family") == "inet" else 128
        return ipaddress.ip_network(f"{addr['address']}/{plen}", strict=False)
    except (ValueError, KeyError, TypeError):
        return None


def _routable(addr: dict) -> bool:
    try:
        ip = ipaddress.ip_address(addr["address"])
    except (ValueError, KeyError):
        return False
    return not (ip.is_loopback or ip.is_link_local)


def nccl_evidence_text(ev: Dict[str, Any]) -> str:
    """One line for HostView.nccl_evidence(): `NCCL 2.19.3 at PATH (wheel nvidia-nccl-cu12
    2.19.3, from its wheel's METADATA), the lowest of the 3 libraries found`."""
    basis, n = ev.get("basis"), ev.get("libraries_found") or 0
    if basis == "declared":
        return f"NCCL {ev.get('version')} as declared by {ev.get('declared_by') or '--nccl-version'}"
    if ev.get("version") is None:
        return "NCCL release unknown: " + ("no NCCL library found" if basis == "none" else
                                           "a library's version could not be read")
    how = {"file-name": "from its file name", "wheel-metadata": "from its wheel's METADATA",
           "library-string": "from the 'NCCL version' string inside it"}.get(ev.get("how") or "")
    what = ", ".join(x for x in (ev.get("package") and f"wheel {ev['package']}", how) if x)
    where = f" at {ev['library']}" if ev.get("library") else ""
    why = {"lowest": f", the lowest of the {n} libraries found",
           "single": f", the only release among the {n} libraries found" if n > 1 else "",
           "other-user": ", in a place another user controls (no other library found)"}.get(basis or "", "")
    return f"NCCL {ev['version']}{where}" + (f" ({what})" if what else "") + why
