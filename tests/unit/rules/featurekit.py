"""Build Features documents (docs/features.md) for rule tests, one host at a time.

    f = (Host()
         .iface("eth0", "10.0.0.5/24", default=True)
         .gpu(0, numa=0)
         .rdma("mlx5_0", netdev="ens1f0np0", ipv4="192.168.1.5/24", paths={0: "PIX"})
         .build())

Everything not said is what a plain, healthy host would show: ACTIVE RoCE v2 ports at 400 Gb/s
with the usual GID table (0 fe80 v1, 1 fe80 v2, 2 IPv4 v1, 3 IPv4 v2), GPUs SYS to NICs unless a
path is given, nvidia-peermem loaded, NCCL 2.23.4; nothing declared by the owner (/etc/nccl.conf),
no recorded NIC QoS state, no GPU driver version file.
"""

from __future__ import annotations

import copy
import ipaddress
from typing import Dict, List, Optional, Sequence

PATH_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")


def addr(cidr: str) -> dict:
    iface = ipaddress.ip_interface(cidr)
    return {"family": "inet" if iface.version == 4 else "inet6", "address": str(iface.ip),
            "prefixlen": iface.network.prefixlen}


def gid(index: int, gid_text: str, type_: Optional[str] = "RoCE v2", ndev: Optional[str] = None) -> dict:
    g = ipaddress.IPv6Address(gid_text)
    v4 = g.ipv4_mapped
    return {"index": index, "gid": str(g), "type": type_, "ndev": ndev,
            "ipv4": str(v4) if v4 is not None else None,
            "ipv6": str(g) if v4 is None and not g.is_link_local else None}


def roce_table(ndev: Optional[str], ipv4s: Sequence[str] = (), ipv6s: Sequence[str] = (),
               start: int = 0) -> List[dict]:
    """GIDs the way mlx5 lays them out: link-local v1/v2, then v1/v2 per address."""
    out = [gid(start, "fe80::1", "IB/RoCE v1", ndev), gid(start + 1, "fe80::1", "RoCE v2", ndev)]
    i = start + 2
    for a in ipv4s:
        ip = str(ipaddress.ip_interface(a).ip)
        out += [gid(i, f"::ffff:{ip}", "IB/RoCE v1", ndev), gid(i + 1, f"::ffff:{ip}", "RoCE v2", ndev)]
        i += 2
    for a in ipv6s:
        ip = str(ipaddress.ip_interface(a).ip)
        out += [gid(i, ip, "IB/RoCE v1", ndev), gid(i + 1, ip, "RoCE v2", ndev)]
        i += 2
    return out


