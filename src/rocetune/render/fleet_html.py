"""`rocetune fleet report --html FILE`: one self-contained page (no script, no external asset)
that reads the same at four hosts and at a thousand:

1. the verdict, and the hosts to look at first;
2. the hosts that failed, with why; the hosts that differ, each with what differs and what the
   others hold (a list fact says what it misses: "missing mlx5_4:1");
3. each fact that differs: the value most hosts hold, and every other value with its hosts,
   named as ranges (`gpu[0001-0012,0017]`);
4. what every host agrees on, folded away.

Long lists fold (`<details>`), so the page's first screen is the verdict and the odd hosts
whatever the fleet's size. Every value is escaped (hostnames and values come from the nodes);
the bytes depend only on the report (no timestamp)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from .. import __version__
from ..fleet.compare import Report, expected_text, reasons, show
from ..text import html_text

_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:75em}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top;text-align:left;font-size:90%;
overflow-wrap:anywhere}
th{background:#eee}
table.facts{width:100%;table-layout:fixed}
table.facts col.fact{width:18%}
table.facts col.ref{width:37%}
.verdict{font-size:130%;padding:.5em .8em;border-radius:.3em;display:inline-block}
.verdict-pass{background:#7fcf7f}
.verdict-fail{background:#f4a0a0}
td.odd{background:#fdd}
td.host{white-space:nowrap;font-weight:bold}
tr.failed td{background:#fcc}
.why{display:block;font-weight:normal;color:#555;font-size:85%}
.hosts{font-family:monospace}
summary{cursor:pointer;margin:.3em 0}
"""
SHOWN_HOSTS = 100  # rows of the per-host tables before the rest fold away
SHOWN_NAMES = 60  # host names in a range list before the rest fold away


def _e(value: object) -> str:
    return html_text(value)  # controls and bidi overrides as visible escapes, then HTML-escaped


_NAME = re.compile(r"^(.*?)(\d+)$")


def host_ranges(names: Sequence[str]) -> str:
    """Host names as Slurm writes node lists: `gpu[0001-0003,0007],login1`, consecutive numbers
    of one prefix joined. Zero-padded numbers keep their width (`gpu0012` and `gpu12` are two
    hosts); unpadded ones join whatever their length (`n[0-2,10]`). Names without a number stay
    as they are. Order: as given, each group where its first name stands."""
    parsed = [(name, _NAME.match(name)) for name in names]
    padded = {(m.group(1), len(m.group(2))) for _, m in parsed if m and m.group(2).startswith("0")
              and len(m.group(2)) > 1}
    groups: Dict[Tuple[str, int], List[int]] = {}
    order: List[Tuple[str, Optional[Tuple[str, int]]]] = []  # (a name as it is, or a group's key)
    for name, m in parsed:
        if not m:
            order.append((name, None))
            continue
        width = len(m.group(2)) if (m.group(1), len(m.group(2))) in padded else 0
        key = (m.group(1), width)
        if key not in groups:
            groups[key] = []
            order.append(("", key))
        groups[key].append(int(m.group(2)))
    out = []
    for name, group in order:
        if group is None:
            out.append(name)
            continue
        prefix, width = group
        numbers = sorted(set(groups[group]))
        spans, start = [], numbers[0]
        for prev, cur in zip(numbers, numbers[1:] + [-1]):
            if cur != prev + 1:
                spans.append(f"{start:0{width}d}" + (f"-{prev:0{width}d}" if prev != start else ""))
                start = cur
        out.append(f"{prefix}{spans[0]}" if len(spans) == 1 and "-" not in spans[0]
                   else f"{prefix}[{','.join(spans)}]")
    return ",".join(out)


def _hosts(names: Sequence[str]) -> str:
    """A host list for the page: ranges, and beyond SHOWN_NAMES names the rest folded."""
    if len(names) <= SHOWN_NAMES:
        return f'<span class="hosts">{_e(host_ranges(names))}</span>'
    head, rest = names[:SHOWN_NAMES], names[SHOWN_NAMES:]
    return (f'<span class="hosts">{_e(host_ranges(head))}</span><details><summary>and {len(rest)} more</summary>'
            f'<span class="hosts">{_e(host_ranges(rest))}</span></details>')


