"""rocetune env: the tuned environment of a host, in the dialect a job starts with."""

from __future__ import annotations

import argparse

from .. import options, report
from ..result import Result

NAME = "env"
ORDER = 15
HELP = "print or write the tuned NCCL/UCX/Gloo/MPI environment (sh, nccl.conf, systemd, docker, k8s ...)"


def register(p: argparse.ArgumentParser) -> None:
    options.add_env_output(p, many=True)
    options.add_plan_arguments(p)


def run(args: argparse.Namespace) -> Result:
    from ...render.human import plan_text

    out = options.out_path(args)
    fmts = options.formats_of(args, out)
    features = report.collect(args)
    env = options.plan_env_from_args(args, features, out, fmts)
    result = Result(command=NAME, data={"plan": env.plan.to_dict()},
                    warnings=report.stderr_lines(features, env.plan, findings_too=True))
    if out:
        from ... import app

        app.write_env(env, fmts[0], out)
        result.human = plan_text(env.plan, args.verbose) + "\n".join(options.wrote_lines(env, fmts[0])) + "\n"
    else:
        result.raw = env.texts[fmts[0]]
    result.data["env"] = options.env_data(env, fmts, out)
    return result
