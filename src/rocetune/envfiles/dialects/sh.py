"""sh: `export K='v'` lines for job scripts to source; read back as bash reads any script
(export lines, `VAR=x cmd` prefixes, `mpirun -x VAR=x` ...: ..read_shell)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from ..parsed import ParsedFile
from .base import Dialect

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "sh"
_SH_SIGNS = re.compile(
    r"(?m)^#!.*\bsh\b|^[^\S\n]*(?:export|declare|typeset|readonly|local|unset|source|set|if|then|fi|for|"
    r"while|do|done|case|esac|function|mpirun|srun|torchrun|deepspeed|python3?|exec|cd|echo|env)"
    r"(?:\s|$)|\$\(|\$\{|`|<<")


def render(plan: Plan, features: dict) -> str:
    from ..writing import sh_quote, with_comments

    return with_comments(plan, features, NAME, lambda d: f"export {d.key}={sh_quote(d.value)}")


def read(text: str, out: ParsedFile) -> None:
    from ..read_shell import read_sh

    read_sh(text, out)


def detect(text: str) -> Optional[str]:
    sh = _SH_SIGNS.search(text)
    if not sh:
        return None
    return f"shell syntax on line {text.count(chr(10), 0, sh.start()) + 1} ({sh.group(0).strip()!r})"


DIALECT = Dialect(
    NAME, listed=10, precedence=70, read=read, render=render,
    file_patterns=("*.sh", "*.bash", "*.sbatch", "*.slurm"), detect=detect, fallback=True,
    consumer="the shell", keeps_cr=True,
)
