"""The one Finding type: something about a host, a plan or a file that a person should know."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Union

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """`id` is stable (documented); `subject` names what it is about (a device, a file:line).

    A finding about a file also carries `file`, `line` (1-based) and the variable `key` it is
    about, when it is about one.
    """

    id: str
    severity: str  # error | warning | info
    subject: str
    message: str
    source: str = ""          # the probe, a rule id, or "lint"
    fix: Optional[str] = None
    file: Optional[str] = None
    line: Optional[int] = None
    key: Optional[str] = None

    def to_dict(self) -> Dict[str, Union[str, int, None]]:
        out: Dict[str, Union[str, int, None]] = {"id": self.id, "severity": self.severity,
                                                 "subject": self.subject, "message": self.message}
        for name in ("source", "fix", "file", "line", "key"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        return cls(d["id"], d["severity"], d.get("subject", ""), d["message"],
                   d.get("source", ""), d.get("fix"), d.get("file"), d.get("line"), d.get("key"))

    def text(self) -> str:
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"[{self.severity}] {self.id}: {self.message}{fix}"


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)
