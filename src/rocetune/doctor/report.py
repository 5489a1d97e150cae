"""A doctor run as a person reads it: failures first, each with its fix; then warnings; the
informational lines last. One exit code a scheduler's prolog can act on."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Sequence

from ..errors import ExitCode
from ..model.finding import Finding, counts_text, finding_lines, severity_rank, shown
from ..text import printable


def ordered(findings: List[Finding]) -> List[Finding]:
    """Failures and warnings as faults, the root cause first with what follows from it under it
    (rocetune.doctor.causes); the notes last."""
    from .causes import ordered as by_cause

    unique = {(f.id, f.subject, f.message): f for f in findings}
    return by_cause(sorted(unique.values(), key=lambda f: (severity_rank(f.severity), f.id, f.subject)))


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
    from .causes import faults

    related = {id(root): rest for root, rest in faults(findings) if rest}
    lines = []
    for f in shown(findings, verbose):
        lines += finding_lines(f, verbose)
        if id(f) in related:  # one fault, several findings: what follows from this one is listed next
            lines.append("      with it (below): " + ", ".join(f"{printable(r.id)} {printable(r.subject)}"
                                                       for r in related[id(f)]))
    if rules:
        if lines:
            lines.append("")
        for r in rules:
            what = "skipped" if r["action"] == "skip" else f"graded {r['severity']}"
            only = f" ({', '.join(r['subjects'])})" if r["subjects"] else ""
            lines.append(f"{what} {r['id']}{only}: {printable(r['reason'])} [{printable(r['source'])}; "
                         f"{r['matched']} finding(s)]")
    summary = f"doctor {printable(host)}: {counts_text(findings, verbose)}"
    gaps = not_checked(findings)
    if gaps:
        summary += "; not checked: " + ", ".join(printable(g) for g in gaps)
    return "\n".join(lines + ([""] if lines else []) + [summary]) + "\n"


MAX_REASON = 200  # Slurm's Reason as scontrol, sinfo -R and a syslog line show it whole, prefix included
# The reason's grammar (docs/gate.md, "The drain reason"): PREFIX, a space, then
#   SUBJECT " " CHECK ": " DETAIL [" (+" N " more)"]
# SUBJECT the device the fault is on (mlx5_4, enp79s0np0, 0000:4f:00.0, GPU2) or what the finding
# is about (a file, `host`), without spaces; CHECK a check id (docs/checks/); DETAIL printable
# text, cut with "..." to fit; N the other faults of the same severity.
REASON_RE = re.compile(r"^(?P<prefix>\S+:) (?P<subject>\S+) (?P<check>[a-z0-9][a-z0-9-]*): (?P<detail>.*?)"
                       r"(?: \(\+(?P<more>[0-9]+) more\))?$")


def reason(findings: List[Finding], severity: str = "error", limit: int = MAX_REASON) -> str:
    """One printable line of at most `limit` characters naming the root of the first fault of
    `severity` -- its device first, then its check and what it says -- and how many other faults
    there are: `mlx5_4 expect-rails: rail mlx5_4:1 is missing: ... (+2 more)`. Empty when there
    is none. `limit` leaves room for the prefix the gate puts before it."""
    from .causes import device, faults

    roots = [root for root, _ in faults(findings) if root.severity == severity]
    if not roots:
        return ""
    first = roots[0]
    more = f" (+{len(roots) - 1} more)" if len(roots) > 1 else ""
    subject = "_".join(printable(first.subject if device(first) else first.subject or "host").split())
    detail = " ".join(printable(first.message).split())
    for lead in (f"{first.subject}: ", f"{subject}: "):
        if first.subject and detail.startswith(lead):
            detail = detail[len(lead):]
    text = f"{subject} {first.id}: {detail}"
    room = limit - len(more)
    if len(text) > room:
        text = text[:room - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."
    return text + more


def summary(findings: List[Finding], host: str, code: int) -> Dict[str, Any]:
    """The verdict in a few fields: counts, the exit code and the one-line reason of the first
    failure (else of the first warning)."""
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    return {"host": host, "errors": errors, "warnings": warnings, "notes": len(findings) - errors - warnings,
            "exit_code": code, "reason": reason(findings, "error") or reason(findings, "warning")}


# What doctor's JSON holds without -v: the verdict and what a fleet compares, not the whole
# Features and plan (docs/doctor.md, "JSON").
COMPACT_KEYS = ("summary", "findings", "faults", "fleet_facts", "env", "deployed_env", "expect", "qos", "counters",
                "check_config", "skipped", "nccl_log", "metrics")


COMPACT_BUDGET = 20_000  # bytes of JSON: a thousand nodes' results fit in 20 MB


def compact(data: Dict[str, Any], budget: int = COMPACT_BUDGET) -> Dict[str, Any]:
    """doctor's data without the Features, the plan (its env is kept) and the raw readings.

    A node with very many findings still stays within `budget`: the evidence of notes goes
    first, then the notes themselves, then the evidence of warnings, then of failures; what was
    dropped is counted in `trimmed` (-v keeps everything)."""
    import json

    out = {k: data[k] for k in COMPACT_KEYS if k in data}
    out["env"] = dict((data.get("plan") or {}).get("env") or {})

    def size() -> int:
        return len(json.dumps(out, sort_keys=True, ensure_ascii=False))

    if size() <= budget:
        return out
    findings = [dict(f) for f in out.get("findings") or []]
    out["findings"] = findings
    trimmed = {"evidence": 0, "notes": 0}
    out["trimmed"] = trimmed

    def drop_evidence(severity: str) -> None:
        for f in out["findings"]:
            if f.get("severity") == severity and f.get("evidence"):
                f["evidence"] = None
                trimmed["evidence"] += 1

    drop_evidence("info")
    if size() > budget:
        kept = [f for f in findings if f.get("severity") != "info"]
        trimmed["notes"] = len(findings) - len(kept)
        out["findings"] = kept
    for severity in ("warning", "error"):
        if size() > budget:
            drop_evidence(severity)
    return out
