"""`rocetune fleet validate` for people: hosts that could not be tested, every pair test with
its figure and verdict (failures marked `!`, with why), the pair matrix and the suspects."""

from __future__ import annotations

from typing import Dict, List

from ..text import printable, table

MARK = {"pass": " ", "unjudged": "?", "skipped": "-", "fail": "!", "error": "!"}


def validate_text(doc: dict, verbose: int = 0) -> str:
    s = doc["summary"]
    lines = [f"validate: {s['hosts']} host(s), {s['pairs']} pair(s) in {len(doc['rounds'])} round(s) "
             f"({doc['mode']}), {s['failed_pairs']} failed, {len(s['unreachable'])} not tested"
             + (f", NCCL failed on {len(s['nccl_failed'])}" if s.get("nccl_failed") else "")
             + f" -- {'PASS' if s['passed'] else 'FAIL'}"]
    down = [["!", h, printable(d["error"])] for h, d in doc["hosts"].items() if d.get("error")]
    if down:
        lines += ["", "NOT TESTED"] + ["  " + ln for ln in table(down)]
    rows: List[List[str]] = []
    whys: List[str] = []
    for p in doc["pairs"]:
        for t in p["tests"]:
            path = (f"rail {t['rail']} {t['a_port']} -> {t['b_port']}" if t["kind"] == "rdma" and "rail" in t
                    else f"{t.get('a_if', '')} -> {t.get('b_if', '')}" if t["kind"] == "tcp" else "")
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
    nccl = [(h, d["nccl"]) for h, d in doc["hosts"].items() if d.get("nccl")]
    if nccl:
        lines += ["", "NCCL ON EACH NODE (two ranks, the node's env)"]
        lines += ["  " + ln for ln in table([[MARK[n["status"]], h, n["status"].upper(),
                                              f"{n['busbw_gbs']:g} GB/s" if "busbw_gbs" in n else "",
                                              _networks(n), printable(n.get("why") or n.get("error") or "")]
                                             for h, n in nccl])]
    matrix = _matrix(doc)
    if matrix:
        lines += ["", "SLOWEST RDMA RAIL PER PAIR (Gb/s; ! failed)"] + ["  " + ln for ln in table(matrix)]
    if s["suspects"]:
        lines += ["", "LOOK FIRST AT: " + ", ".join(s["suspects"])]
    return "\n".join(lines) + "\n"


def _networks(n: dict) -> str:
    nets = sorted({p["network"] for p in n.get("processes", []) if p.get("network")})
    devs = sorted({d["name"] for p in n.get("processes", []) for d in p.get("devices", [])})
    return ("network " + "/".join(nets) if nets else "") + (f" on {','.join(devs)}" if devs else "")


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
