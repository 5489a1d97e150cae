"""Options shared by several verbs, and the Result parts they produce.

Words that cannot be mixed up: `--json` picks the result format (the JSON envelope), `--format FMT`
the env dialect, `-o/--out FILE` the file to write.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, List, Optional

from ..envfiles import FORMATS, default_format_for
from ..errors import ExitCode, RocetuneError
from ..text import printable

if TYPE_CHECKING:  # pragma: no cover
    from ..app import EnvResult

_RESULT_WORDS = ("json", "human")


def add_plan_arguments(parser: argparse.ArgumentParser, features: bool = True) -> None:
    """The options that decide the plan (env, probe, explain)."""
    g = parser.add_argument_group("plan options")
    if features:
        g.add_argument("--features", metavar="FILE",
                       help="plan from a saved Features file (rocetune probe --json) instead of probing")
    g.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override a variable (repeatable); recorded as rule 'override'")
    g.add_argument("--unset", metavar="KEY", action="append", default=[],
                   help="drop a planned variable (repeatable)")
    g.add_argument("--config", metavar="FILE",
                   help="overrides file: KEY=VALUE and 'unset KEY' lines, '#' comments")
    g.add_argument("--qos", metavar="FILE",
                   help="QoS plan (default: /etc/rocetune/qos.yml under --root when present)")
    g.add_argument("--local-rank", metavar="N", type=_nonneg_int,
                   help="add the GPU, NIC, NUMA node and CPUs of local rank N")
    g.add_argument("--nccl-version", metavar="X.Y.Z", type=nccl_release,
                   help="plan for this NCCL release instead of the lowest found on the host (a job "
                        "whose NCCL is elsewhere: a container image, a wheel not on the host)")


def add_env_output(parser: argparse.ArgumentParser, many: bool = False) -> None:
    g = parser.add_argument_group("env output")
    if many:
        g.add_argument("--format", choices=FORMATS, action="append", default=[], metavar="FMT",
                       help="env dialect: " + ", ".join(FORMATS) + " (default: from -o's name, else "
                            "sh; repeat with --json to get several)")
    else:
        g.add_argument("--format", choices=FORMATS, metavar="FMT",
                       help="env dialect: " + ", ".join(FORMATS) + " (default: from -o's name, else sh)")
    g.add_argument("-o", "--out", metavar="FILE",
                   help="write the env here, atomically, with any file it points at beside it "
                        "('-' = stdout)")


def nccl_release(text: str) -> str:
    import re

    if not re.match(r"^\d+\.\d+\.\d+$", text):
        raise argparse.ArgumentTypeError(f"expected an NCCL release like 2.21.5, got {text!r}")
    return text


def _nonneg_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("local ranks start at 0")
    return n


def out_path(args: argparse.Namespace) -> Optional[str]:
    """-o's file, or None for stdout; `-o json` is refused as the likely slip it is."""
    out = getattr(args, "out", None)
    if not out or out == "-":
        return None
    if out in _RESULT_WORDS:
        raise RocetuneError(f"-o {out}: -o names the file to write, not the result format",
                            hint=f"use --json for a JSON result, or -o ./{out} for a file named {out}",
                            code=ExitCode.USAGE)
    return out


def formats_of(args: argparse.Namespace, out: Optional[str]) -> List[str]:
    fmts = args.format if isinstance(args.format, list) else ([args.format] if args.format else [])
    if not fmts:
        fmts = [default_format_for(out)]
    if len(fmts) > 1 and not getattr(args, "json", False):
        raise RocetuneError("several --format values need --json (one env text each)",
                            code=ExitCode.USAGE)
    if len(fmts) > 1 and out:
        raise RocetuneError("-o writes one env file: give one --format", code=ExitCode.USAGE)
    return list(dict.fromkeys(fmts))


def plan_env_from_args(args: argparse.Namespace, features: dict, out: Optional[str],
                       formats: List[str], env_dir: Optional[str] = None) -> "EnvResult":
    """Plan for -o's directory (files written), for --env-dir (the caller writes them), or for
    stdout (files not written)."""
    from .. import app

    if out:
        env_dir = os.path.dirname(os.path.abspath(out))
    return app.plan_env(features, formats, env_dir=env_dir,
                        user=app.overrides(args.config, args.set, args.unset),
                        qos=app.qos_plan(args.root, args.qos), local_rank=args.local_rank,
                        files_will_be_written=bool(out or env_dir))


def env_data(env: "EnvResult", formats: List[str], out: Optional[str]) -> dict:
    return {"formats": formats, "path": os.path.abspath(out) if out else None,
            "texts": None if out else env.texts,
            "files": [{"path": f.path, "key": f.key} for f in env.files] if out else [],
            "written": env.written}


def wrote_lines(env: "EnvResult", fmt: str) -> List[str]:
    n = len(env.plan.decisions)
    lines = [printable(f"wrote {env.written[-1]} ({fmt}, {n} variables)")]
    lines += [printable(f"wrote {p}") for p in env.written[:-1]]
    return lines
