"""LLDP source: what lldpd heard on each interface (`lldpctl -f json0`: the form whose structure
a neighbour's text cannot change, parsers/lldpctl.py), the switch and port each cable ends on.

Present in the Features only where lldpctl is installed (a host without it is no different from
before, and its Features hash the same); `error` holds lldpctl's own words where it is but did
not answer (lldpd not running).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ..source import Source

LLDPCTL_ARGV = ("lldpctl", "-f", "json0")
# lldpd's control socket (its compile-time default; Debian, EL and Ubuntu build it so). Without
# it lldpctl only logs that it cannot connect, with a timestamp that would differ per run.
SOCKETS = ("/run/lldpd.socket", "/var/run/lldpd.socket")
BIN_DIRS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin")
_LOG_STAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\s+"  # compiled where lldpctl failed (re caches it)


def probe(ctx: ProbeContext) -> Optional[dict]:
    doc: Dict[str, Any] = {"tool": " ".join(LLDPCTL_ARGV), "error": None, "interfaces": {}}
    running = any(ctx.root.exists(s) for s in SOCKETS)
    res = ctx.runner.run(list(LLDPCTL_ARGV)) if running or not ctx.root.is_live else None
    if res is None or not res.found:
        # Not run (no daemon) or not recorded: installed but idle is said, absent is silence.
        if not any(ctx.root.exists(f"{d}/{LLDPCTL_ARGV[0]}") for d in BIN_DIRS):
            return None
        doc["error"] = f"lldpd is not running (no {SOCKETS[0]})"
        return doc
    if res.returncode != 0:
        said = next((ln.strip() for ln in (res.stderr or res.stdout or "").splitlines() if ln.strip()),
                    res.reason or f"exit {res.returncode}")
        doc["error"] = f"exit {res.returncode}: {re.sub(_LOG_STAMP, '', said)[:300]}"
        return doc
    from ..parsers.lldpctl import parse_lldpctl_json  # where lldpctl answered: most hosts have none

    try:
        doc["interfaces"] = parse_lldpctl_json(res.stdout)
    except ParseError as exc:
        doc["error"] = str(exc)[:300]
    return doc


SOURCE = Source("lldp", reads="`lldpctl -f json0`",
                order=100, optional=True)
