"""Build the Plan: run every rule over one Features document, refuse two rules deciding the
same key, apply the user's overrides last (recorded as such)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from .checks.binding import emits
from .errors import ExitCode, RocetuneError
from .model.plan import Decision, Message, Overrides, Plan
from .model.qos import QosPlan
from .nccl.catalog import load_catalog
from .rules import RULES
from .rules.base import RuleContext


@emits("qos-plan-questionable")
def build_plan(features: dict, overrides: Optional[Overrides] = None,
               qos: Optional[QosPlan] = None, local_rank: Optional[int] = None,
               topo_path: Optional[str] = None) -> Plan:
    """Run every rule over `features` and return the Plan (see the module docstring).

    `topo_path` is where the NCCL topology XML will live when a rule generates one (the env
    file's directory); `local_rank` adds the per-rank variables of that local rank. Holding the
    plan to the node's expectations is a step of its own (rocetune.app.expectations).
    """
    ctx = RuleContext(features, qos=qos, local_rank=local_rank, topo_path=topo_path,
                      overridden={k: v for k, (v, _) in overrides.set.items()} if overrides else None)
    plan = Plan(qos=ctx.qos, local_rank=local_rank)
    owner: Dict[str, Decision] = {}
    for rule in RULES:
        ctx.begin(rule.ID)
        decisions = rule.rule(features, ctx) or []
        for d in decisions:
            if d.rule_id != rule.ID:
                raise RocetuneError(f"rule {rule.ID} returned a decision labelled {d.rule_id}",
                                    code=ExitCode.INTERNAL)
            if d.key in owner:
                raise RocetuneError(
                    f"{d.key} is decided by two rules: {owner[d.key].rule_id} "
                    f"({owner[d.key].value!r}) and {d.rule_id} ({d.value!r})",
                    hint="a bug in rocetune's rules: report it with the features file",
                    code=ExitCode.INTERNAL)
            owner[d.key] = d
        plan.rules_run.append(rule.ID)
    ctx.begin("traffic-class")  # the QoS plan's own doubts: the rule that reads the plan
    for w in ctx.qos.warnings:
        ctx.finding("qos-plan-questionable", "warning", ctx.qos.source, w, qos=ctx.qos.to_dict())
    plan.notes, plan.findings = ctx.notes, ctx.findings
    plan.ranks, plan.files, plan.reports = ctx.ranks, ctx.files, ctx.reports

    if overrides is not None:
        for key, origin in sorted(overrides.unset.items()):
            old = owner.pop(key, None)
            plan.unset.append({"key": key, "origin": origin,
                               "rule_id": old.rule_id if old else None,
                               "value": old.value if old else None})
            if old is None:
                plan.notes.append(Message("override", f"{origin}: {key} was not planned; nothing to unset"))
            for f in [f for f in plan.files if f.key == key]:
                plan.files.remove(f)
        for key, (value, origin) in sorted(overrides.set.items()):
            old = owner.get(key)
            evidence: Dict[str, Any] = {"origin": origin}
            if old is not None:
                evidence["replaces"] = {"rule_id": old.rule_id, "value": old.value,
                                        "reason": old.reason}
                for f in [f for f in plan.files if f.key == key]:
                    plan.files.remove(f)
            owner[key] = Decision(key, value, "override", f"set by the user ({origin})", evidence)
    plan.decisions = [owner[k] for k in sorted(owner)]
    _self_check(plan)
    return plan


def _self_check(plan: Plan) -> None:
    """Rules never emit a name NCCL does not read; an override that does gets a warning."""
    cat = load_catalog()
    for d in plan.decisions:
        if not d.key.startswith("NCCL_") or cat.known(d.key):
            continue
        if d.rule_id == "override":
            from .lint.setting import unknown_override  # lint's check; its declarations load only here

            plan.findings.append(unknown_override(cat, d.key, d.evidence.get("origin")))
        else:
            raise RocetuneError(f"rule {d.rule_id} emitted {d.key}, which NCCL does not read",
                                code=ExitCode.INTERNAL)
