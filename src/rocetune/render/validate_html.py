"""`rocetune fleet validate --html FILE`: one self-contained page (no script, no external asset):
the verdict, the hosts not tested, the pair bandwidth matrix as a heat map (inline SVG, each cell
the slowest RDMA rail of the pair as a share of the rate it was judged against), and each
failing test with its evidence. Every value is escaped: host names and tool output come from the
nodes."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .. import __version__
from ..text import html_text

_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top;text-align:left;font-size:90%}
th{background:#eee}
tr.bad td{background:#fdd}
.verdict-pass{color:#060}.verdict-fail{color:#b00}
pre{background:#f6f6f6;padding:.5em;font-size:85%;white-space:pre-wrap}
"""
CELL = 56


def _e(value: object) -> str:
    return html_text(value)  # controls and bidi overrides as visible escapes, then HTML-escaped


def validate_html(doc: dict, title: str = "rocetune fleet validate") -> str:
    s = doc["summary"]
    verdict = "PASS" if s["passed"] else "FAIL"
    out: List[str] = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        f"<h1>{_e(title)}: <span class=\"verdict-{verdict.lower()}\">{verdict}</span></h1>",
        f"<p>{s['hosts']} host(s), {s['pairs']} pair(s) in {len(doc['rounds'])} round(s) ({_e(doc['mode'])}), "
        f"{s['failed_pairs']} failed; a test passes at {doc['settings']['fraction']:.0%} of the line rate. "
        f"rocetune {_e(__version__)}.</p>",
    ]
    if s["suspects"]:
        out.append(f"<p><strong>Look first at: {_e(', '.join(s['suspects']))}</strong></p>")
    down = [(h, d["error"]) for h, d in doc["hosts"].items() if d.get("error")]
    if down:
        out += ["<h2>Not tested</h2>", "<table>", "<tr><th>host</th><th>why</th></tr>"]
        out += [f'<tr class="bad"><td>{_e(h)}</td><td>{_e(why)}</td></tr>' for h, why in down]
        out.append("</table>")
    out += _node_tests(doc) + _fleet_tests(doc)
    from .validate_text import coverage_lines

    covered = coverage_lines(doc.get("coverage"))
    if covered:
        out += ["<h2>Coverage of the pairs that ran</h2>", "<ul>"] + [f"<li>{_e(c)}</li>" for c in covered] + ["</ul>"]
    svg = heat_map(doc)
    if svg:
        out += ["<h2>Pair bandwidth (slowest RDMA rail, share of line rate)</h2>", svg]
    out += ["<h2>Tests</h2>", "<table>",
            "<tr><th>pair</th><th>test</th><th>path</th><th>Gb/s</th><th>needed</th><th>status</th></tr>"]
    failing = []
    for p in doc["pairs"]:
        for t in p["tests"]:
            path = t.get("path") or ""
            bad = t["status"] in ("fail", "error")
            out.append(f'<tr class="{"bad" if bad else "ok"}"><td>{_e(p["a"])} - {_e(p["b"])}</td>'
                       f'<td>{_e(t["kind"])}</td><td>{_e(path)}</td><td>{_e(t.get("measured_gbps", ""))}</td>'
                       f'<td>{_e(t["verdict"]["needed_gbps"]) if "verdict" in t else ""}</td>'
                       f'<td>{_e(t["status"])}</td></tr>')
            if bad:
                failing.append((p, t, path))
    out.append("</table>")
    if failing:
        out.append("<h2>Evidence of each failing test</h2>")
        for p, t, path in failing:
            ev = t.get("evidence") or {}
            text = "\n".join([f"why: {t.get('why') or t.get('error') or ''}", f"command: {t.get('command', '')}",
                              f"client (exit {ev.get('client_exit', '')}):"] + list(ev.get("client", []))
                             + [f"server (exit {ev.get('server_exit', '')}):"] + list(ev.get("server", [])))
            out += [f"<h3>{_e(p['a'])} - {_e(p['b'])} {_e(t['kind'])} {_e(path)}</h3>", f"<pre>{_e(text)}</pre>"]
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _node_tests(doc: dict) -> List[str]:
    """A table per node test (NCCL on each node, LLDP neighbours, ...), as its module words a row."""
    from ..fleet import tests as registry

    out: List[str] = []
    for test in registry.all_tests():
        found = [(h, d[test.name]) for h, d in doc["hosts"].items() if test.node and isinstance(d.get(test.name), dict)]
        if not found:
            continue
        out += [f"<h2>{_e(test.name)} on each node</h2>", f"<p>{_e(test.summary)}</p>", "<table>",
                "<tr><th>host</th><th>status</th><th colspan=\"2\">result</th><th>why</th></tr>"]
        for h, n in found:
            cells = (test.node_row(n) if test.node_row else []) + ["", ""]
            bad = n.get("status") in ("fail", "error")
            out.append(f'<tr class="{"bad" if bad else "ok"}"><td>{_e(h)}</td><td>{_e(n.get("status", ""))}</td>'
                       f'<td>{_e(cells[0])}</td><td>{_e(cells[1])}</td>'
                       f'<td>{_e(n.get("why") or n.get("error") or "")}</td></tr>')
        out.append("</table>")
    return out


