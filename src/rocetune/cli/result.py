"""What every verb returns, and the JSON envelope it is printed in."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..errors import ExitCode

ENVELOPE_SCHEMA = "rocetune.result/1"


@dataclass
class Result:
    command: str
    data: Dict[str, Any] = field(default_factory=dict)
    human: str = ""
    code: ExitCode = ExitCode.OK
    warnings: List[str] = field(default_factory=list)
    errors: List[Dict[str, Optional[str]]] = field(default_factory=list)
    # Raw bytes for stdout instead of the human text (an env file printed with -o -).
    raw: Optional[str] = None

    @property
    def status(self) -> str:
        if self.errors or self.code not in (ExitCode.OK,):
            return "error"
        return "warning" if self.warnings else "ok"

    def envelope(self) -> Dict[str, Any]:
        return {
            "schema": ENVELOPE_SCHEMA,
            "command": self.command,
            "status": self.status,
            "exit_code": int(self.code),
            "data": self.data,
            "warnings": self.warnings,
            "errors": self.errors,
        }


def dumps(obj: Any) -> str:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def error_result(command: str, message: str, hint: Optional[str], code: ExitCode) -> Result:
    return Result(command=command, code=code, errors=[{"message": message, "hint": hint}])
