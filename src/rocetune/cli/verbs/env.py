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
                   help="for agents that write the files themselves (with --json): plan for an env "
                        "file and the files it points at in DIR, return their texts, write nothing")
    options.add_plan_arguments(p)


def run(args: argparse.Namespace) -> Result:
    from ...render.human import plan_text

    out = options.out_path(args)
    fmts = options.formats_of(args, out)
    if args.env_dir and (out or not args.json):
        raise RocetuneError("--env-dir returns texts for the caller to write: use it with --json and without -o",
                            code=ExitCode.USAGE)
    features = report.collect(args)
    env = options.plan_env_from_args(args, features, out, fmts, env_dir=args.env_dir)
    result = Result(command=NAME, data={"plan": env.plan.to_dict(), "features": features},
                    warnings=report.stderr_lines(features, env.plan, findings_too=True))
    if args.env_dir:
        result.data["env"] = {"formats": fmts, "dir": args.env_dir, "texts": env.texts,
                              "files": [{"path": f.path, "key": f.key, "content": f.content}
                                        for f in env.files]}
        return result
    if out:
        from ... import app

        app.write_env(env, fmts[0], out)
        result.human = plan_text(env.plan, args.verbose) + "\n".join(options.wrote_lines(env, fmts[0])) + "\n"
    else:
        result.raw = env.texts[fmts[0]]
    result.data["env"] = options.env_data(env, fmts, out)
    return result