def _fleet_tests(doc: dict) -> List[str]:
    from ..fleet import tests as registry

    out: List[str] = []
    for name, result in (doc.get("fleet") or {}).items():
        test = registry.get(name) if name in registry.names() else None
        lines = test.fleet_lines(result) if test and test.fleet_lines else []
        why = result.get("why") or result.get("error") or ""
        out += [f"<h2>{_e(name)} across the fleet: {_e(result.get('status', ''))}</h2>",
                f"<pre>{_e(chr(10).join(lines + ([why] if why else [])))}</pre>"]
    return out


def heat_map(doc: dict) -> str:
    """An inline SVG matrix of the tested hosts: green at or above the needed share, red at none."""
    hosts = [h for h, d in doc["hosts"].items() if not d.get("error")]
    cells = _cells(doc)
    if len(hosts) < 2 or not cells:
        return ""
    need = doc["settings"]["fraction"]
    label = max(len(h) for h in hosts) * 7 + 10
    size = label + CELL * len(hosts) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
             f'role="img" aria-label="pair bandwidth heat map">']
    for i, h in enumerate(hosts):
        x = label + i * CELL + CELL // 2
        parts.append(f'<text x="{x}" y="{label - 6}" font-size="11" text-anchor="middle">{_e(h)}</text>')
        parts.append(f'<text x="{label - 6}" y="{label + i * CELL + CELL // 2 + 4}" font-size="11" '
                     f'text-anchor="end">{_e(h)}</text>')
    for i, a in enumerate(hosts):
        for j, b in enumerate(hosts):
            x, y = label + j * CELL, label + i * CELL
            if a == b:
                fill, text, tip = "#ddd", "", a
            else:
                share, gbps, bad = cells.get((a, b), (None, None, False))
                fill = _colour(share, need, bad)
                text = "" if gbps is None else f"{gbps:g}"
                tip = f"{a} - {b}: " + ("not tested" if gbps is None else f"{gbps:g} Gb/s"
                                         + ("" if share is None else f", {share:.0%} of line rate")
                                         + (", FAILED" if bad else ""))
            parts.append(f'<g><title>{_e(tip)}</title><rect x="{x}" y="{y}" width="{CELL - 2}" '
                         f'height="{CELL - 2}" fill="{fill}" data-pair="{_e(a)}|{_e(b)}"/>'
                         f'<text x="{x + CELL // 2 - 1}" y="{y + CELL // 2 + 4}" font-size="11" '
                         f'text-anchor="middle">{_e(text)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _cells(doc: dict) -> Dict[Tuple[str, str], Tuple[Optional[float], Optional[float], bool]]:
    out = {}
    for p in doc["pairs"]:
        rdma = [t for t in p["tests"] if t["kind"] == "rdma"]
        figures = [t for t in rdma if "measured_gbps" in t]
        bad = any(t["status"] in ("fail", "error") for t in rdma)
        if not rdma:
            continue
        slow = min(figures, key=lambda t: t["measured_gbps"]) if figures else None
        share = (slow["measured_gbps"] / slow["verdict"]["line_rate_gbps"]
                 if slow and "verdict" in slow else None)
        out[(p["a"], p["b"])] = out[(p["b"], p["a"])] = (share, slow["measured_gbps"] if slow else None, bad)
    return out


def _colour(share: Optional[float], need: float, bad: bool) -> str:
    if share is None:
        return "#f4a0a0" if bad else "#eeeeee"
    if share >= need and not bad:
        return "#7fcf7f"
    # from red (nothing) to amber (just under what is needed)
    t = max(0.0, min(1.0, share / need)) if need else 0.0
    return "#%02x%02x%02x" % (240, int(80 + 120 * t), 80)
