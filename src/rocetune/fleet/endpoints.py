"""What `validate` tests on a host, read from its probe: the RDMA ports the plan's env hands NCCL
(device, port, the GID index NCCL uses, the probed rate, the netdev) and the interfaces of its
socket path (NCCL_SOCKET_IFNAME), each with the IPv4 address a peer reaches it by.

The ports are the ones the plan's NCCL_IB_HCA names (HostView's selection, filtered by NCCL's own
list syntax), in natural order: the i-th port of two hosts is their rail i.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from ..model.vocab import natural_key
from ..nccl.releases import empty_port_any
from ..nccl.syntax import ib_hca_selects, ifname_selects, strtoll
from .results import HostResult


@dataclass(frozen=True)
class RdmaPort:
    device: str
    port: int
    gid_index: Optional[int]  # None on InfiniBand (no GID index to pass)
    rate_gbps: Optional[float]
    netdev: Optional[str]
    ipv4: Optional[str]  # the address of the GID the env uses (RoCE)
    roce: bool

    @property
    def name(self) -> str:
        return f"{self.device}:{self.port}"


@dataclass(frozen=True)
class SocketIf:
    ifname: str
    ipv4: Optional[str]
    speed_gbps: Optional[float]


@dataclass
class HostEndpoints:
    host: str
    rdma: List[RdmaPort] = field(default_factory=list)
    socket: List[SocketIf] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def endpoints(result: HostResult) -> HostEndpoints:
    from ..analysis.hostview import HostView

    out = HostEndpoints(result.host)
    features = result.features or {}
    env = result.plan_env or {}
    hca = env.get("NCCL_IB_HCA")
    pinned = _pinned_gid(env.get("NCCL_IB_GID_INDEX"), out)
    any_port = empty_port_any(features)
    chosen = [p for p in HostView(features).selection().chosen if p.port is not None
              and (hca is None or ib_hca_selects(hca, p.device, p.port, any_port))]
    for p in sorted(chosen, key=lambda p: natural_key(p.name)):
        assert p.port is not None  # chosen above
        gid: Optional[int] = pinned
        if gid is None and p.is_roce and (p.v4_gids or p.v6_gids):
            gid = (p.v4_gids or p.v6_gids)[0]
        ipv4 = next((g.get("ipv4") for g in p.gids if g.get("index") == gid), None) if gid is not None else None
        if p.is_roce and gid is None:
            out.notes.append(f"{p.name}: no RoCE v2 GID to test with (no address on {p.netdev or 'its netdev'})")
        out.rdma.append(RdmaPort(p.device, p.port, gid if p.is_roce else None, p.rate_gbps, p.netdev, ipv4,
                                 p.is_roce))
    out.socket = _socket_ifs(features, env.get("NCCL_SOCKET_IFNAME"))
    if not out.socket:
        out.notes.append("no socket interface with an IPv4 address matches NCCL_SOCKET_IFNAME"
                         if env.get("NCCL_SOCKET_IFNAME") else "the plan names no NCCL_SOCKET_IFNAME")
    return out


def _pinned_gid(value: Optional[str], out: HostEndpoints) -> Optional[int]:
    if value is None:
        return None
    number, whole = strtoll(value)
    if not whole or number < 0:
        out.notes.append(f"NCCL_IB_GID_INDEX={value!r} is not a GID index; each port's own RoCE v2 GID is used")
        return None
    return number


def _socket_ifs(features: dict, ifname_list: Optional[str]) -> List[SocketIf]:
    if not ifname_list:
        return []
    found = []
    for iface in (features.get("net") or {}).get("interfaces") or []:
        name = iface.get("name") or ""
        if not name or not ifname_selects(ifname_list, name):
            continue
        v4 = next((a.get("address") for a in iface.get("addresses") or [] if a.get("family") == "inet"), None)
        speed = iface.get("speed_mbps")
        found.append(SocketIf(name, v4, speed / 1000 if isinstance(speed, (int, float)) and speed > 0 else None))
    return sorted((s for s in found if s.ipv4), key=lambda s: natural_key(s.ifname))
