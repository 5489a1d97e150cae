"""Lint's checks of the names a setting gives against the target host: its RDMA devices and
ports, its interfaces, and the NCCL release its jobs load (HostNames, from a Features document)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..checks.binding import emits
from ..envfiles.parsed import Assignment
from ..nccl import releases
from ..nccl.syntax import ib_hca_selects, list_entries
from ..nccl.versions import parse_version


@dataclass
class HostNames:
    """RDMA devices with their ports and network interfaces of the target host, from its
    Features document (a saved `rocetune probe --json`, or a probe of --root). None: not known,
    so not checked."""

    ib: Optional[Dict[str, List[int]]] = None
    net: Optional[List[str]] = None
    nccl: Optional[Tuple[int, int, int]] = None  # the NCCL release the host's jobs load (kernel.nccl.version)
    qos: Optional[Dict[str, dict]] = None  # netdev -> the recorded QoS state of its RoCE port (mlnx_qos, dcb)
    # The ACTIVE RDMA ports that are not compute rails ("mlx5_2:1" -> why the plan leaves it out);
    # None when the rails are not known (no compute port chosen).
    non_rails: Optional[Dict[str, str]] = None

    @classmethod
    def from_features(cls, features: dict, check_rdma: bool = True, check_netdevs: bool = True) -> HostNames:
        sources = features.get("sources") or {}
        ib = net = None
        if check_rdma and (sources.get("rdma") or {}).get("ok", True) and features.get("rdma", {}).get("devices"):
            ib = {d["name"]: sorted(p["port"] for p in d.get("ports", [])) for d in features["rdma"]["devices"]}
        if check_netdevs and (sources.get("net") or {}).get("ok", True) and features.get("net", {}).get("interfaces"):
            net = sorted(i["name"] for i in features["net"]["interfaces"])
        lib = (features.get("kernel") or {}).get("nccl")
        nccl = parse_version(lib.get("version")) if isinstance(lib, dict) else None
        from ..analysis.nic_qos import roce_states

        return cls(ib, net, nccl, roce_states(features) or None,
                   _non_rails(features) if ib is not None else None)

    @property
    def empty(self) -> bool:
        return self.ib is None and self.net is None and self.nccl is None and self.qos is None

    @property
    def nccl_text(self) -> str:
        return ".".join(str(x) for x in self.nccl) if self.nccl else "of unknown release"


@emits("hca-rail-ids-ignored")
def check_host(host: HostNames, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key == "NCCL_IB_HCA" and host.nccl is not None:
        railed = [e for e in list_entries(v)[2] if e.count(":") >= 2]
        if railed and releases.gate("rail-ids-in-ib-hca", host.nccl) is False:
            add("hca-rail-ids-ignored", "info", a.line, key,
                f"{', '.join(railed[:3])}{' ...' if len(railed) > 3 else ''}: rail and plane ids after the port "
                f"are read from NCCL 2.30.7; NCCL {host.nccl_text}, the host's, skips them, so NCCL_CROSS_NIC=0 "
                "tells rails apart by asic and port alone (NVIDIA/nccl#2097)",
                "keep them for 2.30.7 and later, or upgrade NCCL")
    if key == "NCCL_IB_HCA" and host.ib is not None:
        _check_host_hca(host, a, key, v, add)
    elif key == "UCX_NET_DEVICES" and v.lower() != "all":
        _check_host_ucx(host, a, key, v, add)
    elif key in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include") \
            and host.net is not None:
        _check_host_ifnames(host, a, key, v, add)


def _non_rails(features: dict) -> Optional[Dict[str, str]]:
    """The ACTIVE ports the plan leaves out, with why; None without a compute port."""
    from ..analysis.hostview import HostView

    sel = HostView(features).selection()
    if not sel.chosen or sel.names_only:
        return None
    return {p.name: why for p, why in sel.excluded if p.port is not None and p.state in (None, "ACTIVE")}


@emits("hca-selects-non-rail")
def _check_non_rails(host, a: Assignment, key: str, v: str, add) -> None:
    """The ports NCCL_IB_HCA selects, as NCCL matches them, against the host's compute rails."""
    any_port = releases.gate("ib-hca-empty-port-any", host.nccl) is True
    selected = [name for name in (host.non_rails or {})
                if ib_hca_selects(v, name.split(":")[0], int(name.split(":")[1]), any_port)]
    if selected:
        add("hca-selects-non-rail", "error", a.line, key,
            f"NCCL_IB_HCA={v} selects {', '.join(selected)} on this host, not compute rails ("
            + "; ".join(f"{n}: {host.non_rails[n]}" for n in selected) + ")",
            "name the rails exactly ('=mlx5_0:1,...', what `rocetune env` writes)")


