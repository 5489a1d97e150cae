"""The plan as text for a terminal: a table of variables, then warnings and (verbose) notes."""

from __future__ import annotations

from typing import List

from ..plan import Plan


def printable(text: object) -> str:
    """Escape control characters so a hostile value cannot drive the terminal."""
    out = []
    for ch in str(text):
        o = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif o < 0x20 or o == 0x7f or 0x80 <= o < 0xa0:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


def table(rows: List[List[str]], header: List[str]) -> List[str]:
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(header)).rstrip()]
    for r in rows:
        lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
    return lines


def plan_text(plan: Plan, verbose: int = 0) -> str:
    lines: List[str] = []
    if plan.decisions:
        lines += table([[d.key, d.value, d.rule_id] for d in plan.decisions],
                       ["VARIABLE", "VALUE", "RULE"])
    else:
        lines.append("no variables planned")
    for u in plan.unset:
        lines.append(printable(f"unset {u['key']} ({u['origin']})"))
    for f in plan.files:
        lines.append(printable(f"file {f.name} (for {f.key}, rule {f.rule_id})"))
    if plan.ranks and (verbose or plan.local_rank is not None):
        lines.append("")
        lines += table([[str(r["local_rank"]), f"GPU{r['gpu']}", r["gpu_bus_id"] or "-",
                         str(r["numa_node"]) if r["numa_node"] is not None else "-",
                         r["cpus"] or "-", r["nic"] or "-"] for r in plan.ranks],
                       ["RANK", "GPU", "BUS ID", "NUMA", "CPUS", "NIC"])
    if verbose and plan.notes:
        lines.append("")
        lines += [printable(f"note: {m}") for m in plan.notes]
    return "\n".join(lines) + "\n"
