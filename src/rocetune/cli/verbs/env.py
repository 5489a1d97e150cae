"""rocetune env: the tuned environment of a host, in the dialect a job starts with."""

from __future__ import annotations

import argparse

from ...errors import ExitCode, RocetuneError
from .. import options
from ..env_result import env_result
from ..result import Result

NAME = "env"
ORDER = 15
HELP = "print or write the tuned NCCL/UCX/Gloo/MPI environment (sh, nccl.conf, systemd, docker, k8s ...)"
EXAMPLE = "rocetune env --format nccl-conf -o /etc/nccl.conf"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "the env was printed or written",
    1: "-o with --fail-on-warnings or --no-degrade: it refused to write",
}


def register(p: argparse.ArgumentParser) -> None:
    options.add_env_output(p, many=True)
    p.add_argument("--env-dir", metavar="DIR",
                   help="the files the env points at go in DIR (default: beside the first -o's "
                        "file); without -o, with --json: return the texts, write nothing")
    w = p.add_argument_group("writing (with -o)")
    w.add_argument("--check", action="store_true",
                   help="write nothing: say which files would change and how")
    w.add_argument("--diff", action="store_true",
                   help="with --json: each file's text before and after")
    w.add_argument("--mkdir", action="store_true",
                   help="create the files' missing directories")
    w.add_argument("--fail-on-warnings", action="store_true",
                   help="write nothing when the plan has warnings or findings (exit 1)")
    w.add_argument("--no-degrade", action="store_true",
                   help="write nothing when the plan falls short of the expectations or of the env "
                        "files it would replace (fewer RDMA ports, a dropped traffic class): the "
                        "files stay, the reasons are printed and kept for doctor (exit 1); the boot "
                        "unit's mode")
    w.add_argument("--doctor-config", metavar="FILE",
                   help="the node settings file: the jobs' NCCL release and env overrides, and (with "
                        "--no-degrade) the skips and grades applied to the expectations (default: "
                        "/etc/rocetune/doctor.yml under --root)")
    options.add_plan_arguments(p)


def run(args: argparse.Namespace) -> Result:
    from ...app.env import env

    outs = options.out_paths(args)
    if args.env_dir and not outs and not args.json:
        raise RocetuneError("--env-dir without -o returns texts for the caller to write: add --json, "
                            "or -o FILE to write them", code=ExitCode.USAGE)
    if not outs and (args.check or args.mkdir or args.fail_on_warnings or args.no_degrade):
        raise RocetuneError("--check, --mkdir, --fail-on-warnings and --no-degrade go with -o FILE",
                            code=ExitCode.USAGE)
    outputs = options.outputs_of(args, outs) if outs else []
    fmts = tuple(dict.fromkeys(f for f, _ in outputs)) if outputs else tuple(options.formats_of(args, None))
    done = env(options.env_request(args, fmts, outputs, env_dir=args.env_dir, check=args.check, mkdir=args.mkdir,
                                   fail_on_warnings=args.fail_on_warnings, no_degrade=args.no_degrade,
                                   config_path=args.doctor_config))
    return env_result(NAME, args, done, list(fmts), outs[0] if outs else None)
