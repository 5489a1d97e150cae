"""What NCCL does with a value, re-stated from its documented behaviour, to check rule output.

Not rocetune code: an independent statement of NCCL's semantics, so a test can say "NCCL, given
this value, uses exactly these ports" instead of comparing strings.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, List, Optional, Tuple


def hca_selects(value: str, ports: Iterable[Tuple[str, int]]) -> List[Tuple[str, int]]:
    """Ports NCCL_IB_HCA=value lets NCCL use: `[^][=]name[:port],...`, names prefix-matched
    unless '=' is given, an entry without a port covering every port."""
    v = value
    exclude = v.startswith("^")
    if exclude:
        v = v[1:]
    exact = v.startswith("=")
    if exact:
        v = v[1:]
    entries = []
    for e in v.split(","):
        if not e:
            continue
        name, _, port = e.partition(":")
        entries.append((name, int(port.split(":")[0]) if port and port.split(":")[0] else None))

    def hit(dev: str, port: int) -> bool:
        return any((dev == name if exact else dev.startswith(name)) and (p is None or p == port) for name, p in entries)

    return [(d, p) for d, p in ports if hit(d, p) != exclude]


def gid_autoselect(gids: List[dict], family: str = "AF_INET", addr_range: Optional[str] = None,
                   roce_version: int = 2) -> int:
    """NCCL >= 2.21.5 with NCCL_IB_GID_INDEX unset: the lowest-index valid GID of the wanted family
    (and range) whose RoCE version is the wanted one; index 0 when nothing qualifies."""
    want6 = family == "AF_INET6"
    net = ipaddress.ip_network(addr_range, strict=False) if addr_range and "/" in addr_range else None
    best = 0
    for g in sorted(gids, key=lambda g: g["index"]):
        ip = ipaddress.IPv6Address(g["gid"])
        is4 = ip.ipv4_mapped is not None
        if is4 == want6:
            continue
        if ip.is_link_local or ip.packed == bytes(16):
            continue
        addr = ip.ipv4_mapped if is4 else ip
        if net is not None and (addr.version != net.version or addr not in net):
            continue
        version = 2 if g.get("type") == "RoCE v2" else 1
        if version == roce_version:
            return g["index"]
    return best
