"""What the dialects' writers share: the header, the `# rule:` comment before each variable, the
refusal of a value a dialect cannot carry, and the quoting of shell, systemd and YAML."""

from __future__ import annotations

import re
from typing import Callable, List, Sequence

from .. import __version__
from ..errors import ExitCode, RocetuneError
from ..model.features import fingerprint
from ..model.plan import Decision, Plan
from ..text import one_line


def header_lines(plan: Plan, features: dict, fmt: str) -> List[str]:
    host = ((features.get("host") or {}).get("hostname")) or "unknown host"
    qos = plan.qos.source if plan.qos else "built-in defaults"
    n_over = sum(1 for d in plan.decisions if d.rule_id == "override") + len(plan.unset)
    lines = [
        f"rocetune {__version__} format: {fmt}  NCCL/UCX environment for {host}",
        f"features sha256:{fingerprint(features)}  qos: {qos}  overrides: {n_over}",
    ]
    if plan.local_rank is not None:
        lines.append(f"local rank {plan.local_rank}")
    tools = (features.get("rdma") or {}).get("from_tools")
    if tools:
        lines.append(f"UNVERIFIED: planned from recorded tool output ('{tools}') without sysfs: "
                     "check it on the host with 'rocetune probe'")
    lines.append("generated, do not edit: explain any line with 'rocetune explain VAR'")
    return [one_line(x) for x in lines]


def rule_comment(d: Decision) -> str:
    if d.rule_id == "override":
        origin = str(d.evidence.get("origin", "user"))
        return one_line(f"rule: override ({origin})")
    return one_line(f"rule: {d.rule_id}")


def with_comments(plan: Plan, features: dict, fmt: str, line: Callable[[Decision], str],
                  extra: Sequence[str] = ()) -> str:
    """The header, then `# rule: <id>` and the assignment of each variable."""
    out = ["# " + h for h in header_lines(plan, features, fmt)] + ["# " + one_line(x) for x in extra]
    for d in plan.decisions:
        out.append("# " + rule_comment(d))
        out.append(line(d))
    return "\n".join(out) + "\n"


def refuse(fmt: str, d: Decision, why: str) -> None:
    raise RocetuneError(f"{d.key}: value {d.value!r} {why}; the {fmt} format cannot carry it",
                        hint="use --format sh or json, or change the value with --set",
                        code=ExitCode.OUTPUT)


def sh_quote(value: str) -> str:
    """POSIX single quotes: nothing inside is special; a quote is written as '\\''."""
    return "'" + value.replace("'", "'\\''") + "'"


def systemd_quote(value: str) -> str:
    """EnvironmentFile quoting: single quotes are literal; else double quotes with \\ escapes."""
    if "'" not in value:
        return "'" + value + "'"
    return '"' + re.sub(r'(["\\`$])', r"\\\1", value) + '"'


def yaml_quote(value: str) -> str:
    """A YAML double-quoted scalar (every non-printable character escaped)."""
    out = ['"']
    named = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    for ch in value:
        o = ord(ch)
        if ch in named:
            out.append(named[ch])
        elif o < 0x20 or o == 0x7f or 0x80 <= o < 0xa0 or 0xd800 <= o < 0xe000 or o in (0xfffe, 0xffff) \
                or ch in "\u2028\u2029\ufeff":
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