class Host:
    def __init__(self, hostname: str = "gpu-node-1", nccl: Optional[str] = "2.23.4"):
        self.hostname = hostname
        self.nccl = nccl
        self.ifaces: Dict[str, dict] = {}
        self.gpus: List[dict] = []
        self.devices: Dict[str, dict] = {}
        self.paths: Dict[str, Dict[int, str]] = {}
        self.pci: Dict[str, dict] = {}
        self.peer = {"nv_mem": False, "nv_mem_nc": False, "nvidia_peermem": True}
        self.modules = {"ib_uverbs": True, "mlx5_ib": True, "nvidia_peermem": True, "nv_peer_mem": False}
        self.virt = {"hypervisor": None, "flattened": False, "reasons": []}
        self.numa = [{"id": 0, "cpulist": "0-31"}, {"id": 1, "cpulist": "32-63"}]
        # Sapphire Rapids as /proc/cpuinfo shows it (family 6, model 143)
        self.cpu: Optional[dict] = {"arch": "x86_64", "arch_from": "/proc/cpuinfo",
                                    "vendor_id": "GenuineIntel", "family": 6, "model": 143}
        self.rdma_ok = True
        self.matrix_nics: List[str] = []
        self._next_bus = 0x10
        self.kernel_release = "6.8.0-45-generic"
        self.nvidia_driver: Optional[dict] = None
        self.libibverbs: Optional[dict] = None
        self.sysctl: Dict[str, str] = {}
        self.declared_files: List[dict] = []
        self.topology_files: List[dict] = []
        self.qos: Dict[str, dict] = {}
        self.routes: Optional[List[dict]] = None  # None: the Features carry no routing table
        self.stack_limit: Optional[str] = "8388608"
        self.gpu_name = "NVIDIA H100 80GB HBM3"
        self.default_routes: Optional[List[dict]] = None  # None: Features without net.default_routes

    # --- pieces -----------------------------------------------------------------------------
    def _bdf(self) -> str:
        self._next_bus += 1
        return f"0000:{self._next_bus:02x}:00.0"

    def iface(self, name: str, *addrs: str, default: bool = False, kind: str = "physical",
              speed_gbps: Optional[float] = None, master: Optional[str] = None,
              slaves: Sequence[str] = (), driver: Optional[str] = "mlx5_core", pci: Optional[str] = None,
              operstate: str = "up", mtu: int = 9000) -> "Host":
        self.ifaces[name] = {
            "name": name, "kind": kind, "operstate": operstate, "carrier": operstate == "up",
            "mtu": mtu, "speed_mbps": int(speed_gbps * 1000) if speed_gbps else None,
            "driver": driver if kind == "physical" else None, "pci": pci, "master": master,
            "slaves": sorted(slaves), "addresses": sorted((addr(a) for a in addrs),
                                                           key=lambda x: (x["family"], x["address"])),
            "default_route": default,
        }
        return self

    def default_route(self, iface: str, family: str = "inet", metric: int = 0) -> "Host":
        """A default route as the probe records it (net.default_routes); the interface is marked."""
        self.default_routes = (self.default_routes or []) + [
            {"interface": iface, "family": family, "metric": metric}]
        if iface in self.ifaces:
            self.ifaces[iface]["default_route"] = True
        return self

    def gpu(self, index: int, bdf: Optional[str] = None, numa: Optional[int] = 0,
            cpus: Optional[str] = None, link: Optional[dict] = None) -> "Host":
        bdf = bdf or self._bdf()
        self.gpus.append({"index": index, "bdf": bdf, "name": self.gpu_name, "numa_node": numa,
                          "cpu_affinity": cpus if cpus is not None else
                          next((n["cpulist"] for n in self.numa if n["id"] == numa), None),
                          "nvlink": {}, "nearest_nics": []})
        self.pci[bdf] = _pci(bdf, "gpu", "0x030200", "0x10de", numa, link)
        return self

    def rdma(self, name: str, port: int = 1, *, link_layer: str = "Ethernet", state: str = "ACTIVE",
             rate: Optional[float] = 400, netdev: Optional[str] = None, ipv4: Sequence[str] = (),
             ipv6: Sequence[str] = (), gids: Optional[List[dict]] = None, pci: Optional[str] = None,
             paths: Optional[Dict[int, str]] = None, make_iface: bool = True,
             vendor: str = "0x15b3", pci_class: str = "0x020000", numa: Optional[int] = 0) -> "Host":
        if isinstance(ipv4, str):
            ipv4 = (ipv4,)
        if isinstance(ipv6, str):
            ipv6 = (ipv6,)
        dev = self.devices.get(name)
        if dev is None:
            bdf = pci or self._bdf()
            dev = {"name": name, "node_type": "CA", "fw_ver": "28.39.1002", "board_id": "MT_0000000838",
                   "node_guid": "0000:0000:0000:0000", "hca_type": "MT4129", "pci": bdf, "ports": []}
            self.devices[name] = dev
            self.pci[bdf] = _pci(bdf, "nic", pci_class, vendor, numa, None)
        if link_layer == "Ethernet":
            table = gids if gids is not None else (roce_table(netdev, ipv4, ipv6) if netdev else [])
        else:
            table = gids if gids is not None else [gid(0, "fe80::2", "IB/RoCE v1", None)]
        dev["ports"].append({
            "port": port, "state": state, "phys_state": "LinkUp" if state == "ACTIVE" else "Disabled",
            "link_layer": link_layer, "rate": f"{rate:g} Gb/sec (4X)" if rate else None,
            "rate_gbps": rate, "netdev": netdev, "netdev_mtu": 9000 if netdev else None,
            "roce_mtu": 4096 if link_layer == "Ethernet" and netdev else None,
            "gids": table,
            "roce_v2_ipv4_gids": [g["index"] for g in table if g["type"] == "RoCE v2" and g["ipv4"]],
            "roce_v2_ipv6_gids": [g["index"] for g in table if g["type"] == "RoCE v2" and g["ipv6"]],
        })
        dev["ports"].sort(key=lambda p: p["port"])
        if netdev and make_iface and netdev not in self.ifaces:
            self.iface(netdev, *ipv4, *ipv6, speed_gbps=rate, pci=dev["pci"],
                       kind="physical" if link_layer == "Ethernet" else "infiniband")
        if paths is not None:
            self.paths[name] = dict(paths)
        return self

    def route(self, iface: str, cidr: str, gateway: Optional[str] = None) -> "Host":
        """A main-table IPv4 route (Features net.routes)."""
        net = ipaddress.ip_network(cidr, strict=False)
        self.routes = (self.routes or []) + [{"interface": iface, "dest": str(net.network_address),
                                              "prefixlen": net.prefixlen, "gateway": gateway}]
        return self

    def connected_routes(self) -> "Host":
        """The routes the kernel adds for every IPv4 address: its own subnet, on its interface."""
        for name, i in sorted(self.ifaces.items()):
            for a in i["addresses"]:
                if a["family"] == "inet":
                    self.route(name, f"{a['address']}/{a['prefixlen']}")
        return self

    def no_peermem(self) -> "Host":
        self.peer = {"nv_mem": False, "nv_mem_nc": False, "nvidia_peermem": False}
        self.modules["nvidia_peermem"] = False
        return self

    def legacy_peermem(self) -> "Host":
        self.peer = {"nv_mem": True, "nv_mem_nc": False, "nvidia_peermem": False}
        return self

    def open_driver(self, version: str = "570.124.06", rdma_core: Optional[int] = 50,
                    kernel: str = "6.8.0-1017-nvidia", open_module: bool = True) -> "Host":
        """The GPU driver as /proc/driver/nvidia/version shows it, with rdma-core and kernel."""
        self.nvidia_driver = {"version": version, "open": open_module}
        self.libibverbs = None if rdma_core is None else {
            "rdma_core": rdma_core, "path": f"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.{rdma_core}.0"}
        self.kernel_release = kernel
        return self

    def declare(self, path: str = "/etc/nccl.conf", kind: str = "nccl-conf", **values: str) -> "Host":
        """A file the owner ships (the probe's `declared` source)."""
        self.declared_files.append({"path": path, "kind": kind, "values": dict(sorted(values.items())),
                                    "ignored": None})
        return self

    def nic_qos(self, netdev: str, trust: str = "dscp", pfc: Sequence[int] = (3,),
                dscp_prio: Optional[Dict[int, int]] = None, tool: str = "mlnx_qos") -> "Host":
        """Recorded NIC QoS state; the map defaults to mlx5's DSCP >> 3."""
        table = dscp_prio if dscp_prio is not None else {d: d >> 3 for d in range(64)}
        self.qos[netdev] = {"tool": tool, "trust": trust, "pfc_enabled": sorted(pfc),
                            "dscp_prio": {str(d): p for d, p in sorted(table.items())}}
        return self

    def flattened(self, *reasons: str, hypervisor: Optional[str] = "KVM") -> "Host":
        self.virt = {"hypervisor": hypervisor, "flattened": True,
                     "reasons": list(reasons) or ["every GPU-NIC path is SYS on a single NUMA node"]}
        return self

    def rdma_hidden(self, *legend: str) -> "Host":
        """The container case: nvidia-smi shows NICs, /sys/class/infiniband shows none."""
        self.matrix_nics = list(legend)
        return self

    def rdma_failed(self) -> "Host":
        self.rdma_ok = False
        return self

    # --- the document ------------------------------------------------------------------------
    def build(self) -> dict:
        gpus = copy.deepcopy(sorted(self.gpus, key=lambda g: g["index"]))
        pairs = []
        for g in gpus:
            ranked = []
            for name in sorted(self.devices):
                path = self.paths.get(name, {}).get(g["index"], "SYS")
                pairs.append({"gpu": g["index"], "nic": name, "path": path, "sysfs": path,
                              "nvidia_smi": path})
                ranked.append((PATH_ORDER.index(path), name))
            if ranked:
                best = min(r for r, _ in ranked)
                for r, name in sorted(ranked):
                    if r != best:
                        continue
                    for p in self.devices[name]["ports"]:
                        g["nearest_nics"].append({"device": name, "port": p["port"], "path": PATH_ORDER[best],
                                                  "netdev": p["netdev"], "link_layer": p["link_layer"],
                                                  "state": p["state"]})
        defaults = sorted(n for n, i in self.ifaces.items() if i["default_route"])
        for r in self.default_routes or []:
            if r["interface"] in self.ifaces:
                self.ifaces[r["interface"]]["default_route"] = True
        if self.default_routes is not None:
            defaults = sorted(set(defaults) | {r["interface"] for r in self.default_routes})
        matrix = None
        if self.matrix_nics:
            matrix = {"gpus": [{"index": g["index"], "cpu_affinity": g["cpu_affinity"],
                                "numa_affinity": str(g["numa_node"])} for g in gpus],
                      "nics": [{"index": i, "name": n} for i, n in enumerate(self.matrix_nics)],
                      "links": {}}
        return {
            "schema_version": 1,
            "tool": {"name": "rocetune", "version": "0.1.0"},
            "host": {"hostname": self.hostname, "kernel_release": self.kernel_release,
                     "cpu_vendor": "GenuineIntel", "cpu_model": "Intel(R) Xeon(R) Platinum 8480C",
                     "logical_cpus": 64, "numa_nodes": copy.deepcopy(self.numa),
                     **({"cpu": dict(self.cpu)} if self.cpu is not None else {}),
                     "virtualization": copy.deepcopy(self.virt)},
            "sources": {s: {"ok": True, "reason": None, "warnings": []}
                        for s in ("pci", "net", "rdma", "verbs", "gpu", "kernel")}
            if self.rdma_ok else
            {**{s: {"ok": True, "reason": None, "warnings": []} for s in ("pci", "net", "verbs", "gpu", "kernel")},
             "rdma": {"ok": False, "reason": "PermissionError: /sys/class/infiniband", "warnings": []}},
            "pci": {"devices": [self.pci[b] for b in sorted(self.pci)]},
            "net": {"interfaces": [copy.deepcopy(self.ifaces[n]) for n in sorted(self.ifaces)],
                    "default_route_interfaces": defaults,
                    **({"routes": sorted(copy.deepcopy(self.routes), key=lambda r: (r["interface"], r["dest"]))}
                       if self.routes is not None else {}),
                    **({} if self.default_routes is None else {"default_routes": sorted(
                        self.default_routes, key=lambda r: (r["family"], r["metric"], r["interface"]))})},
            "rdma": {"devices": [copy.deepcopy(self.devices[n]) for n in sorted(self.devices)]},
            "verbs": {"via": None, "devices": [], "disagreements": []},
            "gpu": {"matrix": matrix, "bus_ids": {str(g["index"]): g["bdf"] for g in gpus},
                    "names": {str(g["index"]): g["name"] for g in gpus}},
            "gpus": gpus,
            "topology": {"gpu_nic": pairs, "disagreements": []},
            "kernel": {"modules": dict(self.modules), "peer_memory": dict(self.peer), "memlock": "unlimited",
                       "stack_limit": self.stack_limit,
                       "cmdline": {"iommu": "pt", "intel_iommu": None, "amd_iommu": None, "acs": []},
                       "iommu_groups": 0, "sysctl": dict(self.sysctl),
                       "nvidia_driver": copy.deepcopy(self.nvidia_driver),
                       "libibverbs": copy.deepcopy(self.libibverbs),
                       "nccl": {"version": self.nccl, "path": f"/usr/lib/x86_64-linux-gnu/libnccl.so.{self.nccl}"}
                       if self.nccl else None},
            "declared": {"files": copy.deepcopy(self.declared_files),
                         "topology_files": copy.deepcopy(self.topology_files)},
            "qos": {"interfaces": copy.deepcopy(self.qos)},
        }


