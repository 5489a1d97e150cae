"""`rocetune fleet validate` for people: hosts that could not be tested, every pair test with
its figure and verdict (failures marked `!`, with why), each node test per host and each fleet
test's lines (as the test module words them, fleet.tests), the pair matrix and the suspects."""

from __future__ import annotations

from typing import Dict, List

from ..text import printable, table

MARK = {"pass": " ", "unjudged": "?", "skipped": "-", "fail": "!", "error": "!"}


def validate_text(doc: dict, verbose: int = 0) -> str:
    from ..fleet import tests as registry

    s = doc["summary"]
    node_failed = s.get("failed_nodes") or {"nccl": s.get("nccl_failed") or []}
    lines = [f"validate: {s['hosts']} host(s), {s['pairs']} pair(s) in {len(doc['rounds'])} round(s) "
             f"({doc['mode']}), {s['failed_pairs']} failed, {len(s['unreachable'])} not tested"
             + "".join(f", {_label(name)} failed on {len(hosts)}"
                       for name, hosts in sorted(node_failed.items()) if hosts)
             + "".join(f", {name} failed" for name in s.get("failed_fleet_tests") or [])
             + f" -- {'PASS' if s['passed'] else 'FAIL'}"]
    down = [["!", h, printable(d["error"])] for h, d in doc["hosts"].items() if d.get("error")]
    if down:
        lines += ["", "NOT TESTED"] + ["  " + ln for ln in table(down)]
    rows: List[List[str]] = []
    whys: List[str] = []
    for p in doc["pairs"]:
        for t in p["tests"]:
            path = t.get("path") or ""
            figure = f"{t['measured_gbps']:g} Gb/s" if "measured_gbps" in t else ""
            need = f"need {t['verdict']['needed_gbps']:g}" if "verdict" in t else ""
            rows.append([MARK[t["status"]], f"{p['a']} - {p['b']}", t["kind"], path, figure, need,
                         t["status"].upper()])
            why = t.get("why") or t.get("error")
            if why and (t["status"] != "pass" or verbose):
                whys.append(f"{p['a']} - {p['b']} {t['kind']} {path}: {printable(why)}")
    skipped = [f"{p['a']} - {p['b']}" for p in doc["pairs"] if p["status"] == "skipped"]
    if skipped:
        whys.append(f"not run within the {doc.get('budget_s'):g} s budget: " + ", ".join(skipped))
    if rows:
        lines += ["", "PAIRS (round by round)"] + ["  " + ln for ln in table(rows)]
    if whys:
        lines += ["", "WHY"] + ["  " + w for w in whys]
    for test in registry.all_tests():
        if not test.node:
            continue
        found = [(h, d[test.name]) for h, d in doc["hosts"].items() if isinstance(d.get(test.name), dict)]
        if not found:
            continue
        lines += ["", f"{test.name.upper()} ON EACH NODE ({test.summary})"]
        rows_ = []
        for h, n in found:
            cells = test.node_row(n) if test.node_row else []
            rows_.append([MARK.get(n.get("status"), "!"), h, str(n.get("status", "?")).upper()] + cells
                         + [printable(n.get("why") or n.get("error") or "")])
        lines += ["  " + ln for ln in table(rows_)]
    for name, result in (doc.get("fleet") or {}).items():
        owner = registry.get(name) if name in registry.names() else None
        lines += ["", f"{name.upper()} ACROSS THE FLEET: {str(result.get('status', '?')).upper()}"]
        body = owner.fleet_lines(result) if owner and owner.fleet_lines else []
        why = result.get("why") or result.get("error")
        lines += ["  " + printable(ln) for ln in body] + ([f"  {MARK.get(result.get('status'), '!')} {printable(why)}"]
                                                         if why else [])
    covered = coverage_lines(doc.get("coverage"))
    if covered:
        lines += ["", "COVERAGE (the pairs that ran)"] + ["  " + ln for ln in covered]
    matrix = _matrix(doc)
    if matrix:
        lines += ["", "SLOWEST RDMA RAIL PER PAIR (Gb/s; ! failed)"] + ["  " + ln for ln in table(matrix)]
    if s["suspects"]:
        lines += ["", "LOOK FIRST AT: " + ", ".join(s["suspects"])]
    return "\n".join(lines) + "\n"


def coverage_lines(cov) -> List[str]:
    """What the pairs that ran reached: hosts, rails, leaf-to-leaf paths per rail, host pairs."""
    if not cov:
        return []
    out = [f"hosts {cov['hosts']['reached']}/{cov['hosts']['of']}"
           + (f", rails {cov['rails']['reached']}/{cov['rails']['of']}" if cov.get("rails") else "")
           + f", host pairs {cov['host_pairs']['reached']}/{cov['host_pairs']['of']}"]
    if cov.get("leaf_pairs") is None:
        out.append("leaf-to-leaf paths: unknown (no LLDP cabling in the hosts' probes)")
        return out
    for r in cov["leaf_pairs"]:
        line = f"rail {r['rail']}: leaf-to-leaf paths {r['reached']}/{r['of']} ({r['leaves']} leaves)"
        if r["missing"]:
            line += " -- not reached: " + ", ".join(r["missing"][:5]) + (" ..." if len(r["missing"]) > 5 else "")
        out.append(line)
    return out


def _label(name: str) -> str:
    return "NCCL" if name == "nccl" else name


def _matrix(doc: dict) -> List[List[str]]:
    tested = [h for h, d in doc["hosts"].items() if not d.get("error")]
    if len(tested) < 2:
        return []
    cell: Dict[tuple, str] = {}
    for p in doc["pairs"]:
        rdma = [t for t in p["tests"] if t["kind"] == "rdma"]
        if not rdma:
            continue
        figures = [t["measured_gbps"] for t in rdma if "measured_gbps" in t]
        bad = any(t["status"] in ("fail", "error") for t in rdma)
        text = (f"{min(figures):g}" if figures else "-") + ("!" if bad else "")
        cell[(p["a"], p["b"])] = cell[(p["b"], p["a"])] = text
    if not cell:
        return []
    return [[""] + tested] + [[a] + ["." if a == b else cell.get((a, b), "") for b in tested] for a in tested]
