"""arp-isolation: several RDMA ports in one IPv4 subnet need per-interface ARP sysctls.

When two or more compute RoCE ports of a node share one subnet, Linux by default answers ARP
for any local address on any interface (arp_ignore=0) and may announce an address from another
port (arp_announce=0): peers then learn one MAC for several addresses, RoCE traffic meant for
port B arrives on port A, and NCCL sees one NIC carrying everything or connections that fail
(NCCL #1109, "NCCL picks only one 400G ethernet NIC"; #1348). A strict reverse-path filter
(rp_filter=1) additionally drops replies that arrive on a port other than the route's. The NCCL
environment cannot fix this: RoCE connections use each port's own GID, but ARP/neighbour
resolution follows the kernel.

For each shared subnet this rule reports, as a warning finding, every port whose effective
setting is unsafe -- the kernel uses max(conf.all, conf.<if>) for arp_ignore, arp_announce and
rp_filter -- naming the sysctls and interfaces. Wanted: arp_ignore >= 1 (reply only for the
receiving interface's addresses), arp_announce = 2 (announce the outgoing interface's own
address), rp_filter 0 or 2 (not strict), plus one routing table per port (policy routing,
which the Features do not show). The roce_net role sets all of it (roce_net_arp_isolation). The
maintainers' first advice stays one subnet per rail (see nccl-cross-nic).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from .nccl_cross_nic import port_networks

ID = "arp-isolation"


declare(
    id="rdma-ports-share-subnet", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when the ports' ARP sysctls are not in the Features, so they cannot be judged",
    by=("arp-isolation",),
    title="RDMA ports share a subnet with ARP at kernel defaults",
    checks="RDMA ports whose interfaces have addresses in one IPv4 subnet: their arp_ignore, "
           "arp_announce and rp_filter sysctls.",
    reads="The interfaces' addresses (`ip -j addr`) and /proc/sys/net/ipv4/conf/<if>/{arp_ignore,"
          "arp_announce,rp_filter} (the Features `net.interfaces`, `kernel.sysctl`).",
    why="With kernel defaults any port answers ARP for every address of the host, so peers send "
        "one port's RoCE traffic to another: NCCL sees one NIC carrying the load, or cross-rail "
        "failures (NCCL #1109, #1348).",
    fix="set arp_ignore=1, arp_announce=2, rp_filter=2 per interface and a routing table per port "
        "(the roce_net role, roce_net_arp_isolation); or give each rail its own subnet",
    source="NCCL #1109, #1348; Linux Documentation/networking/ip-sysctl.rst (arp_ignore, "
           "arp_announce, rp_filter).",
)
WANT = {"arp_ignore": (lambda v: v >= 1, ">= 1"), "arp_announce": (lambda v: v == 2, "2"),
        "rp_filter": (lambda v: v != 1, "0 or 2")}


def effective(sysctl: Dict[str, Optional[str]], ifname: str, key: str) -> Tuple[Optional[int], str]:
    """(value the kernel applies, how it was found): max(all, <if>) for these three keys."""
    vals = []
    for scope in ("all", ifname):
        text = sysctl.get(f"net.ipv4.conf.{scope}.{key}")
        if text is not None and text.strip().lstrip("-").isdigit():
            vals.append((int(text), scope))
    if not vals:
        return None, "not readable"
    best = max(vals)
    return best[0], ", ".join(f"{s}={v}" for v, s in vals)


@emits("rdma-ports-share-subnet")
def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    ports = [p for p in sel.roce if p.netdev]
    if len(ports) < 2:
        return []
    nets = port_networks(ctx, ports)
    groups: Dict[str, List] = {}
    for p in ports:
        if nets.get(p.name) is not None:
            groups.setdefault(str(nets[p.name]), []).append(p)
    sysctl = (features.get("kernel") or {}).get("sysctl") or {}
    for subnet, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        bad = []
        unknown = []
        for key, (ok, want) in WANT.items():
            wrong: Dict[int, List[str]] = {}
            for p in members:
                value, _ = effective(sysctl, p.netdev, key)
                if value is None:
                    unknown.append(f"net.ipv4.conf.{p.netdev}.{key}")
                elif not ok(value):
                    wrong.setdefault(value, []).append(p.netdev)
            for value, ifs in sorted(wrong.items()):
                bad.append(f"{key} is {value} (want {want}; max of net.ipv4.conf.all.{key} and "
                           f"net.ipv4.conf.<if>.{key}) on {', '.join(ifs)}")
        names = ", ".join(p.netdev for p in members)
        if bad:
            ctx.finding("rdma-ports-share-subnet", "warning", subnet,
                        f"{len(members)} RDMA ports ({names}) share {subnet} with ARP at kernel defaults: "
                        "any port answers ARP for every address, so peers send one port's traffic to "
                        f"another (NCCL #1109, #1348): {'; '.join(bad)}",
                        interfaces=[p.netdev for p in members], sysctl=bad)
        elif unknown:
            ctx.finding("rdma-ports-share-subnet", "info", subnet,
                        f"{len(members)} RDMA ports ({names}) share {subnet}; their ARP sysctls are not "
                        f"in the Features ({', '.join(unknown[:3])}...): check arp_ignore=1, "
                        "arp_announce=2, rp_filter=2 per interface and per-port routing tables",
                        interfaces=[p.netdev for p in members], unknown=unknown)
        else:
            ctx.note(f"{names} share {subnet}; arp_ignore, arp_announce and rp_filter are set per "
                     "interface (per-port routing tables are not visible here: check `ip rule`)")
    return []
