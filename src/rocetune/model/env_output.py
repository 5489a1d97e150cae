"""A plan's env as rendered and written: the files it points at, each file a write changed (or
would), and the whole -- the plan, its texts in each dialect, the files and the writes."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .plan import Plan
from .record import Record


class PlannedFile(Record):
    """A file the env points at: where it goes and what it holds."""

    path: str
    key: str
    content: str
    _fields = ("path", "key", "content")

    def __init__(self, path: str, key: str, content: str) -> None:
        self.path = path
        self.key = key
        self.content = content


class FileWrite(Record):
    """One file `write_env` wrote, or would write: its content before and after."""

    path: str  # absolute
    content: str
    before: Optional[str]  # None: the file did not exist
    fmt: Optional[str]  # the env dialect; None for a file the env points at
    changes: List[str]  # "KEY old -> new", env files only
    backup: Optional[str]  # where an unmanaged nccl.conf was (or would be) kept
    _fields = ("path", "content", "before", "fmt", "changes", "backup")

    def __init__(self, path: str, content: str, before: Optional[str], fmt: Optional[str] = None,
                 changes: Optional[List[str]] = None, backup: Optional[str] = None) -> None:
        self.path = path
        self.content = content
        self.before = before
        self.fmt = fmt
        self.changes = [] if changes is None else changes
        self.backup = backup

    @property
    def changed(self) -> bool:
        return self.before != self.content

    def to_dict(self, diff: bool = False) -> dict:
        out = {"path": self.path, "format": self.fmt, "changed": self.changed,
               "changes": self.changes, "backup": self.backup}
        if diff:
            out.update(before=self.before, after=self.content)
        return out


class EnvResult(Record):
    plan: Plan
    texts: Dict[str, str]  # format -> env text
    files: List[PlannedFile]
    writes: List[FileWrite]  # what write_env did, files first
    nccl: Optional[Tuple[int, int, int]]  # the NCCL release planned for (None: unknown)
    _fields = ("plan", "texts", "files", "writes", "nccl")

    def __init__(self, plan: Plan, texts: Dict[str, str], files: Optional[List[PlannedFile]] = None,
                 writes: Optional[List[FileWrite]] = None, nccl: Optional[Tuple[int, int, int]] = None) -> None:
        self.plan = plan
        self.texts = texts
        self.files = [] if files is None else files
        self.writes = [] if writes is None else writes
        self.nccl = nccl

    @property
    def env_writes(self) -> List[FileWrite]:
        return [w for w in self.writes if w.fmt is not None]

    @property
    def written(self) -> List[str]:
        """Every target, env files last (each now holds its content)."""
        return [w.path for w in self.writes]

    @property
    def unchanged(self) -> List[str]:
        return [w.path for w in self.writes if not w.changed]

    def data(self, formats: List[str], out: Optional[str], diff: bool = False) -> dict:
        """The env part of a verb's JSON result: the texts (nothing written), or each file written
        (`writes`, with before/after texts under `diff`)."""
        first = self.env_writes[0] if self.env_writes else None
        return {"formats": formats, "path": first.path if first else None,
                "texts": None if out else self.texts,
                "files": [{"path": f.path, "key": f.key} for f in self.files] if out else [],
                "written": self.written, "unchanged": self.unchanged,
                "changes": first.changes if first else [], "backup": first.backup if first else None,
                "writes": [w.to_dict(diff) for w in self.writes]}

    def write_lines(self, check: bool = False) -> List[str]:
        """One line per file: written (with the variables that changed), unchanged, or (with
        `check`) would be written. With -q this is all -o prints, a line per file for a journal:
        `rocetune env -q -o FILE` in a boot unit."""
        from ..text import printable

        n = len(self.plan.decisions)
        verb = "would write" if check else "wrote"
        lines = []
        for w in self.env_writes:
            if not w.changed:
                lines.append(f"unchanged {w.path} ({w.fmt}, {n} variables)")
            elif w.changes:
                lines.append(f"{verb} {w.path} ({w.fmt}, {n} variables): changed " + ", ".join(w.changes))
            else:
                lines.append(f"{verb} {w.path} ({w.fmt}, {n} variables)")
            if w.backup:
                kept = "would keep" if check else "kept"
                lines.append(f"{kept} the previous {w.path}, which rocetune did not write, as {w.backup}")
        lines += [f"{verb if w.changed else 'unchanged'} {w.path}" for w in self.writes if w.fmt is None]
        return [printable(line) for line in lines]
