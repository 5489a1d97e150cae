"""`fleet report DIR --write-expect FILE`: the expectations document most hosts of a fleet agree
on, made with the expectations model itself (rocetune.model.expect): each host's document is
`document_of` its own facts (doctor's `data.expect.facts`), and `majority` keeps, field by
field, the value more than half of them give. A field no value wins is left out (it checks
nothing) and named, with the hosts behind each value."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

from ..model.expect import Majority
from .results import HostResult


@dataclass
class FleetExpectations:
    majority: Majority
    hosts: List[str]  # the hosts whose documents voted, in the order majority() saw them
    left_out: Dict[str, str] = field(default_factory=dict)  # host -> why it did not vote

    def dissent(self) -> Dict[str, Dict[str, List[str]]]:
        """{field: {value (JSON text): [hosts]}} for every field some host gives otherwise."""
        return {path: {value: [self.hosts[i] for i in ids] for value, ids in values.items()}
                for path, values in self.majority.dissent.items()}

    def to_dict(self) -> Dict[str, Any]:
        return {"document": self.majority.document, "voters": len(self.hosts), "agree": self.majority.agree,
                "undecided": self.majority.undecided, "dissent": self.dissent(), "left_out": self.left_out}


def fleet_expectations(results: Sequence[HostResult]) -> FleetExpectations:
    """The majority document of the hosts whose results carry doctor's facts; the others are
    named in `left_out` with the reason (a failed gather, a probe-only result, facts that do not
    make a valid document)."""
    from ..errors import RocetuneError
    from ..model.expect import NodeFacts, document_of, majority

    docs, hosts, left_out = [], [], {}
    for r in results:
        if not r.ok:
            left_out[r.host] = f"no result: {r.error}"
            continue
        if not isinstance(r.expect_facts, dict):
            left_out[r.host] = "the result holds no doctor facts (data.expect.facts): a probe or an older doctor"
            continue
        try:
            doc = document_of(NodeFacts.from_dict(r.expect_facts))
        except (TypeError, ValueError, KeyError, AttributeError, RocetuneError) as exc:  # a node's: untrusted
            why = exc.message if isinstance(exc, RocetuneError) else str(exc)
            left_out[r.host] = f"its facts do not make a document: {why[:200]}"
            continue
        docs.append(doc)
        hosts.append(r.host)
    return FleetExpectations(majority(docs), hosts, left_out)


def header(fe: FleetExpectations, version: str) -> List[str]:
    """The `#` lines the written document starts with: how it was made and what was not decided."""
    lines = [f"rocetune {version} expectations: the majority of {len(fe.hosts)} host(s) "
             "(`rocetune fleet report DIR --write-expect`).",
             "A field is kept when more than half of the hosts give it; every field is optional (docs/expect.md)."]
    if fe.majority.undecided:
        lines.append("Left out, no value held by most hosts: " + ", ".join(fe.majority.undecided))
    if fe.left_out:
        lines.append(f"{len(fe.left_out)} host(s) did not vote: " + ", ".join(sorted(fe.left_out)[:20])
                     + (" ..." if len(fe.left_out) > 20 else ""))
    return lines