def report_html(report: Report, title: str = "rocetune fleet report") -> str:
    ok = [h for h in report.hosts if h.ok]
    failed, differing = report.failed, report.differing
    look = [h.host for h in failed] + differing
    out: List[str] = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        f"<h1>{_e(title)}</h1>",
    ]
    n = len(report.hosts)
    if report.clean:
        out.append(f'<p><span class="verdict verdict-pass">PASS</span> all {n} host(s) agree'
                   + (f" and meet the manifest's {report.manifest_checks} check(s)" if report.manifest_checks else "")
                   + (f", sharing {len(report.shared)} warning(s)" if report.shared else "") + ".</p>")
    else:
        out.append(f'<p><span class="verdict verdict-fail">FAIL</span> {len(look)} of {n} host(s) need a look: '
                   f"{len(failed)} failed, {len(differing)} differ.</p>")
        out.append(f"<p>Look first at: {_hosts(look)}</p>")
    out.append(f"<p>rocetune {_e(__version__)}; {len(report.rows)} fact(s) compared over the {len(ok)} host(s) "
               "that answered; a fact's reference is the value more hosts hold than any other.</p>")
    if failed:
        out += ["<h2>Failed</h2>", "<table>", "<tr><th>host</th><th>why</th></tr>"]
        out += _fold_rows([f'<tr class="failed"><td class="host">{_e(h.host)}</td><td>{_e(h.error)}</td></tr>'
                           for h in failed], "failed hosts")
    if differing:
        out += ["<h2>Hosts that differ</h2>", "<table>", "<tr><th>host</th><th>what differs (its value; what is "
                                                         "expected)</th></tr>"]
        rows = []
        for host in differing:
            items = []
            for row in report.drift_of(host):
                cell = row.cells[host]
                why = expected_text(reasons(row, cell))
                detail = f'<span class="why">{_e(cell.fact.detail)}</span>' if cell.fact.detail else ""
                items.append(f"<strong>{_e(row.label)}</strong>: {_e(show(cell.fact.value, cell.fact.known))}"
                             f"{' &mdash; ' + _e(why) if why else ''}{detail}")
            rows.append(f'<tr><td class="host">{_e(host)}</td><td class="odd">{"<br>".join(items)}</td></tr>')
        out += _fold_rows(rows, "hosts that differ")
    if report.shared:  # agreed on, and still warnings
        out += ["<h2>Warnings every host shares</h2>", "<table>", "<tr><th>warning</th><th>what doctor said</th></tr>"]
        for r in report.shared:
            detail = next((c.fact.detail for c in r.cells.values() if c.fact.detail), "") or ""
            out.append(f'<tr><td class="odd">{_e(r.label)}</td><td>{_e(detail)}</td></tr>')
        out.append("</table>")
    drifting = [r for r in report.rows if r.drift]
    if drifting:
        out += ["<h2>Facts that differ</h2>", '<table class="facts">', '<col class="fact"><col class="ref"><col>',
                "<tr><th>fact</th><th>most hosts</th><th>other values, and the hosts that hold them</th></tr>"]
        for row in drifting:
            ref = (f"{_e(show(row.reference))} <span class=\"why\">{row.holders} of {row.known} hosts</span>"
                   if row.has_reference else "(no value held by most hosts)")
            groups: Dict[str, List[str]] = {}
            shown: Dict[str, str] = {}
            for host, cell in row.cells.items():
                if not cell.drift:
                    continue
                key = repr(cell.fact.value) + str(cell.fact.known)
                groups.setdefault(key, []).append(host)
                shown[key] = show(cell.fact.value, cell.fact.known)
            others = "<br>".join(f"<strong>{_e(shown[k])}</strong> on {len(hs)}: {_hosts(hs)}"
                                 for k, hs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))
            out.append(f"<tr><th>{_e(row.label)}</th><td>{ref}</td><td class=\"odd\">{others}</td></tr>")
        out.append("</table>")
    agreed = [r for r in report.rows if not r.drift and r.has_reference]
    if agreed:
        out += [f"<details><summary>Agreed by every host that answered ({len(agreed)} facts)</summary>", "<table>",
                "<tr><th>fact</th><th>value</th></tr>"]
        out += [f"<tr><th>{_e(r.label)}</th><td>{_e(show(r.reference))}</td></tr>" for r in agreed]
        out += ["</table>", "</details>"]
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _fold_rows(rows: List[str], what: str) -> List[str]:
    """The rows of an open table (its header already out): the first SHOWN_HOSTS, then the rest
    in a folded table of their own."""
    if len(rows) <= SHOWN_HOSTS:
        return rows + ["</table>"]
    return (rows[:SHOWN_HOSTS] + ["</table>", f"<details><summary>{len(rows) - SHOWN_HOSTS} more {what}</summary>",
                                  "<table>"] + rows[SHOWN_HOSTS:] + ["</table>", "</details>"])
