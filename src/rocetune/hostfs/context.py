"""What a probe source gets: the root, the runner, and a place for its warnings."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ..errors import HostReadError
from .root import HostRoot
from .runners import runner_for


class SourceStatus:
    """Whether a source could run, why not, and what it noticed on the way."""

    def __init__(self) -> None:
        self.ok = True
        self.reason: Optional[str] = None
        self.warnings: List[str] = []
        self.failed: Optional[str] = None  # the exception class when the source's reader crashed

    def to_dict(self) -> dict:
        out = {"ok": self.ok, "reason": self.reason, "warnings": sorted(set(self.warnings))}
        if self.failed:
            out["failed"] = self.failed
        return out


class ProbeContext:
    """What a source gets: the root, the runner, and a place for warnings."""

    def __init__(self, root: HostRoot, runner=None):
        self.root = root
        self.runner = runner if runner is not None else runner_for(root)
        self.status = SourceStatus()

    def for_source(self) -> ProbeContext:
        return ProbeContext(self.root, self.runner)

    def warn(self, message: str) -> None:
        self.status.warnings.append(message)

    def text(self, path: str) -> Optional[str]:
        try:
            return self.root.read_text(path)
        except HostReadError as exc:
            self.warn(f"cannot read {exc.path}: {exc.reason}")
            return None

    def attr(self, path: str) -> Optional[str]:
        """A sysfs attribute: stripped text, None when missing, empty or unreadable."""
        try:
            text = self.root.read_text(path)
        except HostReadError as exc:
            self.warn(f"cannot read {exc.path}: {exc.reason}")
            return None
        if text is None:
            return None
        return text.strip() or None

    def attrs(self, directory: str, names: Sequence[str], quiet: Sequence[str] = ()) -> Dict[str, Optional[str]]:
        """attr() of each `directory/name`, read in one batch (HostRoot.read_texts). Those named
        in `quiet` are None without a warning when unreadable (a down link's speed: EINVAL)."""
        texts, errors = self.root.read_texts(directory, names)
        out: Dict[str, Optional[str]] = {}
        for name in names:
            exc = errors.get(name)
            if exc is not None:
                if name not in quiet:
                    self.warn(f"cannot read {exc.path}: {exc.reason}")
                out[name] = None
            else:
                text = texts.get(name)
                out[name] = (text.strip() or None) if text is not None else None
        return out

    def int_attr(self, path: str, base: int = 0) -> Optional[int]:
        return self.int_of(path, self.attr(path), base)

    def int_of(self, path: str, text: Optional[str], base: int = 0) -> Optional[int]:
        """The number an attribute's text (read already, e.g. by attrs) says; None, with a
        warning, when it is not one."""
        if text is None:
            return None
        try:
            return int(text, base)
        except ValueError:
            self.warn(f"{path}: expected a number, got {text[:40]!r}")
            return None
