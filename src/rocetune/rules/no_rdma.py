"""no-rdma: a host without a usable verbs port runs NCCL over TCP sockets -- say so, tune them.

When nccl-ib-hca chose no port, NCCL runs over sockets. With no RDMA device at all rocetune sets
NCCL_IB_DISABLE=1; with RDMA devices of which none is usable now (ports DOWN) it leaves it unset:
NCCL's IB transport then finds no ACTIVE port and falls back by itself (NCCL v2.28.9-1
src/transport/net_ib.cc:826, "No device found"), and a pinned value (read at net_ib.cc:677) would
outlive the repair. A lone port that carries the default route is not such a host: NCCL takes it
(net_ib.cc:736-740), and nccl-ib-hca chooses it as a converged port. No other NCCL_IB_* variable
is set here. The rule sizes the socket transport from the link speed of the chosen socket interface: NCCL starts
with one socket and no helper thread, which a single core cannot drive at 25 Gb/s and above.

    link speed      NCCL_SOCKET_NTHREADS  NCCL_NSOCKS_PERTHREAD  sockets
    < 25 Gb/s       (NCCL default)        (NCCL default)          1
    25-49 Gb/s      2                     1                       2
    50-99 Gb/s      2                     2                       4
    100-199 Gb/s    4                     2                       8
    200-399 Gb/s    8                     2                      16
    >= 400 Gb/s     16                    2                      32

NCCL documents 4 threads for generic 100G networks, caps threads at 16 and threads x sockets at
64; two sockets per thread give ECMP/LAG hashing two flows to spread.

Cloud NICs with their own NCCL net plugin (AWS EFA via aws-ofi-nccl, Google gVNIC with
GPUDirect-TCPX/TCPXO) are left to the vendor: NCCL already auto-tunes sockets for those vendor ids
and the plugin carries the data, so nothing NCCL_IB_* or socket-related is set there.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from .base import NCCL_IB_SOURCE, PORTS_READ

ID = "no-rdma"


declare(
    id="no-compute-port", kind="rule", severity="warning",
    by=("no-rdma",),
    title="RDMA devices exist but no port is usable",
    checks="Whether any RDMA port is usable now (ACTIVE, addressed, not the front end).",
    reads=PORTS_READ,
    why="NCCL falls back to TCP sockets until a port is usable: a fraction of the bandwidth.",
    fix="bring the ports up and give them addresses; the env follows at the next run or boot",
    source=NCCL_IB_SOURCE,
)

# (minimum Gb/s, threads, sockets per thread), highest first
SOCKET_TABLE = ((400, 16, 2), (200, 8, 2), (100, 4, 2), (50, 2, 2), (25, 2, 1))
MAX_SOCKETS = 64


def socket_tuning(gbps: Optional[float]) -> Optional[Tuple[int, int]]:
    if not gbps:
        return None
    for floor, threads, socks in SOCKET_TABLE:
        if gbps >= floor:
            assert threads * socks <= MAX_SOCKETS
            return threads, socks
    return None


@emits("no-compute-port")
def rule(features: dict, ctx) -> List[Decision]:
    host = ctx.host
    sel = host.selection()
    if sel.chosen:
        return []
    if not sel.rdma_visible:
        ctx.note(f"cannot tell whether this host has RDMA ({sel.hidden_reason}); "
                 "neither NCCL_IB_DISABLE nor NCCL_IB_* is set")
        return []
    cloud = host.plugin_cloud()
    if cloud:
        ctx.note(f"{cloud[1]}: NCCL's data path is the vendor plugin; no NCCL_IB_* or socket "
                 "tuning is set (follow the vendor's NCCL environment for the plugin)")
        return []
    ports = [p for p, _ in sel.excluded]
    out = []
    if ports:
        # RDMA devices exist but none is usable now (ports down, no address ...): NCCL falls back
        # to sockets by itself, and a pinned NCCL_IB_DISABLE=1 would outlive the repair.
        ctx.finding("no-compute-port", "warning", "host",
                    "no usable compute RDMA port (" + "; ".join(f"{p.name}: {w}" for p, w in sel.excluded[:4])
                    + "): NCCL will fall back to TCP sockets until one is; NCCL_IB_DISABLE is not pinned",
                    excluded=[{"port": p.name, "why": w} for p, w in sel.excluded])
    else:
        out.append(ctx.decision("NCCL_IB_DISABLE", 1,
                                "no RDMA device: NCCL runs over TCP sockets; said explicitly so no "
                                "NCCL_IB_* setting is expected to matter", rdma_ports=[]))
    iface, _, _ = ctx.host.socket_interface()
    if iface is None:
        return out
    speed = iface.get("speed_mbps")
    gbps = speed / 1000 if speed else None
    tuning = socket_tuning(gbps)
    sock_ev = {"interface": iface["name"], "speed_mbps": speed, "table": [list(r) for r in SOCKET_TABLE]}
    if tuning is None:
        if gbps is None:
            ctx.note(f"{iface['name']} reports no link speed (virtual NIC?): socket transport left at "
                     "NCCL's defaults")
        else:
            ctx.note(f"{iface['name']} runs at {gbps:g} Gb/s: NCCL's socket defaults suffice")
        return out
    threads, socks = tuning
    out.append(ctx.decision("NCCL_SOCKET_NTHREADS", threads,
                            f"{gbps:g} Gb/s on {iface['name']}: {threads} helper threads "
                            f"({threads * socks} sockets in all, at most {MAX_SOCKETS})", **sock_ev))
    out.append(ctx.decision("NCCL_NSOCKS_PERTHREAD", socks,
                            f"{socks} socket(s) per thread: {threads} x {socks} = {threads * socks} "
                            f"flows for {gbps:g} Gb/s", **sock_ev))
    return out
