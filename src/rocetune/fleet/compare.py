"""Compare every host of a fleet against the others and against a desired state. Pure: results
in, a Report out.

For each fact the reference is the value more hosts hold than any other (hosts whose result
does not tell are left out of the count). A host with another value is odd; where no value
leads (two hosts, two values) every host is `split`: which one is wrong cannot be told, and
each is named. Doctor's error findings are a failure on any host, even when most hosts share
them. A manifest check that a host's value misses is drift whatever the others hold.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..model.vocab import natural_key
from .facts import WARNING_PREFIX, Fact, fact_order, label
from .host_facts import host_facts, missing_fact
from .manifest import ManifestEntry
from .results import HostResult


@dataclass
class Cell:
    fact: Fact
    status: str = "ok"  # ok | odd | split | unknown | failing
    missed: List[ManifestEntry] = field(default_factory=list)  # manifest checks this value misses

    @property
    def drift(self) -> bool:
        return self.status in ("odd", "split", "failing") or bool(self.missed)


@dataclass
class Row:
    key: str
    reference: Any = None
    has_reference: bool = False
    holders: int = 0  # hosts holding the reference
    known: int = 0  # hosts whose value is known
    cells: Dict[str, Cell] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return label(self.key)

    @property
    def drift(self) -> bool:
        return any(c.drift for c in self.cells.values())


@dataclass
class Report:
    hosts: List[HostResult]  # failures first, then hosts that differ, then by name
    rows: List[Row]
    manifest_checks: int = 0

    @property
    def failed(self) -> List[HostResult]:
        return [h for h in self.hosts if not h.ok]

    def drift_of(self, host: str) -> List[Row]:
        return [r for r in self.rows if host in r.cells and r.cells[host].drift]

    @property
    def differing(self) -> List[str]:
        return [h.host for h in self.hosts if h.ok and self.drift_of(h.host)]

    @property
    def clean(self) -> bool:
        return not self.failed and not self.differing

    @property
    def shared(self) -> List[Row]:
        """Doctor's warnings every host that answered holds: the fleet agrees on them, and they are
        still warnings, said as shared rather than hidden among what agrees."""
        answered = sum(1 for h in self.hosts if h.ok)
        return [r for r in self.rows if r.key.startswith(WARNING_PREFIX) and r.has_reference
                and r.reference is True and r.holders == answered and answered > 0]

    def entries(self) -> List[Dict[str, Any]]:
        """One entry per host and fact that differs, in report order, with every reason."""
        out = []
        for h in self.hosts:
            rows = sorted(self.drift_of(h.host), key=lambda r: IMPACTS.index(impact(r, r.cells[h.host])))
            for row in rows:
                cell = row.cells[h.host]
                out.append({"host": h.host, "fact": row.key, "label": row.label, "value": cell.fact.value,
                            "known": cell.fact.known, "detail": cell.fact.detail, "impact": impact(row, cell),
                            "reasons": reasons(row, cell)})
        return out

    def worst_impact(self, host: str) -> int:
        """The index in IMPACTS of the costliest difference of `host` (len(IMPACTS): none)."""
        return min((IMPACTS.index(impact(r, r.cells[host])) for r in self.drift_of(host)), default=len(IMPACTS))


# How much a difference costs a job (fleet report orders by it and says it): a value that breaks
# jobs (a rail, the MTU, a failure, a stale env), one that slows them (PCIe, link speed, NCCL,
# warnings, env variables), and bookkeeping (versions and names that do not change what a job gets;
# a GID index NCCL picks itself per port, 2.21.5 and later).
IMPACTS = ("breaks jobs", "slows jobs", "bookkeeping")
_BREAKS = ("doctor.errors", "hca.count", "hca.names", "mtu", "nvlink.fabric", "nvlink.active", "envfile.stale",
           "gid_index")
_BOOKKEEPING = ("nic.fw", "nic.driver", "kernel")
_BOOKKEEPING_PREFIXES = ("rail.", "fw.")


def impact(row: Row, cell: Cell) -> str:
    if cell.missed:
        return IMPACTS[0]
    if row.key == "gid_index" and (cell.fact.detail or "").startswith("NCCL's own pick"):
        return IMPACTS[2]
    if row.key in _BREAKS:
        return IMPACTS[0]
    if row.key in _BOOKKEEPING or row.key.startswith(_BOOKKEEPING_PREFIXES):
        return IMPACTS[2]
    return IMPACTS[1]


def reasons(row: Row, cell: Cell) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    if cell.status == "odd":
        reason = {"kind": "majority", "expected": row.reference, "hosts": row.holders, "of": row.known}
        reason.update(list_difference(row.reference, cell.fact.value))
        out.append(reason)
    elif cell.status == "split":
        out.append({"kind": "split", "hosts": row.known})
    elif cell.status == "failing":
        out.append({"kind": "doctor", "expected": []})
    out.extend({"kind": "manifest", "key": c.source, "expected": c.desired} for c in cell.missed)
    return out


def list_difference(reference: Any, value: Any) -> Dict[str, List[Any]]:
    """What a list value lacks and has beyond the reference list (`missing`, `extra`, each
    only when not empty); {} unless both are lists."""
    if not isinstance(reference, list) or not isinstance(value, list):
        return {}
    ref, got = [_canon(v) for v in reference], [_canon(v) for v in value]
    out = {"missing": [v for v, c in zip(reference, ref) if c not in got],
           "extra": [v for v, c in zip(value, got) if c not in ref]}
    return {k: v for k, v in out.items() if v}


def compare(results: Sequence[HostResult], checks: Sequence[ManifestEntry] = ()) -> Report:
    from .results import copies

    copies(list(results))
    ok = [r for r in results if r.ok]
    facts = {r.host: host_facts(r) for r in ok}
    keys = {k for f in facts.values() for k in f}
    keys.update(c.fact for c in checks)
    rows = []
    for key in sorted(keys, key=fact_order):
        row = Row(key)
        for r in ok:
            fact = facts[r.host].get(key)
            if fact is None:
                fact = missing_fact(r, key)
            row.cells[r.host] = Cell(fact)
        _vote(row)
        for cell in row.cells.values():
            cell.missed = [c for c in checks if c.fact == key and not c.fits(cell.fact)]
        rows.append(row)
    order = {h.host: i for i, h in enumerate(results)}
    report = Report(list(results), rows, manifest_checks=len(checks))

    def rank(h: HostResult):
        return (0 if not h.ok else 1, report.worst_impact(h.host) if h.ok else 0, -len(report.drift_of(h.host)),
                natural_key(h.host), order[h.host])

    report.hosts.sort(key=rank)
    return report


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _vote(row: Row) -> None:
    known = {h: c for h, c in row.cells.items() if c.fact.known}
    for c in row.cells.values():
        if not c.fact.known:
            c.status = "unknown"
    row.known = len(known)
    counts = Counter(_canon(c.fact.value) for c in known.values())
    ranked = counts.most_common()
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        row.has_reference, row.holders = True, ranked[0][1]
        row.reference = json.loads(ranked[0][0])
        for c in known.values():
            if _canon(c.fact.value) != ranked[0][0]:
                c.status = "odd"
    elif ranked:
        for c in known.values():
            c.status = "split"
    if row.key in ("doctor.errors", "envfile.stale"):
        for c in known.values():
            if c.fact.value:
                c.status = "failing"


def show(value: Any, known: bool = True) -> str:
    """A fact's value for people."""
    if not known:
        return "unknown"
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


