"""Options shared by several verbs, and their mapping onto the requests the app layer serves.

Words that cannot be mixed up: `--json` picks the result format (the JSON envelope), `--format FMT`
the env dialect, `-o/--out FILE` the file to write.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Iterator, List, Optional

from ..errors import ExitCode, RocetuneError

if TYPE_CHECKING:  # pragma: no cover
    from ..app.env import EnvRequest
    from ..app.planning import PlanRequest

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
    g.add_argument("--expect", metavar="FILE",
                   help="what the node should be (default: /etc/rocetune/expect.yml under --root when "
                        "present; docs/expect.md): the plan is held to it")
    g.add_argument("--local-rank", metavar="N", type=_nonneg_int,
                   help="add the GPU, NIC, NUMA node and CPUs of local rank N")
    g.add_argument("--nccl-version", metavar="X.Y.Z", type=nccl_release,
                   help="plan for this NCCL release instead of the lowest found on the host (a job "
                        "whose NCCL is elsewhere: a container image, a wheel not on the host)")


def add_env_output(parser: argparse.ArgumentParser, many: bool = False) -> None:
    g = parser.add_argument_group("env output")
    dialect_help = "env dialect: %(choices)s (default: from -o's name, else %(fallback)s)"
    if many:
        fmt = g.add_argument("--format", choices=_WrittenDialects(), action="append", default=[],
                             metavar="FMT", help=dialect_help + "; repeat with --json to get several, "
                                                                "or with as many -o to write each")
        fmt.fallback = _Fallback()  # type: ignore[attr-defined]  # read by the help formatter
        g.add_argument("-o", "--out", metavar="FILE", action="append", default=[],
                       help="write the env here, atomically, with any file it points at beside it "
                            "('-' = stdout); repeat, one per --format, to write several dialects "
                            "of one plan")
        return
    fmt = g.add_argument("--format", choices=_WrittenDialects(), metavar="FMT", help=dialect_help)
    fmt.fallback = _Fallback()  # type: ignore[attr-defined]
    g.add_argument("-o", "--out", metavar="FILE",
                   help="write the env here, atomically, with any file it points at beside it "
                        "('-' = stdout)")


class _WrittenDialects:
    """--format's choices, asked of the dialect registry only when a value is checked or the help
    printed: a verb run without --format (`--json probe`) never loads the dialects."""

    def __contains__(self, name: object) -> bool:
        from ..app.env import dialect_names

        return name in dialect_names(written=True)

    def __iter__(self) -> Iterator[str]:
        from ..app.env import dialect_names

        return iter(dialect_names(written=True))


class _Fallback:
    """The dialect written when -o's name claims none, for --format's help (%(fallback)s)."""

    def __str__(self) -> str:
        from ..app.env import fallback_dialect

        return fallback_dialect()


def nccl_release(text: str) -> str:
    import re

    if not re.match(r"^\d+\.\d+\.\d+\Z", text):
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
    outs = out_paths(args)
    if len(outs) > 1:
        raise RocetuneError("-o names one file here", code=ExitCode.USAGE)
    return outs[0] if outs else None


def out_paths(args: argparse.Namespace) -> List[str]:
    """Every -o file (stdout's '-' left out)."""
    given = getattr(args, "out", None)
    given = given if isinstance(given, list) else ([given] if given else [])
    outs = [o for o in given if o != "-"]
    if outs and len(outs) != len(given):
        raise RocetuneError("-o - (stdout) cannot be mixed with files", code=ExitCode.USAGE)
    for out in outs:
        if out in _RESULT_WORDS:
            raise RocetuneError(f"-o {out}: -o names the file to write, not the result format",
                                hint=f"use --json for a JSON result, or -o ./{out} for a file named {out}",
                                code=ExitCode.USAGE)
    return outs


def formats_of(args: argparse.Namespace, out: Optional[str]) -> List[str]:
    fmts = args.format if isinstance(args.format, list) else ([args.format] if args.format else [])
    if not fmts:
        from ..app.env import dialect_for

        fmts = [dialect_for(out)]
    if len(fmts) > 1 and not getattr(args, "json", False):
        raise RocetuneError("several --format values need --json (one env text each)",
                            code=ExitCode.USAGE)
    if len(fmts) > 1 and out:
        raise RocetuneError("-o writes one env file: give one --format", code=ExitCode.USAGE)
    return list(dict.fromkeys(fmts))


def outputs_of(args: argparse.Namespace, outs: List[str]) -> List[tuple]:
    """(format, file) for each -o: the n-th --format goes with the n-th -o; one -o may take its
    format from its name."""
    from ..app.env import dialect_for

    fmts = list(args.format)
    if len(outs) == 1 and len(fmts) <= 1:
        return [(fmts[0] if fmts else dialect_for(outs[0]), outs[0])]
    if len(fmts) != len(outs):
        raise RocetuneError(f"{len(outs)} -o files and {len(fmts)} --format values: give one "
                            "--format per -o, in the same order", code=ExitCode.USAGE)
    return list(zip(fmts, outs))


def plan_request(args: argparse.Namespace) -> PlanRequest:
    """The plan options of a verb's command line as the one request every verb plans with."""
    from ..app.planning import PlanRequest

    return PlanRequest(root=args.root, config=args.config, sets=tuple(args.set), unsets=tuple(args.unset),
                       qos_path=args.qos, local_rank=args.local_rank, expect_path=getattr(args, "expect", None),
                       settings_path=getattr(args, "doctor_config", None))


def env_request(args: argparse.Namespace, formats: tuple, outputs: list, **writing) -> EnvRequest:
    """The env use case's request of a verb's command line: the plan options, the dialects, the
    (dialect, file) pairs to write and the `writing` options (env's --check, --no-degrade ...)."""
    from ..app.env import EnvRequest

    return EnvRequest(plan_request(args), getattr(args, "features", None), getattr(args, "nccl_version", None),
                      formats=formats, outputs=tuple(outputs), **writing)
