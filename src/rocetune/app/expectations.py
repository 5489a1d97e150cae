"""The second step of the use cases that judge a node: the finished plan held to what the node
should be (its expectations document). A rail the selector dropped, a traffic class the NICs no
longer give, a version that moved become findings of the plan; building the plan knows nothing
of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

from ..model.plan import Plan

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.hostview import HostView
    from ..model.expect import Expectations, NodeFacts


def hold_to_expectations(
    plan: Plan, features: dict, expect: Optional[Expectations], view: Optional[HostView] = None
) -> Plan:
    """`plan`, with the differences from `expect` among its findings and `plan.expect` set
    (source, document, the node's facts for the ports the document names); unchanged when
    nothing is expected."""
    from ..analysis.hostview import HostView

    if expect is not None:
        hold_node(plan, view or HostView(features), expect)
    return plan


def hold_node(
    plan: Plan,
    view: HostView,
    expect: Optional[Expectations],
    names: Optional[Iterable[str]] = None,
) -> NodeFacts:
    """The node's facts, read once from `view` (the HostView of its Features) -- what it is as an
    expectations document describes one (rocetune.analysis.expect): its rails as the plan chose
    them, and the ports `names` names besides (by default those `expect` names exactly) -- and
    `plan` held to `expect` with them (when there is one). The facts, which a check of the node
    reports whether or not anything is expected."""
    from ..analysis.expect import exact_names, node_facts
    from ..checks.expect import findings_of
    from ..model.expect import evaluate
    from ..model.qos import default_plan

    qos_source = plan.qos.source if plan.qos is not None and plan.qos.source != default_plan().source else None
    if names is None:
        names = exact_names(expect.document) if expect is not None else []
    facts = node_facts(view.f, plan, qos_source=qos_source, names=names, view=view)
    if expect is not None:
        plan.findings.extend(findings_of(evaluate(expect.document, facts)))
        plan.expect = {"source": expect.source, "document": expect.document, "facts": facts}
    return facts
