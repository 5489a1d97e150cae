"""`doctor-reader-failed`: each probe source that raised (Features `sources.<name>.failed`), and
each of doctor's readings that did (`readings.<name>.failed`: the kernel log's), is a family not
checked, said as an error with the exception class -- never the absence of findings that a pass
would look like."""

from __future__ import annotations

from typing import List

from ..model.finding import Finding
from .base import DoctorInput, _finding, check


@check("doctor-reader-failed")
def reader_failed(d: DoctorInput) -> List[Finding]:
    out = []
    for name, status in sorted((d.features.get("sources") or {}).items()):
        if isinstance(status, dict) and status.get("failed"):
            out.append(_finding("doctor-reader-failed", "error", name,
                                f"{name}: not checked: reader failed ({status['failed']}): "
                                f"{status.get('reason') or ''}".rstrip(": "),
                                {"source": name, "failed": status["failed"], "reason": status.get("reason")}))
    # doctor's own readings beyond the Features (the kernel log's): one that crashed says `failed`
    for name, reading in sorted((d.readings or {}).items()):
        if isinstance(reading, dict) and reading.get("failed"):
            out.append(_finding("doctor-reader-failed", "error", name,
                                f"{name}: not checked: reader failed ({reading['failed']}): "
                                f"{reading.get('reason') or ''}".rstrip(": "),
                                {"reading": name, "failed": reading["failed"], "reason": reading.get("reason")}))
    return out
