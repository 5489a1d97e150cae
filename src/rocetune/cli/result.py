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
        """error: the command failed (errors[] says why). findings: it ran, and what it checked
        has error findings (data.findings, exit 1). warning: it ran, with warnings or warning
        findings. ok: nothing to report."""
        if self.errors:
            return "error"
        if self.code == ExitCode.FINDINGS:
            return "findings"
        if self.code == ExitCode.WARNINGS:
            return "warning"
        if self.code != ExitCode.OK:
            return "error"
        findings = self.data.get("findings") if isinstance(self.data, dict) else None
        if self.warnings or any(isinstance(f, dict) and f.get("severity") == "warning"
                                for f in findings or ()):
            return "warning"
        return "ok"

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
    """Deterministic JSON on one line (sorted keys; the C encoder, so large Features stay fast),
    with what a terminal would act on escaped (text.json_text) and no NaN or Infinity, which
    are not JSON (a ValueError: the readers refuse them, so none reaches here)."""
    from ..text import json_text

    return json_text(json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)) + "\n"


def error_result(command: str, message: str, hint: Optional[str], code: ExitCode) -> Result:
    return Result(command=command, code=code, errors=[{"message": message, "hint": hint}])
