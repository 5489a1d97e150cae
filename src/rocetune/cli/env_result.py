"""The env use case's answer (rocetune.app.env) as a verb's result: `env`'s, and `probe`'s when
it is asked for an env."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, List, Optional

from .result import Result

if TYPE_CHECKING:  # pragma: no cover
    from ..app.env import EnvDone


def env_result(command: str, args: argparse.Namespace, done: EnvDone, fmts: List[str], first: Optional[str],
               human: str = "", warnings: Optional[List[str]] = None) -> Result:
    """The result of `command`: the plan, the Features and the findings; the env's texts (nothing
    written), or each file written; a refusal's reasons. `human` goes before the plan's summary."""
    env = done.env
    result = Result(command=command, data={"plan": env.plan.to_dict(), "features": done.features,
                                           "findings": [f.to_dict() for f in done.findings]},
                    warnings=done.warnings if warnings is None else warnings, code=done.code, errors=done.errors)
    check = getattr(args, "check", False)
    if done.refused is not None:
        result.data["refused"] = done.refused
        result.human = "".join(line + "\n" for line in done.refusal_lines(check))
    if not done.wrote:
        if first is None and getattr(args, "env_dir", None):
            result.data["env"] = {"formats": fmts, "dir": args.env_dir, "texts": env.texts,
                                  "files": [{"path": f.path, "key": f.key, "content": f.content}
                                            for f in env.files]}
        elif first is None:
            result.raw = env.texts[fmts[0]]
            result.data["env"] = env.data(fmts, None)
        return result
    lines = env.write_lines(check=check)
    if args.quiet:
        result.human = "\n".join(lines) + "\n"
    else:
        from ..render.human import plan_text  # the human summary only: not for --json agents

        result.human = human + plan_text(env.plan, args.verbose) + "\n".join(lines) + "\n"
    result.data["env"] = env.data(fmts, first, diff=getattr(args, "diff", False))
    result.data["env"]["check"] = check
    return result
