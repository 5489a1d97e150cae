"""What a job's NCCL log and NCCL's RAS say against the plan, as findings: the checks of each
difference (rocetune.nccl.log_compare) and each RAS verdict (rocetune.nccl.ras), declared with
their pages, and the functions that make their findings (app.node_checks, app.doctor call them)."""

from __future__ import annotations

from ..checks import declare, emits, finding
from ..model.finding import Finding
from ..nccl.log_compare import DIFFERENCES, LogDifference
from ..nccl.ras import VERDICTS as RAS_VERDICTS
from ..nccl.ras import RasVerdict

for _id, _kind in sorted(DIFFERENCES.items()):
    _also = tuple(s for s in ("error", "warning", "info") if s != _kind.severity)
    declare(
        id=_id,
        kind="doctor",
        severity=_kind.severity,
        also=_also,
        severity_note=f"{_also[0]} or {_also[1]} where the difference found warrants it (docs/nccl-log.md)",
        title=_kind.doc[0].upper() + _kind.doc[1:],
        checks=_kind.doc,
        reads="A job's NCCL_DEBUG=INFO output (`rocetune doctor --nccl-log FILE`) and the plan.",
        why="What NCCL itself reported using is the only proof the job got what the plan says.",
        fix=_kind.fix,
        source="NVIDIA/nccl log formats per release (rocetune.nccl.log_lines)",
    )


@emits(*DIFFERENCES)
def nccl_log_finding(d: LogDifference, path: str) -> Finding:
    """The finding of one difference between the plan and the NCCL log at `path`."""
    shown = f" [log: {d.evidence[0].strip()}]" if d.evidence else ""
    who = f" ({len(d.processes)} process(es))" if len(d.processes) > 1 else ""
    return finding(
        d.id,
        d.subject,
        d.message + who + shown,
        severity=d.severity,
        fix=d.fix,
        evidence={"log": path, "lines": list(d.evidence), "processes": list(d.processes)},
    )


for _id, (_sev, _doc) in sorted(RAS_VERDICTS.items()):
    _also = tuple(s for s in ("error", "warning", "info") if s != _sev)
    declare(
        id=_id,
        kind="doctor",
        severity=_sev,
        also=_also,
        severity_note=f"{_also[0]} or {_also[1]} where what RAS said warrants it: two polls that agree (a rank "
        "still missing) weigh more than one (docs/ras.md)",
        title=_doc[0].upper() + _doc[1:],
        checks=_doc,
        reads="What the job's RAS answers (`rocetune doctor --ras FILE` for recorded `ncclras` output, "
        "`--ras-addr HOST:PORT` to ask a running job: STATUS twice, then DIAGNOSTICS; never CONTROL) "
        "and the plan's env.",
        why="RAS is NCCL's own view of the running job; one 'RUNNING OK' proves no progress "
        "(NVIDIA/nccl#1730), so progress is judged from two polls (docs/ras.md).",
        fix="find the named ranks' processes and nodes: their GPU, NIC and kernel log first",
        source="NVIDIA/nccl src/ras/client_support.cc (v2.30.7-1, v2.31.2-1); troubleshooting/ras.rst",
    )


@emits(*RAS_VERDICTS)
def ras_finding(v: RasVerdict, source: str) -> Finding:
    """The finding of one verdict on what the job's RAS said (`source`: the file or address asked)."""
    return finding(v.id, v.subject, v.message, severity=v.severity, evidence={"ras": source, "lines": list(v.evidence)})