def _pci(bdf: str, kind: str, cls: str, vendor: str, numa: Optional[int], link: Optional[dict]) -> dict:
    return {"bdf": bdf, "kind": kind, "class": cls, "vendor": vendor, "device": "0x2330",
            "numa_node": numa, "root_complex": "pci0000:00", "parent": None, "switches": [],
            "driver": "nvidia" if kind == "gpu" else "mlx5_core",
            "link": link or {"speed": "32.0 GT/s PCIe", "width": 16, "max_speed": "32.0 GT/s PCIe",
                             "max_width": 16, "degraded": False},
            "sriov": None}


def rail_host(n: int = 8, *, nccl: Optional[str] = "2.23.4", frontend: bool = True) -> Host:
    """An HGX-style RoCE host: n GPUs, each with one 400G port at PIX (rail subnets 192.168.<i>.0/24),
    eth0 with the default route."""
    h = Host(nccl=nccl)
    if frontend:
        h.iface("eth0", "10.0.0.5/24", default=True, speed_gbps=25, driver="ixgbe")
    for i in range(n):
        numa = 0 if i < n // 2 else 1
        h.gpu(i, numa=numa)
        h.rdma(f"mlx5_{i}", netdev=f"ens{i}np0", ipv4=f"192.168.{i}.5/24", paths={i: "PIX"}, numa=numa)
    return h


def plan_of(features: dict, **kw):
    from rocetune.planner import build_plan

    return build_plan(features, **kw)
