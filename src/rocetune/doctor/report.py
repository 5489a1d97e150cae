"""A doctor run as a person reads it: failures first, each with its fix; then warnings; the
informational lines last. One exit code a scheduler's prolog can act on."""

from __future__ import annotations

from typing import List, Sequence

from ..errors import ExitCode
from ..model.finding import Finding, severity_rank
from ..text import printable

LABELS = {"error": "FAIL", "warning": "WARN", "info": "info"}


def ordered(findings: List[Finding]) -> List[Finding]:
    unique = {(f.id, f.subject, f.message): f for f in findings}
    return sorted(unique.values(), key=lambda f: (severity_rank(f.severity), f.id, f.subject))


def exit_code(findings: List[Finding]) -> ExitCode:
    """0 clean (info only), 1 any failure, 5 warnings and no failure."""
    severities = {f.severity for f in findings}
    if "error" in severities:
        return ExitCode.FINDINGS
    if "warning" in severities:
        return ExitCode.WARNINGS
    return ExitCode.OK


def not_checked(findings: List[Finding]) -> List[str]:
    """What a whole part of doctor could not hold the node to (no QoS plan, no expectations):
    said on the summary line, never only behind -v."""
    return sorted({str(f.evidence["not_checked"]) for f in findings
                   if f.severity == "info" and f.evidence and f.evidence.get("not_checked")})


def text(findings: List[Finding], host: str, verbose: int = 0, rules: Sequence[dict] = ()) -> str:
    """Failures, warnings, (with -v) notes; then every rule of the node's check configuration,
    with its reason and what it matched, whether or not anything did; then the summary."""
    shown = [f for f in findings if f.severity != "info" or verbose]
    lines = []
    for f in shown:
        lines.append(f"{LABELS.get(f.severity, f.severity):4}  {f.id:28} {printable(f.subject)}")
        lines.append(f"      {printable(f.message)}")
        if f.graded:
            lines.append(f"      graded {f.graded['from']} -> {f.severity} by {printable(f.graded['by'])}: "
                         f"{printable(f.graded['reason'])}")
        if f.fix and f.severity != "info":
            lines.append(f"      fix: {printable(f.fix)}")
    if rules:
        if lines:
            lines.append("")
        for r in rules:
            what = "skipped" if r["action"] == "skip" else f"graded {r['severity']}"
            only = f" ({', '.join(r['subjects'])})" if r["subjects"] else ""
            lines.append(f"{what} {r['id']}{only}: {printable(r['reason'])} [{printable(r['source'])}; "
                         f"{r['matched']} finding(s)]")
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    infos = len(findings) - errors - warnings
    summary = f"doctor {printable(host)}: {errors} failure(s), {warnings} warning(s)"
    if infos and not verbose:
        summary += f", {infos} note(s) (-v shows them)"
    gaps = not_checked(findings)
    if gaps:
        summary += "; not checked: " + ", ".join(printable(g) for g in gaps)
    return "\n".join(lines + ([""] if lines else []) + [summary]) + "\n"
