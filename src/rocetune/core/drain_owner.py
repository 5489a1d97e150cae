"""Who a Slurm drain belongs to, and what rocetune may do about it: one contract for the health
gate (`rocetune doctor --gate health-check`, doctor/gate.py) and the rollout's Slurm hooks
(plugins/modules/slurm_batch.py, through its copy plugins/module_utils/rocetune_drain_owner.py).
Standard library only.

A reason belongs to whoever set it, and only its owner lifts it (Slurm's own convention; LBNL
NHC's `node-mark-online` resumes a node only when the reason starts with `NHC:`). rocetune has two
namespaces, one per program, so that neither undoes the other:

- the gate: `rocetune: <finding>` (GATE);
- the rollout: `rocetune-rollout: <what>` (ROLLOUT); the gate's `rocetune:` is not a prefix of it.

Anything else (an operator's `admin: ...`, `NHC: ...`, Slurm's `Prolog error`, `Not responding`) is
someone else's: never resumed, its reason never overwritten. The one exception is Slurm's own
DOWN after a reboot it did not expect ("Node unexpectedly rebooted", written by slurmctld in
src/slurmctld/node_mgr.c, validate_node_specs(), Slurm 22.05): a node that comes back from it and
fails the gate is drained, so that the operator's RESUME of the DOWN does not put a broken node back
into service; the gate never lifts a drain from a DOWN node, the DOWN is not its own.

How Slurm shows a node (`scontrol --oneliner show node A,B` and the multi-line form; scontrol(1),
Slurm 22.05): `State=BASE[+FLAG...]` (IDLE, ALLOCATED, MIXED, DOWN ...; DRAIN, COMPLETING,
NOT_RESPONDING ...; a base ending in `*` is not responding), and `Reason=TEXT [user@time]`, which
takes the rest of its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

GATE = "rocetune:"  # every reason the health gate sets starts with it
ROLLOUT = "rocetune-rollout:"  # every reason the rollout's hooks set starts with it
# What the rollout hook wrote before it had a namespace of its own: the rollout's, not the gate's.
ROLLOUT_LEGACY = ("rocetune: fabric tuning",)
SLURM_REBOOT = "Node unexpectedly rebooted"  # slurmctld's reason (node_mgr.c, validate_node_specs)
REASON_MAX = 200  # what rocetune keeps a reason within (sinfo -R shows it whole)

IN_SERVICE, GATE_OWNED, ROLLOUT_OWNED, SLURM_DOWN, OTHERS = "in-service", "gate", "rollout", "slurm-reboot", "others"
BUSY_BASES = ("ALLOCATED", "MIXED", "COMPLETING")

# scontrol appends " [user@time]" to a reason (and, on one line, may go on with other fields).
_REASON_TAIL = re.compile(r"\s*\[([^\[\]@\s]*)@([^\[\]\s]*)\](?:\s|$)")


@dataclass
class NodeState:
    name: str
    base: str = "UNKNOWN"  # IDLE, ALLOCATED, MIXED, DOWN ...
    flags: Set[str] = field(default_factory=set)  # DRAIN, COMPLETING, NOT_RESPONDING (*), ...
    reason: Optional[str] = None  # without scontrol's [user@time]
    reason_by: Optional[str] = None  # the user in scontrol's [user@time]

    @property
    def drained(self) -> bool:
        """No new job may start: drained, draining, down or failed."""
        return "DRAIN" in self.flags or self.down or "FAIL" in self.flags

    @property
    def down(self) -> bool:
        return self.base in ("DOWN", "FAIL", "FAILING")

    @property
    def busy(self) -> bool:
        """Jobs still run (or end) on it: draining, not yet drained."""
        return self.base in BUSY_BASES or "COMPLETING" in self.flags

    @property
    def text(self) -> str:
        return "+".join([self.base] + sorted(self.flags))

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "state": self.text,
            "reason": self.reason,
            "reason_by": self.reason_by,
            "owner": owner(self),
        }


def owner(state: NodeState) -> str:
    """Whose the node's state is: IN_SERVICE (nobody holds it out), GATE_OWNED, ROLLOUT_OWNED (a
    DRAIN with that program's reason), SLURM_DOWN (DOWN after a reboot Slurm did not expect) or
    OTHERS (an operator, NHC, Slurm for any other reason)."""
    reason = state.reason or ""
    if "DRAIN" in state.flags:
        if reason.startswith(ROLLOUT) or reason in ROLLOUT_LEGACY:
            return ROLLOUT_OWNED
        if reason.startswith(GATE):
            return GATE_OWNED
        return OTHERS
    if state.down or "FAIL" in state.flags:
        return SLURM_DOWN if state.base == "DOWN" and reason == SLURM_REBOOT else OTHERS
    return IN_SERVICE


def reason_in(prefix: str, text: str) -> str:
    """`prefix text` on one printable line, at most REASON_MAX characters."""
    words = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    line = f"{prefix} {words}"
    return line if len(line) <= REASON_MAX else line[: REASON_MAX - 3].rstrip() + "..."


def parse_nodes(text: str) -> Dict[str, NodeState]:
    """`scontrol show node [-o] NAMES` (one line per node, or several lines per node that start
    with `NodeName=`) -> {name: NodeState}. A `Reason=` takes the rest of its line."""
    nodes: Dict[str, NodeState] = {}
    current: Optional[NodeState] = None
    for line in text.splitlines():
        words = line.strip()
        head, sep, reason = words.partition("Reason=")
        if sep and head and not head.endswith(" "):  # e.g. "...=xReason=": not the key
            head, reason = words, ""
        for word in head.split():
            key, value = word.split("=", 1) if "=" in word else (word, "")
            if key == "NodeName":
                current = nodes.setdefault(value, NodeState(value))
            elif key == "State" and current is not None:
                _read_state(current, value)
        if sep and current is not None and (not head or head.endswith(" ")):
            _read_reason(current, reason)
    return nodes


def _read_state(state: NodeState, value: str) -> None:
    parts = value.split("+")
    if parts[0].endswith("*"):
        state.flags.add("NOT_RESPONDING")
    state.base = parts[0].rstrip("*~#!%$@^-")
    state.flags.update(p.rstrip("*") for p in parts[1:] if p)


def _read_reason(state: NodeState, text: str) -> None:
    tails = list(_REASON_TAIL.finditer(text))  # the last one: a reason may itself hold brackets
    tail = tails[-1] if tails else None
    if tail:
        state.reason_by = tail.group(1) or None
        text = text[: tail.start()]
    state.reason = text.strip() or None


def parse_show_node(text: str, name: str) -> NodeState:
    """`scontrol show node NAME` -> its NodeState (an empty one when Slurm did not show it)."""
    return parse_nodes(text).get(name) or _single(text, name)


def _single(text: str, name: str) -> NodeState:
    """The output of one node's `show node` without its NodeName line (older captures)."""
    state = NodeState(name)
    for line in text.splitlines():
        words = line.strip()
        if words.startswith("Reason="):
            _read_reason(state, words[len("Reason=") :])
            continue
        for word in words.split():
            if word.startswith("State="):
                _read_state(state, word[len("State=") :])
    return state


