"""The package's entry to the one safe writer (rocetune.core.file_write): the same functions, with a
refused or failed target raised as an OutputError (a RocetuneError, exit code OUTPUT) that
`main` prints as one line. What the writer refuses and why: file_write's docstring."""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional, TypeVar

from .core import file_write as _core
from .core.file_write import (
    KEPT_BITS,
    MAX_OLD_BYTES,
    TEMP_MARK,
    UNSAFE_DIR_HINT,
    FileTargetError,
    Target,
    clean_stale_temps,
    directory_problem,
    kind_of,
)
from .errors import ExitCode, RocetuneError

_F = TypeVar("_F", bound=Callable[..., Any])


class OutputError(RocetuneError):
    """A target that cannot or must not be written (a device, a link, too large, no room)."""

    def __init__(self, path: str, why: str, hint: Optional[str] = None):
        super().__init__(f"cannot write {path}: {why}", hint=hint or "write to a regular file, or a new path",
                         code=ExitCode.OUTPUT)
        self.path = path


def _output_errors(fn: _F) -> _F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FileTargetError as exc:
            raise OutputError(exc.path, exc.why, exc.hint) from None
    return wrapper  # type: ignore[return-value]


check_directory = _output_errors(_core.check_directory)
target_stat = _output_errors(_core.target_stat)
read_old = _output_errors(_core.read_old)
read_old_text = _output_errors(_core.read_old_text)
can_create_in = _output_errors(_core.can_create_in)
write_files = _output_errors(_core.write_files)
atomic_write_bytes = _output_errors(_core.atomic_write_bytes)
atomic_write = _output_errors(_core.atomic_write)

__all__: List[str] = [
    "FileTargetError", "KEPT_BITS", "MAX_OLD_BYTES", "TEMP_MARK", "UNSAFE_DIR_HINT", "OutputError", "Target",
    "atomic_write", "atomic_write_bytes", "can_create_in", "check_directory", "clean_stale_temps", "directory_problem",
    "kind_of", "read_old", "read_old_text", "target_stat", "write_files",
]
