"""`cross-rail`: can rail i of one host reach rail j of another? The evidence NCCL_CROSS_NIC needs.

For each pair, from host a every rail's interface sends a ping bound to it (`ping -I IF`: the
kernel picks the next hop among the routes through that interface, as it does for a RoCE QP whose
GID is on it) to the address of every rail of host b: the same rail (it must answer) and every
other rail (the question). Across the fleet the answers give one verdict:

- `isolated`: no rail reaches another rail -- NCCL must keep each channel on its rail
  (NCCL_CROSS_NIC=0), or a ring that crosses rails cannot connect;
- `routed`: every rail reaches every other rail -- crossing is possible (how fast is another
  question: the inter-rail path goes through the spine);
- `partial`: some do, some do not -- NCCL_CROSS_NIC=0, as for isolated.

An answer proves a path only where the peer answers ARP for an address on the interface that
holds it: with arp_ignore=0 (Linux's default) the peer's rail-i interface answers for its rail-j
address too, so the ping crosses nothing -- and a RoCE packet sent that way reaches the wrong NIC.
Such answers are kept as `arp_flux` and count neither way (the arp-isolation rule names the fix).

A pair fails where a rail does not reach the same rail of its peer, or where rails do not reach
each other and the host's plan leaves NCCL free to cross them (NCCL_CROSS_NIC unset, 1 or 2).
`--rail-reach-out FILE` writes the verdict and its evidence; installed on the nodes as
/etc/rocetune/rail-reach.json it is what the nccl-cross-nic rule decides NCCL_CROSS_NIC from.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
from typing import Dict, List, Optional, Tuple

from . import FleetContext, FleetTest, PairContext

SCHEMA = "rocetune.rail-reach/1"
PING = "ping -n -q -c 2 -i 0.2 -W 1 -I {ifname} {address}"
EXAMPLES = 20


def probe_command(targets: List[Tuple[str, str]]) -> str:
    """One shell line: every (interface, address) pinged at once, one `IF ADDRESS ok|no` line each."""
    quoted = " ".join(shlex.quote(f"{i} {a}") for i, a in targets)
    return ("for t in " + quoted + "; do set -- $t; ( " + PING.format(ifname='"$1"', address='"$2"')
            + " >/dev/null 2>&1 && echo \"$1 $2 ok\" || echo \"$1 $2 no\" ) & done; wait")


def parse_answers(text: str) -> Dict[Tuple[str, str], bool]:
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[2] in ("ok", "no"):
            out[(words[0], words[1])] = words[2] == "ok"
    return out


def run_pair(ctx: PairContext) -> List[dict]:
    a, b = ctx.a.endpoints, ctx.b.endpoints
    mine = [(i, p) for i, p in enumerate(a.rdma) if p.roce and p.netdev]
    theirs = [(j, p) for j, p in enumerate(b.rdma) if p.roce and p.ipv4]
    entry: dict = {"kind": "cross-rail", "path": f"{len(mine)} x {len(theirs)} rails"}
    if len(mine) < 2 or len(theirs) < 2:
        entry.update(status="skipped", why="fewer than two RoCE rails with an address on one side: nothing to cross")
        return [entry]
    targets = [(pa.netdev or "", pb.ipv4 or "") for _, pa in mine for _, pb in theirs]
    done = ctx.a.remote.run(probe_command(targets), "cross-rail", 30)
    answers = parse_answers(done.out.decode("utf-8", "replace"))
    if done.code == 127 or not answers:
        said = done.first_err_line() or f"exit {done.code}"
        entry.update(status="error", error=f"the pings did not run on {ctx.a.name}: {said[:300]}")
        return [entry]
    flux = _arp_flux(ctx.b)
    reach = [{"from": i, "to": j, "from_if": pa.netdev, "to_ip": pb.ipv4,
              "reached": answers.get((pa.netdev or "", pb.ipv4 or ""))} for i, pa in mine for j, pb in theirs]
    for r in reach:
        # The ARP request went out on rail `from`: the peer's interface there answers for the
        # rail `to` address itself where it answers ARP for any local address.
        if r["from"] != r["to"] and r["reached"] and r["from"] < len(b.rdma) and b.rdma[r["from"]].netdev in flux:
            r["arp_flux"] = True
    entry["reach"] = reach
    same_down = [r for r in reach if r["from"] == r["to"] and r["reached"] is False]
    cross = [r for r in reach if r["from"] != r["to"] and r["reached"] is not None and not r.get("arp_flux")]
    cut = [r for r in cross if not r["reached"]]
    entry["cross"] = {"reached": len(cross) - len(cut), "tested": len(cross),
                      "arp_flux": sum(bool(r.get("arp_flux")) for r in reach)}
    crossing_allowed = ctx.a.plan_env.get("NCCL_CROSS_NIC", "2").strip() != "0"
    if same_down:
        entry.update(status="fail", why="rail to the same rail does not answer: " + _names(same_down, ctx))
    elif cut and crossing_allowed:
        entry.update(status="fail", why=(f"{len(cut)} of {len(cross)} rail-to-other-rail paths do not answer ("
                                         + _names(cut[:4], ctx) + ") and the plan of "
                                         f"{ctx.a.name} lets NCCL cross rails (NCCL_CROSS_NIC "
                                         f"{ctx.a.plan_env.get('NCCL_CROSS_NIC', 'unset')}): set NCCL_CROSS_NIC=0"))
    else:
        entry["status"] = "pass"
    if entry["cross"]["arp_flux"]:
        note = (f"{entry['cross']['arp_flux']} answer(s) prove nothing: {ctx.b.name} answers ARP for any local "
                f"address on {', '.join(sorted(flux))} (arp_ignore 0), so they may have come back on the same rail")
        entry["why"] = f"{entry['why']}; {note}" if entry.get("why") else note
    return [entry]


def _arp_flux(host) -> set:
    """The host's rail interfaces that answer ARP for any local address (effective arp_ignore 0,
    the kernel applying max(conf.all, conf.IF)); an unreadable setting is not held against it."""
    from ...rules.arp_isolation import effective

    sysctl = ((host.features or {}).get("kernel") or {}).get("sysctl") or {}
    out = set()
    for p in host.endpoints.rdma:
        if p.netdev:
            value, _ = effective(sysctl, p.netdev, "arp_ignore")
            if value == 0:
                out.add(p.netdev)
    return out


def _names(rows: List[dict], ctx: PairContext) -> str:
    return ", ".join(f"{ctx.a.name} rail {r['from']} ({r['from_if']}) -> {ctx.b.name} rail {r['to']} ({r['to_ip']})"
                     for r in rows)


def run_fleet(ctx: FleetContext) -> dict:
    rows = [(p["a"], p["b"], r) for p in ctx.pairs for t in p.get("tests", [])
            if t.get("kind") == "cross-rail" for r in t.get("reach") or []]
    cross = [(a, b, r) for a, b, r in rows if r["from"] != r["to"] and r["reached"] is not None
             and not r.get("arp_flux")]
    if not cross:
        why = ("every answer may have come back through the same rail (the peers answer ARP for any local "
               "address: arp_ignore 0; see the arp-isolation rule)" if rows else
               "no pair had two RoCE rails on both sides to cross")
        return {"status": "skipped", "why": why}
    reached = [x for x in cross if x[2]["reached"]]
    verdict = "routed" if len(reached) == len(cross) else "isolated" if not reached else "partial"
    shown = cross if verdict == "routed" else [x for x in cross if not x[2]["reached"]]
    doc = {"status": "pass", "verdict": verdict, "reached": len(reached), "tested": len(cross),
           "pairs": len({(a, b) for a, b, _ in cross}),
           "examples": [{"from": f"{a} rail {r['from']} ({r['from_if']})", "to": f"{b} rail {r['to']} ({r['to_ip']})",
                         "reached": r["reached"]} for a, b, r in shown[:EXAMPLES]]}
    if ctx.settings:
        doc["written"] = write_evidence(ctx.settings, doc, sorted(ctx.hosts))
    return doc


def evidence(doc: dict, hosts: List[str], now: Optional[str] = None) -> dict:
    """What the nccl-cross-nic rule reads from /etc/rocetune/rail-reach.json."""
    return {"schema": SCHEMA, "verdict": doc["verdict"], "reached": doc["reached"], "tested": doc["tested"],
            "pairs": doc["pairs"], "examples": doc["examples"], "hosts": hosts,
            "measured_at": now or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "by": "rocetune fleet validate --tests cross-rail"}


def write_evidence(path: str, doc: dict, hosts: List[str]) -> str:
    from ...fsutil import atomic_write

    atomic_write(path, json.dumps(evidence(doc, hosts), indent=1, sort_keys=True) + "\n")
    return path


def add_arguments(g) -> None:
    g.add_argument("--rail-reach-out", metavar="FILE",
                   help="with cross-rail: write the verdict and its evidence here (install it on the nodes as "
                        "/etc/rocetune/rail-reach.json: the nccl-cross-nic rule decides from it)")


def settings(args: argparse.Namespace) -> Optional[str]:
    return args.rail_reach_out


def fleet_lines(doc: dict) -> List[str]:
    if "verdict" not in doc:
        return []
    lines = [f"verdict: {doc['verdict']} ({doc['reached']} of {doc['tested']} rail-to-other-rail paths answered, "
             f"{doc['pairs']} pair(s))"]
    lines += [f"{'reached' if e['reached'] else 'no answer'}: {e['from']} -> {e['to']}" for e in doc["examples"][:5]]
    if doc.get("written"):
        lines.append(f"evidence written to {doc['written']} (install as /etc/rocetune/rail-reach.json)")
    return lines


TEST = FleetTest(
    name="cross-rail", order=45, needs_pairs=True,
    summary="whether rail i of one host reaches rail j of another (ping bound to each rail): "
            "the evidence for NCCL_CROSS_NIC",
    pair=run_pair, fleet=run_fleet, round_seconds=lambda opts: 3.0, add_arguments=add_arguments,
    settings=settings, fleet_lines=fleet_lines)
