"""A doctor run as a person reads it: failures first, each with its fix; then warnings; the
informational lines last. One exit code a scheduler's prolog can act on."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ..errors import ExitCode
from ..model.finding import Finding, counts_text, finding_lines, severity_rank, shown
from ..text import printable


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
    lines = [line for f in shown(findings, verbose) for line in finding_lines(f, verbose)]
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


MAX_REASON = 200  # scontrol's Reason, sinfo -R and a syslog line all show it whole


def reason(findings: List[Finding], severity: str = "error") -> str:
    """One printable line naming the first finding of `severity` (findings in `ordered` order)
    and how many more there are: `doctor-rail-mtu-mismatch enp64s0np0: enp64s0np0 has MTU
    1500, the other rails 9000: ... (+2 more)`. Empty when there is none."""
    picked = [f for f in findings if f.severity == severity]
    if not picked:
        return ""
    first = picked[0]
    more = f" (+{len(picked) - 1} more)" if len(picked) > 1 else ""
    head = f"{first.id} {first.subject}: " if first.subject else f"{first.id}: "
    text = " ".join(printable(head + first.message).split())
    room = MAX_REASON - len(more)
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
COMPACT_KEYS = ("summary", "findings", "fleet_facts", "env", "deployed_env", "expect", "qos", "counters",
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
