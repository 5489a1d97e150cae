"""`rocetune fleet report --html FILE`: one self-contained page (no script, no external asset),
hosts by facts, the odd hosts and values highlighted. Every value is escaped (hostnames and
values come from the nodes); the bytes depend only on the report (no timestamp)."""

from __future__ import annotations

from html import escape
from typing import List

from .. import __version__
from ..fleet.compare import Report, expected_text, reasons, show

_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top;text-align:left;font-size:90%}
th{background:#eee}
td.odd,td.split,td.failing,td.manifest{background:#fdd;font-weight:bold}
td.unknown{color:#888}
tr.failed td{background:#fcc}
th.oddhost{background:#f99}
.detail{display:block;font-weight:normal;color:#555;font-size:85%}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def report_html(report: Report, title: str = "rocetune fleet report") -> str:
    ok = [h for h in report.hosts if h.ok]
    out: List[str] = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{len(report.hosts)} host(s): {len(report.failed)} failed, {len(report.differing)} differ"
        f". rocetune {_e(__version__)}.</p>",
    ]
    if report.failed:
        out += ["<h2>Failed</h2>", "<table>", "<tr><th>host</th><th>why</th></tr>"]
        out += [f'<tr class="failed"><td>{_e(h.host)}</td><td>{_e(h.error)}</td></tr>' for h in report.failed]
        out.append("</table>")
    entries = report.entries()
    if entries:
        out += ["<h2>Differs</h2>", "<table>",
                "<tr><th>host</th><th>fact</th><th>value</th><th>expected</th></tr>"]
        for e in entries:
            detail = f'<span class="detail">{_e(e["detail"])}</span>' if e["detail"] else ""
            out.append(f'<tr><td>{_e(e["host"])}</td><td>{_e(e["label"])}</td>'
                       f'<td class="odd">{_e(show(e["value"], e["known"]))}{detail}</td>'
                       f'<td>{_e(expected_text(e["reasons"]))}</td></tr>')
        out.append("</table>")
    if ok:
        out += ["<h2>All facts</h2>", "<table>", "<tr><th>fact</th><th>most hosts</th>" + "".join(
            f'<th class="{"oddhost" if report.drift_of(h.host) else "host"}">{_e(h.host)}</th>' for h in ok) + "</tr>"]
        for row in report.rows:
            ref = show(row.reference) if row.has_reference else "(no value held by most hosts)"
            cells = []
            for h in ok:
                cell = row.cells[h.host]
                cls = "manifest" if cell.missed and cell.status == "ok" else cell.status
                title_ = expected_text(reasons(row, cell))
                attr = f' title="{_e(title_)}"' if title_ else ""
                cells.append(f'<td class="{cls}"{attr}>{_e(show(cell.fact.value, cell.fact.known))}</td>')
            out.append(f"<tr><th>{_e(row.label)}</th><td>{_e(ref)}</td>{''.join(cells)}</tr>")
        out.append("</table>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
