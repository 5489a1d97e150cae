"""What a probe touched -- files, listings, links, commands, environment -- kept so that
`rocetune capture` writes exactly what was read."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Dict, List, Set, Tuple

if TYPE_CHECKING:
    from .command import CommandResult


class Recorder:
    """Collects the host paths a probe touched and the commands it ran."""

    def __init__(self) -> None:
        self.files: Dict[str, str] = {}  # host path -> the text the probe read
        self.heads: Dict[str, bytes] = {}  # host path -> the leading bytes read of a binary file
        self.present: Set[str] = set()  # paths whose existence mattered, not their content
        self.dirs: Dict[str, List[str]] = {}
        self.links: Set[str] = set()
        self.commands: Dict[str, CommandResult] = {}
        self.blobs: Dict[str, bytes] = {}  # host path -> binary content read (ld.so.cache)
        self.strings: Dict[str, str] = {}  # host path -> what scan() found inside it
        self.environ: Dict[str, str] = {}  # variable -> value, for those the probe read and found set
        self.modes: Dict[str, int] = {}  # host path -> permission bits of a file whose content was read
        self.owners: Dict[str, Tuple[int, int, int]] = {}  # host path -> (uid, gid, mode) asked by owner()

    def note_mode(self, path: str, fd: int) -> None:
        try:
            self.modes[path] = stat.S_IMODE(os.fstat(fd).st_mode)
        except OSError:
            pass