# ---------------------------------------------------------------------------------------------
# The rollout: drain a batch before it changes, resume only what it drained.


@dataclass
class Step:
    """What the rollout does to one node, and why (one line an operator reads)."""

    node: str
    act: str  # drain | keep (already the rollout's) | leave (someone else's) | resume | none | fail
    why: str
    ours: bool = False  # the drain is the rollout's: it lifts it once the node passed its check


def rollout_drain(state: Optional[NodeState], node: str) -> Step:
    """Before the batch changes a node: drain it unless someone else already holds it out."""
    if state is None:
        return Step(
            node,
            "fail",
            f"{node} is not a node of this Slurm cluster (scontrol does not show it): "
            "set rocetune_slurm_node to its Slurm name",
        )
    who = owner(state)
    if who == IN_SERVICE:
        return Step(node, "drain", f"was {state.text}", ours=True)
    if who == ROLLOUT_OWNED:
        return Step(node, "keep", f"already drained by the rollout ({state.reason})", ours=True)
    return Step(
        node,
        "leave",
        f"{state.text} by {_by(state)} ({state.reason or 'no reason given'}): "
        "its reason is kept and the rollout will not resume it",
    )


def rollout_resume(
    state: Optional[NodeState], node: str, drained_with: Optional[str], passed: bool, verdict: str
) -> Step:
    """After the batch changed a node: lift the rollout's own drain when the node passed its
    check and the drain is still the one the rollout set; a failed check keeps it, saying why."""
    if drained_with is None:
        return Step(node, "none", "not drained by the rollout")
    if state is None:
        return Step(node, "fail", f"{node} is no longer shown by scontrol")
    if owner(state) != ROLLOUT_OWNED:
        return Step(
            node,
            "leave",
            f"{state.text} ({state.reason or 'no reason'}) since the rollout drained it: "
            "someone else's now, left as it is",
        )
    if state.down:
        return Step(
            node,
            "leave",
            f"{state.text}: DOWN is Slurm's or an operator's; the rollout's drain stays until they resume it",
        )
    if not passed:
        return Step(node, "fail", verdict, ours=True)
    return Step(node, "resume", verdict, ours=True)


def waiting(states: Dict[str, NodeState], names: List[str]) -> List[str]:
    """The nodes among `names` on which jobs still run."""
    return [n for n in names if n in states and states[n].busy]


def _by(state: NodeState) -> str:
    who = owner(state)
    if who == GATE_OWNED:
        return "rocetune's health gate"
    if who == SLURM_DOWN:
        return "Slurm after an unexpected reboot"
    return state.reason_by or "someone else"