def expected_text(reasons_: List[Dict[str, Any]]) -> str:
    parts = []
    for r in reasons_:
        if r["kind"] == "majority":
            diff = [f"{word} {show(r[key])}" for key, word in (("missing", "missing"), ("extra", "extra"))
                    if r.get(key)]
            held = f"{show(r['expected'])} on {r['hosts']} of {r['of']} hosts"
            if diff:
                held = held if len(show(r["expected"])) <= 40 else f"the list of {r['hosts']} of {r['of']} hosts"
                held = f"{'; '.join(diff)} (against {held})"
            parts.append(held)
        elif r["kind"] == "split":
            parts.append(f"no value held by most of the {r['hosts']} hosts")
        elif r["kind"] == "doctor":
            parts.append("no error finding")
        elif r["kind"] == "manifest":
            parts.append(f"manifest {r['key']}: {r['expected']}")
    return "; ".join(parts)


def data(report: Report, manifest: Optional[str]) -> Dict[str, Any]:
    """The JSON result (docs/fleet.md)."""
    hosts = []
    for h in report.hosts:
        status = "failed" if not h.ok else ("differs" if report.drift_of(h.host) else "ok")
        hosts.append({"host": h.host, "status": status, "error": h.error, "gathered_at": h.gathered_at,
                      "differs": [r.key for r in report.drift_of(h.host)] if h.ok else []})
    facts = {}
    for row in report.rows:
        facts[row.key] = {
            "label": row.label, "reference": row.reference if row.has_reference else None,
            "has_reference": row.has_reference, "holders": row.holders, "known": row.known,
            "values": {h: {"value": c.fact.value, "known": c.fact.known, "status": c.status,
                           "detail": c.fact.detail,
                           "manifest": [{"key": m.source, "expected": m.desired} for m in c.missed]}
                       for h, c in row.cells.items()}}
    return {"hosts": hosts, "facts": facts, "drift": report.entries(), "manifest": manifest,
            "shared": [{"check": r.key[len(WARNING_PREFIX):], "severity": "warning", "hosts": r.holders,
                        "detail": _first_detail(r)} for r in report.shared],
            "summary": {"hosts": len(report.hosts), "failed": len(report.failed),
                        "differ": len(report.differing), "agree": report.clean, "shared": len(report.shared)}}


def _first_detail(row: Row) -> Optional[str]:
    return next((c.fact.detail for c in row.cells.values() if c.fact.detail), None)
