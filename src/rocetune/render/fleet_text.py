"""`rocetune fleet report` for people: failed gathers, then every host and value that differs
(marked `!`), then what the whole fleet agrees on."""

from __future__ import annotations

from ..fleet.compare import Report, expected_text, show
from ..text import printable, table


def report_text(report: Report, verbose: int = 0) -> str:
    ok = [h for h in report.hosts if h.ok]
    lines = [f"fleet: {len(report.hosts)} host(s), {len(report.failed)} failed, "
             f"{len(report.differing)} differ" + (f", {len(report.shared)} warning(s) shared by all"
                                                   if report.shared else "")
             + (f", {report.manifest_checks} manifest check(s)" if report.manifest_checks else "")]
    if report.failed:
        lines += ["", "FAILED"]
        lines += ["  " + line for line in table([["!", h.host, h.error or ""] for h in report.failed])]
    entries = report.entries()
    if entries:
        lines += ["", "DIFFERS (host, what it costs a job, fact, its value, what is expected)"]
        rows = [["!" if e["impact"] != "bookkeeping" else ".", e["host"], e["impact"], e["label"],
                 show(e["value"], e["known"]), expected_text(e["reasons"])] for e in entries]
        for e, line in zip(entries, table(rows)):
            lines.append("  " + line)
            if e["detail"]:  # what doctor said, not only its ids; whole with -v
                detail = printable(e["detail"])
                lines.append("       " + (detail if verbose or len(detail) <= 160 else detail[:157] + "..."))
    shared = report.shared
    if shared:
        lines += ["", f"SHARED by all {len(ok)} host(s) that answered: warnings every host has"]
        for r in shared:
            detail = next((c.fact.detail for c in r.cells.values() if c.fact.detail), "") or ""
            lines.append(f"  ! {r.label}" + (f": {printable(detail)}" if detail else ""))
    agreed = [r for r in report.rows if not r.drift and r.has_reference and r.known == len(ok) and r not in shared]
    if agreed and ok:
        lines += ["", f"AGREED on all {len(ok)} host(s) that answered"]
        lines += ["  " + line for line in table([[r.label, show(r.reference)] for r in agreed])]
    unknown = [r for r in report.rows if not r.drift and r.known < len(ok)]
    if unknown and verbose:
        lines += ["", "NOT KNOWN on every host"]
        lines += ["  " + line for line in table(
            [[r.label, ", ".join(h for h, c in r.cells.items() if not c.fact.known)] for r in unknown])]
    return "\n".join(lines) + "\n"


def expect_text(fe, path: str) -> str:
    """What --write-expect wrote: how many hosts voted, the fields left out, who dissented."""
    lines = ["", f"EXPECTATIONS written to {printable(path)}: the majority of {len(fe.hosts)} host(s)"]
    if fe.majority.undecided:
        lines.append("  left out (no value held by most hosts): " + ", ".join(fe.majority.undecided))
    for path_, values in sorted(fe.dissent().items()):
        if path_ in fe.majority.undecided:
            continue
        for value, hosts in sorted(values.items()):
            shown = ", ".join(hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
            lines.append(f"  {path_}: {printable(value)} on {shown}")
    for host, why in sorted(fe.left_out.items()):
        lines.append(f"  did not vote: {printable(host)}: {printable(why)}")
    return "\n".join(lines) + "\n"
