"""rocetune explain: why a variable has its value, from which rule and which host facts.

    rocetune explain                     every planned variable, its rule and reason
    rocetune explain NCCL_IB_HCA         the value, the rule, the reason and the evidence
    rocetune explain VAR --effective     also what NCCL will really use: the process environment,
                                         then $NCCL_CONF_FILE (or ~/.nccl.conf), then /etc/nccl.conf
    rocetune explain --env FILE [VAR]    explain a file rocetune generated (its '# rule:' comments)

Explaining one variable also shows the findings about it (a finding whose subject is the
variable, or whose message names it), each with its fix and its page docs/checks/<id>.md.

The plan comes from --features FILE, or from probing --root; the plan options of `rocetune env`
(--set, --unset, --config, --qos, --local-rank) apply, so explain shows exactly what env emits.
"""

from __future__ import annotations

import argparse

from .. import options
from ..result import Result

NAME = "explain"
ORDER = 30
HELP = "explain a planned variable: its value, the rule that chose it and the host facts behind it"
EXAMPLE = "rocetune explain NCCL_IB_HCA"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "the variable was explained (or, without VAR, every planned variable listed)",
}


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("var", nargs="?", metavar="VAR", help="variable to explain (default: all)")
    p.add_argument("--effective", action="store_true",
                   help="also show what NCCL will really use, given its precedence: process env > "
                        "$NCCL_CONF_FILE or ~/.nccl.conf > /etc/nccl.conf (read through --root)")
    p.add_argument("--env", metavar="FILE", dest="env_file",
                   help="explain an env file rocetune generated instead of planning")
    options.add_plan_arguments(p)


def run(args: argparse.Namespace) -> Result:
    from ...app.explain import ExplainRequest, explain
    from ...render.explain_text import explain_text

    done = explain(ExplainRequest(options.plan_request(args), getattr(args, "features", None),
                                  getattr(args, "nccl_version", None), args.var, args.effective, args.env_file))
    return Result(command=NAME, data=done.data, warnings=done.warnings,
                  human=explain_text(done.data, args.effective, getattr(args, "verbose", 0)))
