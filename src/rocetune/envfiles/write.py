"""A Plan as an environment file, in every dialect a GPU job can be started with.

Every dialect is deterministic (the same plan and features give the same bytes), starts with a
header naming the tool version and the features' fingerprint where the dialect has comments, puts
a `# rule: <id>` line before each variable where it can, and quotes values so that no value --
quotes, `$`, backticks, spaces, newlines -- can break out of its assignment. A value a dialect
cannot carry is refused (RocetuneError, ExitCode.OUTPUT), never mangled. Each dialect's writer
is its module's render (dialects/); docs/env-formats.md has the details of each.
"""

from __future__ import annotations

from ..errors import ExitCode, RocetuneError
from ..model.plan import Plan
from . import dialects
from .writing import refuse


def render(plan: Plan, fmt: str, features: dict) -> str:
    dialect = dialects.get(fmt)
    if dialect.render is None:  # read only (lint): as unknown to writing as a misspelt name
        raise RocetuneError(f"unknown env format {fmt!r}",
                            hint="formats: " + ", ".join(dialects.names(written=True)), code=ExitCode.USAGE)
    for d in plan.decisions:
        if "\x00" in d.value:
            refuse(fmt, d, "contains a NUL byte, which no environment can hold")
    return dialect.render(plan, features)
