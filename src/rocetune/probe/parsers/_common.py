"""Helpers shared by the parsers: input checks, ANSI stripping, the no-other-exception guard."""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, List, Optional, TypeVar

from ...errors import ParseError

F = TypeVar("F", bound=Callable[..., Any])

# CSI sequences (colours, underline: ESC [ 4 m ... ESC [ 0 m) and two-byte escapes.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")

# Bytes that never occur in the outputs we read; NUL and friends become spaces so that
# a corrupted capture is parsed as text, not choked on. Tab, LF, CR are kept.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")

BUG_PREFIX = "unexpected parser failure"


def as_text(text: Any, what: str) -> str:
    """The input as str: bytes are decoded (UTF-8, bad bytes replaced); anything else is an error."""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError(what, f"expected text, got {type(text).__name__}")
    return text


def clean(text: str) -> str:
    """Drop ANSI escape sequences and turn stray control bytes into spaces."""
    return _CONTROL_RE.sub(" ", _ANSI_RE.sub("", text))


def require_content(text: str, what: str) -> None:
    if not text.strip():
        raise ParseError(what, "empty output")


def snippet(line: str, limit: int = 60) -> str:
    """A short, printable rendering of a line for warnings."""
    line = line.strip()
    if len(line) > limit:
        line = line[: limit - 3] + "..."
    return repr(line)


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return snippet(line, 120)
    return "''"


def add_warning(warnings: List[str], message: str) -> None:
    if message not in warnings:
        warnings.append(message)


def guarded(what: str) -> Callable[[F], F]:
    """Turn any exception other than ParseError into a ParseError.

    The parsers are written not to fail; this is the last line of defence for the contract
    "a parser raises ParseError or returns data". The message starts with BUG_PREFIX so that
    tests (and users reading a report) can tell a parser bug from bad input.
    """

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except ParseError:
                raise
            except Exception as exc:  # noqa: BLE001 - the contract is ParseError only
                raise ParseError(what, f"{BUG_PREFIX} ({type(exc).__name__}: {exc}); "
                                       "please report this with the input") from exc

        return inner  # type: ignore[return-value]

    return wrap


def leading_number(value: Optional[str]) -> Optional[float]:
    """400 from '400 Gb/sec (4X NDR)' or '400'; None when the text does not start with a number."""
    if not value:
        return None
    m = re.match(r"\s*(\d{1,7}(?:\.\d{1,6})?)", value)
    if not m:
        return None
    number = float(m.group(1))
    return int(number) if number.is_integer() else number
