"""One command's result, and the file name its recording has under a root's `commands/`."""

from __future__ import annotations

from typing import List, Sequence


class CommandResult:
    """What a command printed and returned; `found=False` when the tool is absent."""

    __slots__ = ("argv", "found", "returncode", "stdout", "stderr", "reason")

    def __init__(self, argv: List[str], found: bool, returncode: int = 0, stdout: str = "",
                 stderr: str = "", reason: str = ""):
        self.argv, self.found, self.returncode = argv, found, returncode
        self.stdout, self.stderr, self.reason = stdout, stderr, reason

    @property
    def ok(self) -> bool:
        return self.found and self.returncode == 0


def recording_name(argv: Sequence[str]) -> str:
    """File name of a recorded command: argv joined by `_`, `/` written as `%2F`."""
    return "_".join(a.replace("%", "%25").replace("/", "%2F") for a in argv)
