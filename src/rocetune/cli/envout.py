"""Env output options of `rocetune probe` (and the plan options `rocetune explain` shares).

    --format sh|nccl-conf|systemd|docker|deepspeed|k8s|json   (default: from -o's name, else sh)
    -o/--out FILE        write atomically (and the topology XML next to it); '-' = stdout
    --features FILE      plan from a saved Features JSON instead of probing
    --set KEY=VALUE      override (repeatable)      --unset KEY   drop a planned key (repeatable)
    --config FILE        overrides file (KEY=VALUE / 'unset KEY' lines)
    --qos FILE           QoS plan (default: /etc/rocetune/qos.yml under --root, if present)
    --local-rank N       add local rank N's GPU/NIC/NUMA/CPU variables
"""

from __future__ import annotations

import argparse
import os
from typing import Optional

from typing import TYPE_CHECKING

from ..errors import ExitCode, RocetuneError
from .result import Result

if TYPE_CHECKING:  # pragma: no cover
    from ..plan import Overrides, Plan
    from ..qos import QosPlan

# Kept here so that `rocetune --help` does not import the planner.
FORMATS = ("sh", "nccl-conf", "systemd", "docker", "deepspeed", "k8s", "json")
QOS_DEFAULT_PATH = "/etc/rocetune/qos.yml"
_ENV_DESTS = ("format", "out", "features", "set", "unset", "config", "qos", "local_rank")


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that decide the plan (shared by probe and explain)."""
    g = parser.add_argument_group("plan options")
    g.add_argument("--features", metavar="FILE",
                   help="plan from a saved Features JSON (rocetune probe --output json) instead of probing")
    g.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override a variable (repeatable); recorded as rule 'override'")
    g.add_argument("--unset", metavar="KEY", action="append", default=[],
                   help="drop a planned variable (repeatable)")
    g.add_argument("--config", metavar="FILE",
                   help="overrides file: KEY=VALUE and 'unset KEY' lines, '#' comments")
    g.add_argument("--qos", metavar="FILE",
                   help=f"QoS plan (default: {QOS_DEFAULT_PATH} under --root when present, "
                        "else DSCP 26/priority 3, CNP 48/6)")
    g.add_argument("--local-rank", metavar="N", type=_nonneg_int,
                   help="add the GPU, NIC, NUMA node and CPUs of local rank N")


def add_env_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("env output")
    g.add_argument("--format", choices=FORMATS,
                   help="env file format (default: guessed from -o's name, else sh)")
    g.add_argument("-o", "--out", metavar="FILE",
                   help="write the env file here, atomically ('-' = stdout); a topology XML, when "
                        "planned, goes next to it")
    add_plan_arguments(parser)


def _nonneg_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("local ranks start at 0")
    return n


def env_wanted(args: argparse.Namespace) -> bool:
    for dest in _ENV_DESTS:
        value = getattr(args, dest, None)
        if value not in (None, [], False):
            return True
    return False


def load_features_arg(args: argparse.Namespace) -> Optional[dict]:
    """The Features of --features FILE (schema_version checked), or None without the option."""
    path = getattr(args, "features", None)
    if not path:
        return None
    from ..features import load

    return load(path)


def qos_from_args(args: argparse.Namespace) -> "QosPlan":
    from ..hostfs import HostRoot
    from ..qos import default_plan, load_file, load_text

    path = getattr(args, "qos", None)
    if path:
        return load_file(path)
    root = HostRoot(getattr(args, "root", "/") or "/")
    try:
        text = root.read_text(QOS_DEFAULT_PATH)
    except Exception as exc:  # unreadable: say so rather than silently using defaults
        raise RocetuneError(f"{QOS_DEFAULT_PATH} under {root.root}: {exc}", code=ExitCode.INPUT) from None
    if text is None:
        return default_plan()
    where = QOS_DEFAULT_PATH if root.is_live else root.host_path(QOS_DEFAULT_PATH)
    return load_text(text, where)


def overrides_from_args(args: argparse.Namespace) -> "Optional[Overrides]":
    from ..plan import Overrides

    base = Overrides.from_file(args.config) if getattr(args, "config", None) else Overrides()
    cli = Overrides.from_args(getattr(args, "set", None), getattr(args, "unset", None))
    merged = base.merged(cli)
    return None if merged.empty else merged


def plan_from_args(args: argparse.Namespace, features: dict, topo_path: Optional[str] = None) -> "Plan":
    from ..plan import build_plan

    return build_plan(features, overrides_from_args(args), qos_from_args(args),
                      local_rank=getattr(args, "local_rank", None), topo_path=topo_path)


def env_result(args: argparse.Namespace, features: dict, result: Result) -> Result:
    if not env_wanted(args):
        return result
    from ..render import envfile, human

    out = getattr(args, "out", None)
    to_file = bool(out) and out != "-"
    fmt = getattr(args, "format", None) or envfile.default_format_for(out if to_file else None)
    topo_dir = os.path.dirname(os.path.abspath(out)) if to_file else None
    from ..rules.base import TOPO_FILE_NAME

    topo_path = os.path.join(topo_dir, TOPO_FILE_NAME) if topo_dir else None
    plan = plan_from_args(args, features, topo_path)
    text = envfile.render(plan, fmt, features)
    result.data["plan"] = plan.to_dict()
    result.warnings.extend(str(m) for m in plan.warnings)
    env_info = {"format": fmt, "path": os.path.abspath(out) if to_file else None, "files": [],
                "text": None if to_file else text}
    if to_file:
        _write(out, text)
        for f in plan.files:
            path = os.path.join(topo_dir, f.name)
            _write(path, f.content)
            env_info["files"].append(path)
        lines = [human.plan_text(plan, getattr(args, "verbose", 0)).rstrip("\n"),
                 human.printable(f"wrote {os.path.abspath(out)} ({fmt}, {len(plan.decisions)} variables)")]
        lines += [human.printable(f"wrote {p}") for p in env_info["files"]]
        result.human = (result.human.rstrip("\n") + "\n\n" if result.human else "") + "\n".join(lines) + "\n"
    else:
        result.raw = text
    result.data["env"] = env_info
    return result


def _write(path: str, text: str) -> None:
    from ..fsutil import atomic_write

    if os.path.isdir(path):
        raise RocetuneError(f"{path}: is a directory", hint="give -o a file name", code=ExitCode.OUTPUT)
    try:
        atomic_write(path, text, 0o644)
    except OSError as exc:
        raise RocetuneError(f"cannot write {path}: {exc.strerror or exc}",
                            hint="check that the directory exists and is writable",
                            code=ExitCode.OUTPUT) from None
