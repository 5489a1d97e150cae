"""A host as a person should see it: every finding -- the host checks' and the plan's -- in one
list, most severe first, each once; and what the sources could not read, one line each."""

from __future__ import annotations

from typing import List

from ..model.finding import Finding, partial, severity_rank

__all__ = ["all_findings", "partial", "source_warnings", "warning_lines"]


def all_findings(features: dict, plan) -> List[Finding]:
    from ..checks import host_findings

    found = host_findings(features)
    if plan is not None:
        found += plan.findings
    unique = {(f.id, f.subject, f.message): f for f in found}
    return sorted(unique.values(), key=lambda f: (severity_rank(f.severity), f.id, f.subject))


def warning_lines(features: dict, plan, findings_too: bool) -> List[str]:
    """Warnings for stderr: unreadable sources, and (when stdout carries an env rather than the
    findings) the findings that matter -- the rules' warnings among them."""
    out = _grouped(source_warnings(features))
    if findings_too:  # stdout carries an env, not the findings: they come here
        out += [f"{f.id}: {f.message}" for f in all_findings(features, plan) if f.severity != "info"]
    return out


def source_warnings(features: dict) -> List[str]:
    """What the sources could not read, one line each ("<source>: <why>")."""
    out = []
    for name, st in sorted(features["sources"].items()):
        if not st["ok"]:
            out.append(f"{name}: {st['reason']}")
        out.extend(f"{name}: {w}" for w in st["warnings"])
    return out


def _grouped(lines: List[str]) -> List[str]:
    """`pci: X` and `net: X` become `pci, net: X`: one line per distinct problem."""
    by_reason: dict = {}
    for line in lines:
        source, sep, reason = line.partition(": ")
        key = reason if sep else line
        by_reason.setdefault(key, []).append(source if sep else None)
    out = []
    for reason, sources in by_reason.items():
        named = [s for s in sources if s]
        out.append(f"{', '.join(named)}: {reason}" if named else reason)
    return out
