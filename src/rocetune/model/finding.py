"""The one Finding type: something about a host, a plan or a file that a person should know.

Findings are made by the check registry (rocetune.checks), which fills in what every finding of
an id shares (its fix when the producer has no better one, its source, its kind)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
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
    evidence: Optional[Dict[str, Any]] = None
    rule: Optional[str] = None
    file: Optional[str] = None
    line: Optional[int] = None
    key: Optional[str] = None
    # Set when the node's check configuration skipped or re-graded it: {"action": skip|grade,
    # "from": the check's severity, "reason", "by": the file or --skip} (rocetune.checks.config).
    graded: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "severity": self.severity, "subject": self.subject,
                               "message": self.message, "kind": self.kind, "source": self.source,
                               "fix": self.fix}
        for name in ("evidence", "rule", "file", "line", "key", "graded"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out

    def text(self) -> str:
        return f"[{self.severity}] {self.id}: {self.message}"


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)
