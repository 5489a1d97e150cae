"""rocetune env: the tuned environment of a host, in the dialect a job starts with."""

from __future__ import annotations

import argparse

from ...errors import ExitCode, RocetuneError
from .. import options, report
from ..result import Result

NAME = "env"
ORDER = 15
HELP = "print or write the tuned NCCL/UCX/Gloo/MPI environment (sh, nccl.conf, systemd, docker, k8s ...)"


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
    options.add_plan_arguments(p)


def run(args: argparse.Namespace) -> Result:
    outs = options.out_paths(args)
    if args.env_dir and not outs and not args.json:
        raise RocetuneError("--env-dir without -o returns texts for the caller to write: add --json, "
                            "or -o FILE to write them", code=ExitCode.USAGE)
    if not outs and (args.check or args.mkdir or args.fail_on_warnings):
        raise RocetuneError("--check, --mkdir and --fail-on-warnings go with -o FILE", code=ExitCode.USAGE)
    outputs = options.outputs_of(args, outs) if outs else None
    fmts = list(dict.fromkeys(f for f, _ in outputs)) if outputs else options.formats_of(args, None)
    features = report.collect(args)
    # With -o and --env-dir both, the env goes to -o and the files it points at to DIR (an
    # nccl.conf in /etc naming a topology file in /etc/rocetune, as the rocetune_env role does).
    first = outs[0] if outs else None
    env = options.plan_env_from_args(args, features, None if args.env_dir else first, fmts,
                                     env_dir=args.env_dir)
    warnings = report.stderr_lines(features, env.plan, findings_too=True)
    found = report.all_findings(features, env.plan)
    findings = [f.to_dict() for f in found]
    result = Result(command=NAME, data={"plan": env.plan.to_dict(), "features": features, "findings": findings},
                    warnings=warnings)
    lacking = report.partial(found)
    if lacking:  # the env of what could be read is not the host's: said, exit 1, never written
        result.code = ExitCode.FINDINGS
        if outs:
            result.errors = [{"message": f"{lacking.message}; nothing was written", "hint": lacking.fix}]
            return result
    if args.env_dir and not outs:
        result.data["env"] = {"formats": fmts, "dir": args.env_dir, "texts": env.texts,
                              "files": [{"path": f.path, "key": f.key, "content": f.content}
                                        for f in env.files]}
        return result
    if not outs:
        result.raw = env.texts[fmts[0]]
        result.data["env"] = options.env_data(env, fmts, None)
        return result
    if args.fail_on_warnings and warnings:
        result.code = ExitCode.FINDINGS
        result.errors = [{"message": f"{len(warnings)} warning(s), nothing was written: " + "; ".join(warnings),
                          "hint": "fix what they name, or run without --fail-on-warnings"}]
        return result
    from ... import app

    app.write_env(env, outputs, check=args.check, make_dirs=args.mkdir)
    lines = options.write_lines(env, check=args.check)
    if args.quiet:
        result.human = "\n".join(lines) + "\n"
    else:
        from ...render.human import plan_text  # the human summary only: not for --json agents

        result.human = plan_text(env.plan, args.verbose) + "\n".join(lines) + "\n"
    result.data["env"] = options.env_data(env, fmts, first, diff=args.diff)
    result.data["env"]["check"] = args.check
    return result
