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
TCP transport between ranks and `OMPI_MCA_oob_tcp_if_include` for its out-of-band channel (mpirun
and its daemons wire the job up over it before any rank runs; left alone it also tries docker,
CNI and storage interfaces and can hang at launch).
"""

from __future__ import annotations

from typing import List

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision

ID = "socket-ifname"


declare(
    id="socket-ifname-uncertain", kind="rule", severity="warning",
    by=("socket-ifname",),
    title="NCCL's socket interface is uncertain or unknown",
    checks="Whether one interface is plainly the network every node reaches (the default route's).",
    reads="The interfaces, their addresses and the default routes (the Features `net`).",
    why="NCCL's bootstrap and Gloo's rendezvous need an interface every node reaches; a wrong "
        "one hangs the job at start.",
    fix="set it with --set NCCL_SOCKET_IFNAME=IF (and GLOO_SOCKET_IFNAME)",
    source="NCCL user guide, NCCL_SOCKET_IFNAME; NVIDIA/nccl src/misc/socket.cc (interface choice)",
)


@emits("socket-ifname-uncertain")
def rule(features: dict, ctx) -> List[Decision]:
    iface, why, doubts = ctx.host.socket_interface()
    if iface is None:
        ctx.finding("socket-ifname-uncertain", "warning", "NCCL_SOCKET_IFNAME",
                    f"no interface for NCCL's sockets: {why}; NCCL_SOCKET_IFNAME not set",
                    why=why, candidates=[c["name"] for c in ctx.host.socket_candidates()])
        return []
    for d in doubts:
        ctx.finding("socket-ifname-uncertain", "warning", "NCCL_SOCKET_IFNAME", f"uncertain socket interface: {d}",
                    chosen=iface["name"], default_route_interfaces=list(ctx.host.default_ifaces))
    name = iface["name"]
    unknown = ctx.host.unknown_address_networks(name)
    if unknown:
        ctx.note(f"{name}'s IPv4 address is unknown (no 'ip -j addr show', no /proc/net/fib_trie); "
                 f"its connected route{'s' if len(unknown) > 1 else ''} ({', '.join(unknown)}) show it "
                 "has one there, which is all NCCL's socket needs from the name")
    evidence = {"interface": name, "kind": iface.get("kind"), "speed_mbps": iface.get("speed_mbps"),
                "default_route": ctx.host.is_default_route(name),
                "addresses": [f"{a['address']}/{a.get('prefixlen')}" for a in iface.get("addresses", [])],
                "ipv4_address_unknown_in": unknown,
                "candidates": [c["name"] for c in ctx.host.socket_candidates()]}
    return [
        ctx.decision("NCCL_SOCKET_IFNAME", "=" + name,
                     f"{name} {why}; '=' makes the name exact (NCCL matches prefixes)", **evidence),
        ctx.decision("GLOO_SOCKET_IFNAME", name,
                     f"{name} for PyTorch's Gloo backend (exact names, comma separated)", **evidence),
        ctx.decision("OMPI_MCA_btl_tcp_if_include", name,
                     f"{name} for Open MPI's TCP transport", **evidence),
        ctx.decision("OMPI_MCA_oob_tcp_if_include", name,
                     f"{name} for Open MPI's out-of-band channel (mpirun and its daemons)", **evidence),
    ]
