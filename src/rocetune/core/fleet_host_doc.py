"""The fleet directory's per-host document (`DIR/HOST.json`, docs/fleet.md), as every writer of it
makes it: `rocetune fleet gather` (over SSH) and the collection's fleet_results module (from the
results Ansible registered; plugins/module_utils/rocetune_fleet_doc.py is this file's copy).
`rocetune fleet report` reads it back (fleet.results). Standard library only.

    {"schema": SCHEMA, "host", "gathered_at", "probe": null, "doctor": {...} or null,
     "error": null or why the host gave no result}
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

SCHEMA = "rocetune.fleet-host/1"
OK_EXITS = (0, 1, 5)  # doctor ran: clean, error findings, warnings (docs/cli.md)
HOST_NAME = re.compile(r"^[A-Za-z0-9_.:-]+\Z")  # a file name, never a path


def new_doc(host: str, gathered_at: Optional[str]) -> dict:
    """A host's document before anything is known of it."""
    return {"schema": SCHEMA, "host": host, "probe": None, "doctor": None, "gathered_at": gathered_at,
            "error": None}


def dumps(doc: dict) -> str:
    """The file's text: the same document, the same bytes."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def ssh_reason(msg: Any) -> str:
    """ssh's own words, on one line: its banner of @ signs dropped (a changed host key), rows
    and the signs that frame its lines alike."""
    text = re.sub(r"@{3,}", " ", str(msg or "no reason given"))
    words = " ".join(ln.strip(" \t@") for ln in text.splitlines() if ln.strip(" \t@"))
    return words[:400]


def from_registered(host: str, registered: Any, gathered_at: Optional[str]) -> dict:
    """The document of what Ansible registered for `rocetune --json doctor` on `host` (rc, stdout,
    stderr; `unreachable` and ssh's msg; None where it did not run)."""
    doc = new_doc(host, gathered_at)
    if isinstance(registered, dict) and registered.get("unreachable"):
        doc["error"] = "unreachable: " + ssh_reason(registered.get("msg"))
        return doc
    if not isinstance(registered, dict) or "rc" not in registered:
        doc["error"] = "rocetune doctor did not run on this host (a task before it failed)"
        return doc
    try:
        envelope = json.loads(registered.get("stdout") or "")
    except ValueError:
        envelope = None
    if registered.get("rc") not in OK_EXITS or not isinstance(envelope, dict) \
            or not isinstance(envelope.get("data"), dict) or envelope.get("errors"):
        lines = [ln for ln in (registered.get("stderr") or registered.get("stdout") or "").splitlines() if ln.strip()]
        doc["error"] = "rocetune doctor exited {} without a result: {}".format(
            registered.get("rc"), lines[-1][:300] if lines else "no output")
        return doc
    doc["doctor"] = envelope
    return doc
