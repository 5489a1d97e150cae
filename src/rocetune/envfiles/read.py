"""Read environment settings back out of the files people keep them in.

The inverse of rocetune.envfiles.write, and more: `rocetune lint` reads env files of every format, nccl.conf,
job scripts (`export` lines, `VAR=x cmd` prefixes, `mpirun -x VAR=x`, `docker run -e VAR=x`),
Dockerfile `ENV` lines and the fenced code blocks of Markdown notes; `rocetune explain` reads the
`# rule: <id>` comments of a file rocetune generated. Each format is read the way its consumer
reads it: NCCL takes the rest of an nccl.conf line verbatim (quotes included), a shell removes
quotes and expands `$`, systemd has its own quoting, docker none.

The format is recognised by detect.py; each dialect's module (dialects/) has its reader, the
shell's (read_shell.py) on top of a lexer of its own (shell_lexer.py).

Nothing here executes anything. A shell value that depends on expansion (`$VAR`, `$(cmd)`,
backticks, `~`) is marked dynamic and not checked; `$((...))` with only numbers is evaluated the
way the shell would; Jinja placeholders (`{{ x }}`) are marked as templates.
"""

from __future__ import annotations

import re

from . import dialects
from .detect import detect, format_by_name, header
from .parsed import ParsedFile


def parse_text(text: str, fmt: str = "auto", name: str = "") -> ParsedFile:
    """Read `text` as `fmt` ("auto": as its content, then its name, says)."""
    if fmt == "auto":
        fmt, why, by_name = detect(text, name)
    else:
        why, by_name = "forced", format_by_name(name)
    out = ParsedFile(fmt, detected=why, name_format=by_name)
    dialects.get(fmt).read(text, out)
    m = re.search(r"features sha256:([0-9a-f]{12})", header(text))
    out.features_hash = m.group(1) if m else None
    return out
