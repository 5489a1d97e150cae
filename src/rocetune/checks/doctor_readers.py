"""Doctor's check of its own readers: a probe source that crashed is said, never read as a pass
(rocetune.doctor.reader_checks runs it)."""

from __future__ import annotations

from .registry import Check, declare

declare(Check(
    "doctor-reader-failed", "doctor", "error",
    title="A reader crashed: its checks did not run",
    checks="Every probe source read the node without an exception.",
    reads="The Features' `sources.<name>.failed` (the exception class) and `reason`, set by the probe "
          "when a source raised (its section is then empty or absent), and the same in doctor's kernel-log "
          "reading.",
    why="A source that raises gives no data, and checks that see no data find nothing: a malformed line "
        "in the NVLink output once turned a failing fabric into a pass. Each such family is `not "
        "checked: reader failed` instead, an error, so no gate passes a node it did not read.",
    fix="read the reason (and `--debug`); report it with the command output it names. Where the crash "
        "is known and the node is otherwise judged, grade it in the check configuration "
        "(`grade: [{id: doctor-reader-failed, severity: warning, reason: ...}]`)",
    source="docs/gate.md (a reader that failed); rocetune.probe.collect"))