@emits("hca-not-found", "prefix-match", "hca-port-not-found")
def _check_host_hca(host, a: Assignment, key: str, v: str, add) -> None:
    """NCCL_IB_HCA's devices and ports against the host's RDMA devices."""
    _check_non_rails(host, a, key, v, add)
    excl, exact, entries = list_entries(v)
    names = sorted(host.ib)
    for e in entries:
        parts = e.split(":")
        dev = parts[0]
        port = parts[1] if len(parts) > 1 and parts[1] else None
        matches = [n for n in names if (n == dev if exact else n.startswith(dev))]
        sev = "warning" if excl else "error"
        if not matches:
            add("hca-not-found", sev, a.line, key,
                f"no RDMA device {'named' if exact else 'starting with'} {dev!r} on this host "
                f"(has {', '.join(names) or 'none'})", "use a device the host has ('rocetune topo' lists them)")
            continue
        if not exact and len(matches) > 1 and dev in matches:
            extra = [m for m in matches if m != dev]
            add("prefix-match", "warning", a.line, key,
                f"{dev!r} also selects {', '.join(extra)} on this host", f"write ={v.lstrip('^=')}")
        if port is not None and port.isdigit():
            for m in matches:
                if int(port) not in host.ib[m]:
                    add("hca-port-not-found", sev, a.line, key,
                        f"{m} has no port {port} (ports {host.ib[m]})", "fix the port number")
        elif len(parts) > 1 and not parts[1] and releases.gate("ib-hca-empty-port-any", host.nccl) is not True:
            # before 2.30.7 an empty port is atoi("") = 0, which no port has (release table ib-hca-empty-port-any)
            known = host.nccl is not None
            add("hca-port-not-found", sev if known else "warning", a.line, key,
                f"{e!r} has an empty port: NCCL {host.nccl_text} reads it as port 0, which no port has, and "
                f"leaves {dev} out" + ("" if known else " (from 2.30.7 it means any port)"),
                f"write the port ({dev}:{host.ib[matches[0]][0] if host.ib[matches[0]] else 1}"
                f"{':' + ':'.join(parts[2:]) if len(parts) > 2 else ''}), or use NCCL 2.30.7 or later")


@emits("ucx-port-missing", "ucx-device-not-found", "ifname-not-found")
def _check_host_ucx(host, a: Assignment, key: str, v: str, add) -> None:
    """UCX_NET_DEVICES's device:port entries and interfaces against the host."""
    for e in [x for x in v.split(",") if x]:
        dev, _, port = e.partition(":")
        if not port and host.ib is not None and dev in host.ib:
            add("ucx-port-missing", "error", a.line, key,
                f"UCX_NET_DEVICES names the RDMA device {dev!r} without its port: UCX lists RDMA "
                f"devices as device:port, so {dev!r} selects nothing",
                f"write {', '.join(f'{dev}:{p}' for p in host.ib[dev]) or dev + ':1'}")
        elif host.ib is not None and port:
            if dev not in host.ib:
                add("ucx-device-not-found", "error", a.line, key,
                    f"UCX_NET_DEVICES names {dev!r}, not an RDMA device here "
                    f"(has {', '.join(sorted(host.ib)) or 'none'})",
                    "use device:port of a device the host has")
            elif port.isdigit() and int(port) not in host.ib[dev]:
                add("ucx-device-not-found", "error", a.line, key, f"{dev} has no port {port}", "fix the port")
        elif not port and host.net is not None and dev not in host.net:
            add("ifname-not-found", "error", a.line, key, f"no interface {dev!r} on this host",
                f"use one of {_few(host.net)}")


@emits("ifname-not-found")
def _check_host_ifnames(host, a: Assignment, key: str, v: str, add) -> None:
    """Socket interface lists (NCCL, Gloo, Open MPI's TCP BTL) against the host's interfaces."""
    excl, exact, entries = list_entries(v) if key == "NCCL_SOCKET_IFNAME" else (False, True, v.split(","))
    if excl:
        return
    for e in [x.split(":")[0] for x in entries if x]:
        ok = e in host.net if exact else any(n.startswith(e) for n in host.net)
        if not ok:
            add("ifname-not-found", "error", a.line, key,
                f"no interface {'named' if exact else 'starting with'} {e!r} on this host",
                f"use one of {_few(host.net)}")


def _few(names: List[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" ... ({len(names)} in all)" if len(names) > n else "")
