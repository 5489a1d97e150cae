"""Where NCCL reads its settings, and in which order.

NCCL sets each `NAME=value` line of its config files with setenv(name, value, 0): a variable
already in the process environment wins, then the first file read, then the next. It reads
$NCCL_CONF_FILE when set, else ~/.nccl.conf, then /etc/nccl.conf (src/misc/param.cc,
initEnv/setEnvFile). A line is a comment when it starts with '#'; the name is the text before
the first '=' and the value the rest of the line, verbatim (quotes and spaces included).
"""

from __future__ import annotations

import os
from typing import Dict, Iterator, List, Optional, Tuple

from ..errors import RocetuneError
from ..hostfs.root import HostRoot

SYSTEM_CONF = "/etc/nccl.conf"
ENVIRONMENT = "process environment"

Layer = Tuple[str, Dict[str, str]]


def conf_lines(text: str) -> Iterator[Tuple[int, str, Optional[str]]]:
    """(line number, name, value) for every non-comment line; value None when the line has no '='."""
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            continue
        if "=" not in line:
            if line.strip():
                yield lineno, line, None
            continue
        key, value = line.split("=", 1)
        yield lineno, key, value


def conf_values(text: str) -> Dict[str, str]:
    """NCCL's reading of one config file: the first occurrence of a name wins."""
    out: Dict[str, str] = {}
    for _, key, value in conf_lines(text):
        if value is not None:
            out.setdefault(key, value)
    return out


def conf_file_paths(environ: Optional[Dict[str, str]], home: Optional[str]) -> List[Tuple[str, str]]:
    """(path, label) of the files NCCL reads, in order."""
    out: List[Tuple[str, str]] = []
    user_file = (environ or {}).get("NCCL_CONF_FILE")
    if user_file:
        out.append((user_file, f"NCCL_CONF_FILE={user_file}"))
    elif home:
        path = os.path.join(home, ".nccl.conf")
        out.append((path, path))
    out.append((SYSTEM_CONF, SYSTEM_CONF))
    return out


def layers(root: HostRoot, environ: Optional[Dict[str, str]], home: Optional[str]) -> List[Layer]:
    """The places NCCL reads settings from, highest precedence first: (label, values)."""
    out: List[Layer] = []
    if environ is not None:
        out.append((ENVIRONMENT, dict(environ)))
    for path, label in conf_file_paths(environ, home):
        if not path.startswith("/"):
            continue
        try:
            text = root.read_text(path)
        except RocetuneError:
            text = None
        if text is not None:
            out.append((label, conf_values(text)))
    return out


def effective(key: str, found: List[Layer]) -> Tuple[Optional[str], Optional[str]]:
    """(value, where) NCCL ends up with; config files only matter for NCCL_* names."""
    for label, values in found:
        if label != ENVIRONMENT and not key.startswith("NCCL_"):
            continue
        if key in values:
            return values[key], label
    return None, None
