"""socket-ifname: the IP interface for NCCL's bootstrap/socket traffic, Gloo and Open MPI's TCP.

Left alone, NCCL picks `ib*` interfaces first and then anything but docker/lo/virbr -- veth, CNI
and bridge interfaces included -- and Gloo and Open MPI have their own guesses. rocetune names
one interface:

* on a host with compute RDMA ports, the interface that carries the default route (the network
  every node reaches; NCCL's socket only carries bootstrap and the QP exchange there);
* on a host without usable RDMA, the fastest routable interface, since the socket transport
  carries the data (ties go to the default-route interface).

Values: `NCCL_SOCKET_IFNAME==eth0` -- the `=` makes it an exact name (NCCL matches prefixes, so
`eth0` would also take `eth0.100`; NCCL also ignores one-character values); `GLOO_SOCKET_IFNAME`
takes exact names (comma separated); `OMPI_MCA_btl_tcp_if_include` the same name for Open MPI's
TCP transport.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..plan import Decision

ID = "socket-ifname"


def choose(ctx) -> Tuple[Optional[dict], str, List[str]]:
    """(interface, why, doubts) -- shared with ucx-net-devices for hosts without RDMA."""
    host = ctx.host
    cands = host.socket_candidates()
    doubts: List[str] = []
    if not cands:
        return None, "no routable, up interface", doubts
    defaults = [c for c in cands if host.is_default_route(c["name"])]
    sel = host.selection()
    rdma = bool(sel.chosen) or not sel.rdma_visible  # hidden RDMA: still not a socket-data host
    cloud = host.plugin_cloud()
    if rdma or cloud:
        if defaults:
            pick = defaults[0]
            if len(defaults) > 1:
                doubts.append("several interfaces carry a default route (" +
                              ", ".join(c["name"] for c in defaults) + f"); took {pick['name']}")
            return pick, "carries the default route: the network every node reaches", doubts
        compute_netdevs = {p.netdev for p in host.selection().chosen}
        others = [c for c in cands if c["name"] not in compute_netdevs] or cands
        doubts.append("no interface carries a default route; took the first routable one")
        return others[0], "first routable interface (no default route on this host)", doubts
    fastest = max(c.get("speed_mbps") or 0 for c in cands)
    top = [c for c in cands if (c.get("speed_mbps") or 0) == fastest]
    top.sort(key=lambda c: (not host.is_default_route(c["name"]), c["name"]))
    pick = top[0]
    if not host.is_default_route(pick["name"]) and defaults:
        doubts.append(f"{pick['name']} is the fastest interface but {defaults[0]['name']} carries the "
                      "default route: make sure the nodes reach each other on "
                      f"{pick['name']}")
    speed = pick.get("speed_mbps")
    why = (f"fastest routable interface ({speed // 1000 if speed else '?'} Gb/s): "
           "the socket transport carries the data on this host")
    return pick, why, doubts


def rule(features: dict, ctx) -> List[Decision]:
    iface, why, doubts = choose(ctx)
    if iface is None:
        ctx.warn(f"no interface for NCCL's sockets: {why}; NCCL_SOCKET_IFNAME not set")
        return []
    for d in doubts:
        ctx.warn(f"uncertain socket interface: {d}")
    name = iface["name"]
    evidence = {"interface": name, "kind": iface.get("kind"), "speed_mbps": iface.get("speed_mbps"),
                "default_route": ctx.host.is_default_route(name),
                "addresses": [f"{a['address']}/{a.get('prefixlen')}" for a in iface.get("addresses", [])],
                "candidates": [c["name"] for c in ctx.host.socket_candidates()]}
    return [
        ctx.decision("NCCL_SOCKET_IFNAME", "=" + name,
                     f"{name} {why}; '=' makes the name exact (NCCL matches prefixes)", **evidence),
        ctx.decision("GLOO_SOCKET_IFNAME", name,
                     f"{name} for PyTorch's Gloo backend (exact names, comma separated)", **evidence),
        ctx.decision("OMPI_MCA_btl_tcp_if_include", name,
                     f"{name} for Open MPI's TCP transport", **evidence),
    ]
