"""doctor as a scheduler's gate: `rocetune doctor --gate health-check|prolog` (docs/gate.md).

What Slurm does with each program's exit status decides the exit codes here (slurm.conf(5) and
the source at slurm-22-05-8-1):

- **Prolog**: any non-zero exit drains the node ("Prolog error") and requeues the job held
  (src/slurmd/slurmd/req.c sends ESLURMD_PROLOG_FAILED; src/slurmctld/node_mgr.c drains). So a
  prolog exits non-zero only for a node that must not run jobs: a failure, or checks that hang
  past `--timeout`. Warnings exit 0 (unless `--drain-on-warnings`), and so does a broken tool
  (bad input, exit 3; a rocetune bug, exit 70): that is not a broken node.
- **HealthCheckProgram**: slurmd only logs the exit status ("health_check failed: rc:N
  output:..."; src/slurmd/slurmd/slurmd.c); whatever is to happen to the node the program does
  itself, as LBNL NHC does: `scontrol update NodeName=N State=DRAIN Reason="rocetune: ..."`,
  and `State=RESUME` only when the gate drained it (its reason starts with `rocetune:`, the
  gate's namespace) and it is healthy again. Whose a drain is comes from core/drain_owner.py,
  which the rollout's hooks share: a node drained for another reason (an operator, NHC, the
  rollout) is left as it is. A broken tool changes nothing and exits with its own code, which
  slurmd logs with its line.

The work is pure here (an Outcome from the findings, the exit code of a mode, the action on a
node in a given state); doctor's CLI runs the checks and scontrol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..core import drain_owner
from ..core.drain_owner import NodeState
from ..errors import ExitCode

MODES = ("health-check", "prolog")
PREFIX = drain_owner.GATE  # every Reason the gate sets starts with it; only such a drain is resumed
DEFAULT_TIMEOUT = {"health-check": 45.0, "prolog": 30.0}  # slurmd kills a health check at 60 s
SLURM_RESERVE = 10.0  # of --timeout, kept for scontrol's two calls (health-check mode)

HEALTHY, WARNINGS, FAILING, TIMEOUT, TOOL_ERROR = "healthy", "warnings", "failing", "timeout", "tool-error"


@dataclass
class Outcome:
    status: str  # healthy | warnings | failing | timeout | tool-error
    reason: str  # one line, without the prefix; "" when healthy without warnings
    counts: Dict[str, int] = field(default_factory=dict)
    tool_code: int = 0  # with tool-error: the code rocetune would have exited with (2, 3, 4, 70)

    @property
    def bad_node(self) -> bool:
        return self.status in (FAILING, TIMEOUT)


def judge(findings: List[Any], drain_on_warnings: bool = False) -> Outcome:
    """The node's outcome from doctor's findings (ordered: failures first)."""
    from .report import MAX_REASON, reason

    room = MAX_REASON - len(PREFIX) - 1  # the drain reason is PREFIX, a space and this
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
    if counts["error"]:
        return Outcome(FAILING, reason(findings, "error", room), counts)
    if counts["warning"]:
        return Outcome(FAILING if drain_on_warnings else WARNINGS, reason(findings, "warning", room), counts)
    return Outcome(HEALTHY, "", counts)


def timed_out(timeout: float) -> Outcome:
    return Outcome(TIMEOUT, f"host gate-timeout: the checks did not finish within {timeout:g}s (a hung tool or "
                            "driver; `rocetune doctor -v` on the node shows which)")


def tool_error(message: str, code: int) -> Outcome:
    if code in (0, int(ExitCode.FINDINGS), int(ExitCode.WARNINGS)):
        code = int(ExitCode.INTERNAL)
    return Outcome(TOOL_ERROR, " ".join(message.split())[:300], tool_code=code)


def exit_code(mode: str, outcome: Outcome) -> int:
    """What the program exits with, as Slurm reads it for `mode` (see the module's doc)."""
    if outcome.bad_node:
        return int(ExitCode.FINDINGS)
    if outcome.status == TOOL_ERROR:
        return outcome.tool_code if mode == "health-check" else int(ExitCode.OK)
    return int(ExitCode.OK)


@dataclass
class Action:
    kind: str  # drain | resume | none
    why: str


def ours(state: NodeState) -> bool:
    """The node is held out by the gate's own drain."""
    return drain_owner.owner(state) == drain_owner.GATE_OWNED


def drain_reason(outcome: Outcome) -> str:
    return f"{PREFIX} {outcome.reason}"


def node_action(outcome: Outcome, state: NodeState) -> Action:
    """What the health check does to the node, given how Slurm sees it now (drain_owner)."""
    if outcome.status == TOOL_ERROR:
        return Action("none", "the checks could not run: the node is not judged, nothing changed")
    who = drain_owner.owner(state)
    if outcome.bad_node:
        if who == drain_owner.IN_SERVICE:
            return Action("drain", f"was {state.text}")
        if who == drain_owner.SLURM_DOWN:
            return Action("drain", f"was {state.text} ({state.reason}): drained so that a RESUME of the DOWN "
                                   "does not put it back into service")
        if who != drain_owner.GATE_OWNED:
            return Action("none", f"already {state.text} for another reason ({state.reason or 'none given'}): "
                                  "left as it is")
        if state.reason != drain_reason(outcome):
            return Action("drain", "drained by rocetune for another reason before: the reason is updated")
        return Action("none", "already drained by rocetune for this reason")
    if who == drain_owner.GATE_OWNED and state.down:
        return Action("none", f"{state.text}: healthy, but the DOWN is not rocetune's to lift; its drain goes "
                              "with the operator's RESUME")
    if who == drain_owner.GATE_OWNED:
        return Action("resume", f"drained by rocetune ({state.reason}) and healthy now")
    if state.drained:
        return Action("none", f"{state.text} for another reason ({state.reason or 'none given'}): not rocetune's "
                              "to resume")
    return Action("none", "in service")


def line(mode: str, node: str, outcome: Outcome, action: Optional[Action] = None, note: str = "",
         skipped: Sequence[str] = (), tags: Sequence[str] = ()) -> str:
    """The one line the gate prints (slurmd logs it with a non-zero exit status). The checks the
    node's configuration skipped are named: a verdict reached without them says so."""
    words = {HEALTHY: "OK", WARNINGS: "OK with warnings", FAILING: "FAIL", TIMEOUT: "FAIL",
             TOOL_ERROR: "TOOL ERROR, node not judged"}[outcome.status]
    text = f"{PREFIX} {words} {node}"
    if outcome.reason:
        text += f": {outcome.reason}"
    text += "".join(f" [{t}]" for t in tags)
    if skipped:
        text += f" [skipped by the check configuration: {', '.join(sorted(set(skipped)))}]"
    if action is not None and action.kind != "none":
        text += f" [{'drained' if action.kind == 'drain' else 'resumed'}]"
    if note:
        text += f" [{note}]"
    return text
