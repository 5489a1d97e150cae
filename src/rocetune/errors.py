"""The one user-facing error type and the exit-code table."""

from __future__ import annotations

import enum
from typing import Optional


class ExitCode(enum.IntEnum):
    OK = 0
    FINDINGS = 1  # the command ran, and what it checked has errors (lint, doctor)
    USAGE = 2  # bad command line
    INPUT = 3  # bad input: root, features file, config, env file
    OUTPUT = 4  # cannot write the requested output
    WARNINGS = 5  # doctor: it ran, and found warnings but no failure
    INTERNAL = 70  # a bug: rerun with --debug


class RocetuneError(Exception):
    """An error the user can act on: one line, an optional hint, an exit code."""

    def __init__(self, message: str, hint: Optional[str] = None, code: ExitCode = ExitCode.INPUT):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


class ParseError(RocetuneError):
    """A tool output or file could not be parsed."""

    def __init__(self, what: str, message: str, hint: Optional[str] = None):
        super().__init__(f"{what}: {message}", hint=hint, code=ExitCode.INPUT)
        self.what = what


class HostReadError(RocetuneError):
    """A file under the host root exists but cannot be used (unreadable, binary, a directory)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}", code=ExitCode.INPUT)
        self.path = path
        self.reason = reason
