"""The one Finding type: something about a host, a plan or a file that a person should know.

Findings are made by the check registry (rocetune.checks), which fills in what every finding of
an id shares (its fix when the producer has no better one, its source, its kind)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .record import FrozenRecord

SEVERITIES = ("error", "warning", "info")
LABELS = {"error": "FAIL", "warning": "WARN", "info": "info"}


class Finding(FrozenRecord):
    """`id` is a registered check (docs/checks/<id>.md); `subject` names what it is about (a
    device, a file:line); `evidence` what was read (a file, a command, a Features field, the
    value); `fix` what to do; `source` the reference behind the check (an NCCL release and file,
    an NCCL issue, a vendor's document); `kind` where it was found (host, rule, lint, doctor);
    `rule` the rule that left it (rule findings).

    A finding about a file also carries `file`, `line` (1-based) and the variable `key` it is
    about, when it is about one.
    """

    id: str
    severity: str  # error | warning | info
    subject: str
    message: str
    kind: str
    source: str
    fix: str
    evidence: Optional[Dict[str, Any]]
    rule: Optional[str]
    file: Optional[str]
    line: Optional[int]
    key: Optional[str]
    # Set when the node's check configuration skipped or re-graded it: {"action": skip|grade,
    # "from": the check's severity, "reason", "by": the file or --skip} (rocetune.checks.config).
    graded: Optional[Dict[str, Any]]

    _fields = ("id", "severity", "subject", "message", "kind", "source", "fix", "evidence", "rule",
               "file", "line", "key", "graded")

    def __init__(self, id: str, severity: str, subject: str, message: str, kind: str, source: str,
                 fix: str, evidence: Optional[Dict[str, Any]] = None, rule: Optional[str] = None,
                 file: Optional[str] = None, line: Optional[int] = None, key: Optional[str] = None,
                 graded: Optional[Dict[str, Any]] = None) -> None:
        self._set(id, severity, subject, message, kind, source, fix, evidence, rule, file, line, key,
                  graded)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "severity": self.severity, "subject": self.subject,
                               "message": self.message, "kind": self.kind, "source": self.source,
                               "fix": self.fix}
        for name in ("evidence", "rule", "file", "line", "key", "graded"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out



def partial(findings: Sequence[Finding]) -> Optional[Finding]:
    """The root-unreadable finding among `findings` (the probe could not read part of the plan's
    evidence): a verb that reads a host exits 1 with it and writes no env file."""
    return next((f for f in findings if f.id == "root-unreadable"), None)


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


# --- the one way findings read as text (probe, doctor, qos check, lint) ------------------------
def finding_lines(f: Finding, verbose: int = 0) -> List[str]:
    """`LABEL  id  subject`, then the message, how the node's check configuration re-graded it,
    and the fix (an error's and a warning's; with -v a note's too, and the check's page)."""
    from ..text import printable

    lines = [f"{LABELS.get(f.severity, f.severity):4}  {f.id:28} {printable(f.subject)}",
             f"      {printable(f.message)}"]
    if f.graded:
        lines.append(f"      graded {f.graded['from']} -> {f.severity} by {printable(f.graded['by'])}: "
                     f"{printable(f.graded['reason'])}")
    if f.fix and (f.severity != "info" or verbose):
        lines.append(f"      fix: {printable(f.fix)}")
    if verbose:
        lines.append(f"      page: docs/checks/{f.id}.md")
    return lines


def shown(findings: Sequence[Finding], verbose: int = 0) -> List[Finding]:
    """What a text shows: notes only with -v."""
    return [f for f in findings if f.severity != "info" or verbose]


def counts_text(findings: Sequence[Finding], verbose: int = 0) -> str:
    """`E failure(s), W warning(s)[, N note(s)]`, counting every finding whether shown or not."""
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    notes = len(findings) - errors - warnings
    text = f"{errors} failure(s), {warnings} warning(s)"
    if notes:
        text += f", {notes} note(s)" + ("" if verbose else " (-v shows them)")
    return text
