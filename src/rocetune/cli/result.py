"""What every verb returns, and the JSON envelope it is printed in."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ..errors import ExitCode

ENVELOPE_SCHEMA = "rocetune.result/1"


class Result:
    """What a verb did: data for JSON, text for humans, an exit code, warnings and errors."""

    def __init__(self, command: str, data: Optional[Dict[str, Any]] = None, human: str = "",
                 code: ExitCode = ExitCode.OK, warnings: Optional[List[str]] = None,
                 errors: Optional[List[Dict[str, Optional[str]]]] = None, raw: Optional[str] = None):
        self.command = command
        self.data = data if data is not None else {}
        self.human = human
        self.code = code
        self.warnings = warnings if warnings is not None else []
        self.errors = errors if errors is not None else []
        # Bytes for stdout instead of the human text (an env file printed without -o).
        self.raw = raw

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
    """Deterministic JSON on one line (sorted keys; the C encoder, so large Features stay fast)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n"


def error_result(command: str, message: str, hint: Optional[str], code: ExitCode) -> Result:
    return Result(command=command, code=code, errors=[{"message": message, "hint": hint}])
