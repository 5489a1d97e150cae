"""The node as Slurm's controller sees it, and the two changes the health gate makes to it, through
Slurm's own `scontrol` (slurm.conf(5), scontrol(1); Slurm 22.05):

- `scontrol show node NAME`: its state (`State=IDLE+DRAIN`) and why (`Reason=... [user@time]`);
- `scontrol update NodeName=NAME State=DRAIN Reason=...`: no new job starts there;
- `scontrol update NodeName=NAME State=RESUME`: it takes jobs again.

slurmd runs a HealthCheckProgram with no PATH in its environment (src/slurmd/slurmd/slurmd.c,
run_script_health_check: only SLURMD_NODENAME), so scontrol is looked for in the usual
directories too. Every call has a deadline; a failure is a SlurmError with scontrol's own line.
"""

from __future__ import annotations

import os
import subprocess
from typing import List, Optional, Sequence

from ..core.drain_owner import NodeState, parse_show_node

__all__ = ["NodeState", "Scontrol", "SlurmError", "find_scontrol", "parse_show_node"]

SEARCH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/opt/slurm/bin")


class SlurmError(Exception):
    """scontrol could not be run or refused; the message is one line."""


def find_scontrol(given: Optional[str] = None) -> str:
    if given:
        return given
    path = os.environ.get("PATH") or ""
    for directory in [d for d in path.split(os.pathsep) if d] + list(SEARCH):
        candidate = os.path.join(directory, "scontrol")
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise SlurmError("scontrol not found (on PATH or in " + ", ".join(SEARCH[:4]) + ", ...)")


class Scontrol:
    def __init__(self, program: Optional[str] = None, timeout: float = 10.0):
        self.program = find_scontrol(program)
        self.timeout = timeout

    def _run(self, args: Sequence[str], timeout: Optional[float] = None) -> str:
        argv: List[str] = [self.program, *args]
        try:
            limit = max(0.5, timeout if timeout is not None else self.timeout)
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"scontrol {args[0]} did not answer within {timeout or self.timeout:g}s") from None
        except OSError as exc:
            raise SlurmError(f"cannot run {self.program}: {exc.strerror or exc}") from None
        if proc.returncode != 0:
            said = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise SlurmError(f"scontrol {' '.join(args[:2])}: {said[:300]}")
        return proc.stdout.decode("utf-8", "replace")

    def node(self, name: str, timeout: Optional[float] = None) -> NodeState:
        return parse_show_node(self._run(["show", "node", name], timeout), name)

    def drain(self, name: str, reason: str, timeout: Optional[float] = None) -> None:
        self._run(["update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}"], timeout)

    def resume(self, name: str, timeout: Optional[float] = None) -> None:
        self._run(["update", f"NodeName={name}", "State=RESUME"], timeout)
