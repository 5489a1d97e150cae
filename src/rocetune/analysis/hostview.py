"""Shared, pure analysis of a Features document that several rules need.

The central question is which RDMA ports are the compute fabric (`HostView.selection`): the
answer feeds NCCL_IB_HCA, the GID choice, the traffic class, UCX_NET_DEVICES, the queue pairs
and the topology file, so it is computed once here and every rule reads the same answer. The
stages of that choice are analysis.port_selection; the port and the answer, analysis.ports.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..model.frontend import FrontEnd, front_end
from ..model.vocab import GPU_LOCAL, PATH_ORDER, natural_key, path_rank, some_of
from ..nccl.versions import parse_version
from .port_selection import select, select_names_only
from .ports import Port, Selection

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
                return key, str(spec["what"])
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
            return False, ("nvidia-smi lists NICs (" + some_of(sorted(legend, key=natural_key)) +
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
            self._selection = select_names_only(self) if names_only else select(self)
        return self._selection

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
