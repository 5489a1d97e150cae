"""`lldp`: the cabling of every rail. On each host `lldpctl -f json0` says which switch and port
each rail's interface reaches (the rails are the RDMA ports the plan hands NCCL, in rail order,
fleet.endpoints); across the fleet rail i of every host must reach the same switch -- the one
`--lldp-switches` names for it, else the one most hosts' rail i reaches. A host whose rail
reaches another switch is named with the cable: its port, interface, and the switch port at the
other end.

A rail-optimised fabric gives each rail its own leaf, so a crossed cable (rail 0 into rail 1's
leaf) leaves NCCL's rings crossing rails through the spine. Where no switch is named and no switch
leads (two hosts, two switches), each host is named: one cable alone cannot tell which end is
wrong.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Dict, List, Optional

from ...errors import ParseError
from . import FleetContext, FleetTest, NodeContext

COMMAND = "lldpctl -f json0"


def run_node(ctx: NodeContext) -> dict:
    from ...probe.parsers.lldpctl import parse_lldpctl_json

    rails = ctx.host.endpoints.rdma
    if not rails:
        return {"status": "skipped", "why": "no RDMA port in the plan: no rail to trace"}
    done = ctx.host.remote.run(COMMAND, "lldpctl", 30)
    if done.code == 127:
        return {"status": "skipped", "why": "lldpctl is not installed (Debian/EL package lldpd)"}
    if done.code != 0:
        said = done.first_err_line() or f"exit {done.code}"
        return {"status": "error", "error": f"{COMMAND} failed: {said[:300]} (is lldpd running?)"}
    try:
        seen = parse_lldpctl_json(done.out.decode("utf-8", "replace"))
    except ParseError as exc:
        return {"status": "error", "error": str(exc)[:300]}
    out = []
    for i, port in enumerate(rails):
        neighbours = seen.get(port.netdev or "", [])
        first = neighbours[0] if neighbours else {}
        out.append({"rail": i, "port": port.name, "netdev": port.netdev, "switch": first.get("chassis"),
                    "switch_port": first.get("port"), "neighbours": len(neighbours)})
    silent = [r for r in out if not r["switch"]]
    doc = {"status": "pass", "rails": out}
    if silent:
        doc.update(status="fail", why="no LLDP neighbour on " + ", ".join(_cable(r) for r in silent)
                   + ": a cable out, a switch port down, or LLDP off on the switch")
    return doc


def run_fleet(ctx: FleetContext) -> dict:
    named: List[str] = ctx.settings or []
    traced = {h: (c.results.get("lldp") or {}).get("rails") for h, c in ctx.hosts.items()}
    tables: Dict[str, list] = {h: t for h, t in traced.items() if t}
    if not tables:
        return {"status": "skipped", "why": "no host's rails could be traced"}
    width = max(len(t) for t in tables.values())
    expected: Dict[int, Optional[str]] = {}
    odd: List[dict] = []
    split: List[int] = []
    for i in range(width):
        reached = {h: t[i]["switch"] for h, t in tables.items() if i < len(t) and t[i]["switch"]}
        if i < len(named):
            want: Optional[str] = named[i]
            basis = "as --lldp-switches names"
        else:
            ranked = Counter(reached.values()).most_common()
            want = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
            basis = f"as {ranked[0][1]} of {len(reached)} hosts" if want else ""
            if want is None and len(ranked) > 1:
                split.append(i)
        expected[i] = want
        for h, switch in sorted(reached.items()):
            if want is not None and switch != want:
                rail = tables[h][i]
                odd.append({"host": h, "rail": i, "port": rail["port"], "netdev": rail["netdev"], "switch": switch,
                            "switch_port": rail["switch_port"], "expected": want,
                            "why": f"{h} {_cable(rail)} reaches {switch} port {rail['switch_port']}; rail {i} "
                                   f"reaches {want} ({basis})"})
    doc = {"status": "pass", "expected": [expected[i] for i in range(width)], "odd": odd,
           "hosts": len(tables)}
    if odd:
        doc.update(status="fail", why="; ".join(o["why"] for o in odd)[:2000],
                   suspects=sorted({o["host"] for o in odd}))
    elif split:
        doc.update(status="fail", suspects=sorted(tables),
                   why=f"rail {', '.join(map(str, split))}: the hosts reach different switches and none leads; "
                       "name them with --lldp-switches")
    return doc


def _cable(rail: dict) -> str:
    return f"rail {rail['rail']} {rail['port']} ({rail['netdev'] or 'no netdev'})"


def add_arguments(g) -> None:
    g.add_argument("--lldp-switches", metavar="LIST",
                   help="with lldp: the switch (LLDP SysName) rail 0, 1, ... must reach, comma-separated "
                        "(default: the one most hosts' rail reaches)")


def settings(args: argparse.Namespace) -> List[str]:
    return [s.strip() for s in (args.lldp_switches or "").split(",") if s.strip()]


def node_row(doc: dict) -> List[str]:
    rails = doc.get("rails") or []
    return [", ".join(f"{r['rail']}:{r['switch'] or '-'}/{r['switch_port'] or '-'}" for r in rails), ""]


def fleet_lines(doc: dict) -> List[str]:
    return [f"rail {i}: {s or '(no switch leads)'}" for i, s in enumerate(doc.get("expected") or [])]


TEST = FleetTest(
    name="lldp", order=40,
    summary="cabling: rail i of every host reaches the same switch (LLDP, lldpctl -f json0)",
    node=run_node, fleet=run_fleet, add_arguments=add_arguments, settings=settings, defaults=list,
    node_row=node_row, fleet_lines=fleet_lines)
