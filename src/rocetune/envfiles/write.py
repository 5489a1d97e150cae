"""A Plan as an environment file, in every format a GPU job can be started with.

Every format is deterministic (the same plan and features give the same bytes), starts with a
header naming the tool version and the features' fingerprint where the format has comments, puts
a `# rule: <id>` line before each variable where it can, and quotes values so that no value --
quotes, `$`, backticks, spaces, newlines -- can break out of its assignment. A value a format
cannot carry is refused (RocetuneError, ExitCode.OUTPUT), never mangled. docs/env-formats.md has
the details of each format.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Dict, List, Sequence

from .. import __version__
from ..errors import ExitCode, RocetuneError
from ..model.features import fingerprint
from ..model.plan import Decision, Plan
from ..text import one_line

from . import FORMATS
CONFIGMAP_NAME = "rocetune-env"
NCCL_CONF_MAX_VALUE = 1023  # NCCL reads nccl.conf values into a 1024-byte buffer
_DEEPSPEED_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]*$")


def render(plan: Plan, fmt: str, features: dict) -> str:
    if fmt not in _RENDERERS:
        raise RocetuneError(f"unknown env format {fmt!r}", hint="formats: " + ", ".join(FORMATS),
                            code=ExitCode.USAGE)
    for d in plan.decisions:
        if "\x00" in d.value:
            _refuse(fmt, d, "contains a NUL byte, which no environment can hold")
    return _RENDERERS[fmt](plan, features)


# --- helpers ---------------------------------------------------------------------------------

def header_lines(plan: Plan, features: dict, fmt: str = "sh") -> List[str]:
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


def _refuse(fmt: str, d: Decision, why: str) -> None:
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


# --- formats ---------------------------------------------------------------------------------

def _with_comments(plan: Plan, features: dict, fmt: str, line: Callable[[Decision], str],
                   extra: Sequence[str] = ()) -> str:
    out = ["# " + h for h in header_lines(plan, features, fmt)] + ["# " + one_line(x) for x in extra]
    for d in plan.decisions:
        out.append("# " + rule_comment(d))
        out.append(line(d))
    return "\n".join(out) + "\n"


def _sh(plan: Plan, features: dict) -> str:
    return _with_comments(plan, features, "sh", lambda d: f"export {d.key}={sh_quote(d.value)}")


def _nccl_conf(plan: Plan, features: dict) -> str:
    # Only NCCL reads this file (at communicator init, without overwriting the environment):
    # UCX, Gloo and MPI read their variables earlier, from the process environment.
    kept = Plan(**{**plan.__dict__, "decisions": [d for d in plan.decisions if d.key.startswith("NCCL_")]})
    for d in kept.decisions:
        if "\n" in d.value or "\r" in d.value:
            _refuse("nccl-conf", d, "spans lines; nccl.conf has one VAR=value per line and no quoting")
        if len(d.value.encode("utf-8")) > NCCL_CONF_MAX_VALUE:
            _refuse("nccl-conf", d, f"is longer than the {NCCL_CONF_MAX_VALUE} bytes NCCL reads per value")
    skipped = [d.key for d in plan.decisions if not d.key.startswith("NCCL_")]
    extra = ["not written here (only NCCL reads nccl.conf; put them in the job environment, "
             "e.g. --format sh): " + ", ".join(skipped)] if skipped else []
    return _with_comments(kept, features, "nccl-conf", lambda d: f"{d.key}={d.value}", extra)


def _systemd(plan: Plan, features: dict) -> str:
    for d in plan.decisions:
        bad = [ch for ch in d.value if _unicode_noncharacter(ch) or ch == "\ufeff"]
        if bad:
            _refuse("systemd", d, f"contains U+{ord(bad[0]):04X}, which systemd does not accept in "
                                  "environment files")
    return _with_comments(plan, features, "systemd", lambda d: f"{d.key}={systemd_quote(d.value)}")


def _unicode_noncharacter(ch: str) -> bool:
    o = ord(ch)
    return 0xFDD0 <= o <= 0xFDEF or (o & 0xFFFE) == 0xFFFE


def _docker(plan: Plan, features: dict) -> str:
    for d in plan.decisions:
        if "\n" in d.value or "\r" in d.value:
            _refuse("docker", d, "spans lines; docker --env-file takes the rest of the line verbatim "
                                 "and has no quoting")
    return _with_comments(plan, features, "docker", lambda d: f"{d.key}={d.value}")


def _deepspeed(plan: Plan, features: dict) -> str:
    lines = []
    for d in plan.decisions:
        if not _DEEPSPEED_SAFE.match(d.value):
            _refuse("deepspeed", d, "has characters DeepSpeed's launcher passes unquoted to a remote "
                                    "shell (only letters, digits and _@%+=:,./- are safe)")
        lines.append(f"{d.key}={d.value}")
    # .deepspeed_env has no comments and no blank lines: DeepSpeed splits every line on '='.
    return "\n".join(lines) + ("\n" if lines else "")


def _k8s(plan: Plan, features: dict) -> str:
    out = ["# " + h for h in header_lines(plan, features, "k8s")]
    out += [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        f"  name: {CONFIGMAP_NAME}",
        "  labels:",
        "    app.kubernetes.io/managed-by: rocetune",
        "  annotations:",
        f"    rocetune/version: {yaml_quote(__version__)}",
        f"    rocetune/features-sha256: {yaml_quote(fingerprint(features))}",
    ]
    if not plan.decisions:
        out.append("data: {}")
    else:
        out.append("data:")
        for d in plan.decisions:
            out.append("  # " + rule_comment(d))
            out.append(f"  {d.key}: {yaml_quote(d.value)}")
    return "\n".join(out) + "\n"


def _json(plan: Plan, features: dict) -> str:
    return json.dumps(plan.env, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_RENDERERS: Dict[str, Callable[[Plan, dict], str]] = {
    "sh": _sh,
    "nccl-conf": _nccl_conf,
    "systemd": _systemd,
    "docker": _docker,
    "deepspeed": _deepspeed,
    "k8s": _k8s,
    "json": _json,
}
