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
                   help="the files the env points at go in DIR (default: beside -o's file); "
                        "without -o, for agents that write the files themselves (with --json): "
                        "return the texts, write nothing")
    options.add_plan_arguments(p)


def run(args: argparse.Namespace) -> Result:
    out = options.out_path(args)
    fmts = options.formats_of(args, out)
    if args.env_dir and not out and not args.json:
        raise RocetuneError("--env-dir without -o returns texts for the caller to write: add --json, "
                            "or -o FILE to write them", code=ExitCode.USAGE)
    features = report.collect(args)
    # With -o and --env-dir both, the env goes to -o and the files it points at to DIR (an
    # nccl.conf in /etc naming a topology file in /etc/rocetune, as the rocetune_env role does).
    env = options.plan_env_from_args(args, features, None if args.env_dir else out, fmts,
                                     env_dir=args.env_dir)
    findings = [f.to_dict() for f in report.all_findings(features, env.plan)]
    result = Result(command=NAME, data={"plan": env.plan.to_dict(), "features": features, "findings": findings},
                    warnings=report.stderr_lines(features, env.plan, findings_too=True))
    if args.env_dir and not out:
        result.data["env"] = {"formats": fmts, "dir": args.env_dir, "texts": env.texts,
                              "files": [{"path": f.path, "key": f.key, "content": f.content}
                                        for f in env.files]}
        return result
    if out:
        from ... import app
        from ...render.human import plan_text  # the human summary only: not for --json agents

        app.write_env(env, fmts[0], out)
        lines = write_lines(env, fmts[0])
        result.human = "\n".join(lines) + "\n" if args.quiet else \
            plan_text(env.plan, args.verbose) + "\n".join(lines) + "\n"
    else:
        result.raw = env.texts[fmts[0]]
    result.data["env"] = options.env_data(env, fmts, out)
    if out:
        result.data["env"].update(unchanged=env.unchanged, changes=env.changes, backup=env.backup)
    return result


def write_lines(env, fmt: str) -> list:
    """One line per file: written (with the variables that changed) or unchanged. With -q this
    is all -o prints, one line for a journal: `rocetune env -q -o FILE` in a boot unit."""
    from ...text import printable

    path, n = env.written[-1], len(env.plan.decisions)
    if path in env.unchanged:
        lines = [f"unchanged {path} ({fmt}, {n} variables)"]
    elif env.changes:
        lines = [f"wrote {path} ({fmt}, {n} variables): changed " + ", ".join(env.changes)]
    else:
        lines = [f"wrote {path} ({fmt}, {n} variables)"]
    if env.backup:
        lines.append(f"kept the previous {path}, which rocetune did not write, as {env.backup}")
    lines += [f"{'unchanged' if p in env.unchanged else 'wrote'} {p}" for p in env.written[:-1]]
    return [printable(line) for line in lines]
