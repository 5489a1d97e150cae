"""The one Finding type: something about a host, a plan or a file that a person should know."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """`id` is stable (documented); `subject` names what it is about (a device, a file:line)."""

    id: str
    severity: str  # error | warning | info
    subject: str
    message: str
    source: str = ""          # the probe, a rule id, or "lint"
    fix: Optional[str] = None

    def to_dict(self) -> Dict[str, Optional[str]]:
        out = {"id": self.id, "severity": self.severity, "subject": self.subject, "message": self.message}
        if self.source:
            out["source"] = self.source
        if self.fix:
            out["fix"] = self.fix
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        return cls(d["id"], d["severity"], d.get("subject", ""), d["message"],
                   d.get("source", ""), d.get("fix"))

    def text(self) -> str:
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"[{self.severity}] {self.id}: {self.message}{fix}"


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)
