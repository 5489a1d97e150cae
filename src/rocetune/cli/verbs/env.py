"""rocetune env: the tuned environment of a host, in the dialect a job starts with."""

from __future__ import annotations

import argparse

from ...errors import ExitCode, RocetuneError
from .. import options, report
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
    outs = options.out_paths(args)
    if args.env_dir and not outs and not args.json:
        raise RocetuneError("--env-dir without -o returns texts for the caller to write: add --json, "
                            "or -o FILE to write them", code=ExitCode.USAGE)
    if not outs and (args.check or args.mkdir or args.fail_on_warnings or args.no_degrade):
        raise RocetuneError("--check, --mkdir, --fail-on-warnings and --no-degrade go with -o FILE",
                            code=ExitCode.USAGE)
    outputs = options.outputs_of(args, outs) if outs else []
    from ... import app

    # checked first, whether or not --no-degrade uses it: a bad file fails before any planning
    config = app.check_config(args.root, args.doctor_config) if args.doctor_config else None
    fmts = list(dict.fromkeys(f for f, _ in outputs)) if outputs else options.formats_of(args, None)
    features = report.collect(args)
    # With -o and --env-dir both, the env goes to -o and the files it points at to DIR (an
    # nccl.conf in /etc naming a topology file in /etc/rocetune, as the rocetune_env role does).
    first = outs[0] if outs else None
    env = app.plan_env_for(features, fmts, options.plan_request(args),
                           out=None if args.env_dir else first, env_dir=args.env_dir)
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
        result.data["env"] = env.data(fmts, None)
        return result
    if args.fail_on_warnings and warnings:
        result.code = ExitCode.FINDINGS
        result.errors = [{"message": f"{len(warnings)} warning(s), nothing was written: " + "; ".join(warnings),
                          "hint": "fix what they name, or run without --fail-on-warnings"}]
        return result
    if args.no_degrade:
        refused = _refuse_degraded(args, env, outputs, result, config)
        if refused:
            return refused
    app.write_env(env, outputs, check=args.check, make_dirs=args.mkdir)
    if not args.check:
        app.accept_written(args.root, [path for _, path in outputs])
    lines = env.write_lines(check=args.check)
    if args.quiet:
        result.human = "\n".join(lines) + "\n"
    else:
        from ...render.human import plan_text  # the human summary only: not for --json agents

        result.human = plan_text(env.plan, args.verbose) + "\n".join(lines) + "\n"
    result.data["env"] = env.data(fmts, first, diff=args.diff)
    result.data["env"]["check"] = args.check
    return result


def _refuse_degraded(args: argparse.Namespace, env, outputs, result: Result, config):
    """The result of a refusal (nothing written, the record kept for doctor), or None when the
    plan is not short."""
    from ... import app

    refused = app.refuse_degraded(env, outputs, args.root, config, check=args.check)
    if refused is None:
        return None
    reasons = refused["reasons"]
    files = [path for _, path in outputs]
    result.data["refused"] = refused
    verb = "would refuse" if args.check else "refused"
    result.code = ExitCode.FINDINGS
    result.human = "".join(f"{verb} to replace the env: {r}\n" for r in reasons)
    result.errors = [{"message": f"{verb} to replace {', '.join(files)} with a degraded env, which stays "
                                 "as it was: " + "; ".join(reasons),
                      "hint": "repair what is named, then rerun (systemctl restart rocetune-env); to accept "
                              "the node as it is, run once without --no-degrade"}]
    return result
