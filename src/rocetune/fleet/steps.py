"""What the fleet tests share when they run tools on the hosts: a server and its client (perftest,
iperf3) with the retries a server that is not yet listening needs, perftest run again where its
clock calibration failed, the counters of the ports that carry a test, and the lines that say why
a tool failed."""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence, Tuple

from . import pairtest, ssh
from .endpoints import RdmaPort
from .measure import clock_uncalibrated

CONNECT_RETRIES = 5
CLOCK_RETRIES = 2  # perftest runs again while its clock calibration fails (measure.clock_uncalibrated)


def server_and_client(server_remote, server_cmd: str, client_remote, client_cmd: str, step_s: float,
                      settle_s: float, tool: str = "perftest") -> Tuple[ssh.Completed, ssh.Completed]:
    """Start the server, then the client (again while the server is not yet listening); the
    client's and the server's results."""
    server = server_remote.start(server_cmd, f"{tool} server", step_s)
    client = None
    for _ in range(CONNECT_RETRIES):
        time.sleep(settle_s)
        client = client_remote.run(client_cmd, f"{tool} client", step_s)
        if client.code == 0 or b"Couldn't connect" not in client.out + client.err:
            break
    try:
        server_done = server_remote.finish(server, f"{tool} server")
    except ssh.Failure as exc:
        server_done = ssh.Completed(-1, b"", str(exc).encode())
    assert client is not None
    return client, server_done


def perftest_pair(server_remote, server_cmd: str, client_remote, client_cmd: str, step_s: float,
                  settle_s: float, tool: str = "perftest") -> Tuple[ssh.Completed, ssh.Completed, int]:
    """server_and_client for perftest, run again (up to CLOCK_RETRIES times) while the client could
    not calibrate its clock; the last run and how many were made."""
    attempts = 0
    while True:
        attempts += 1
        client, server = server_and_client(server_remote, server_cmd, client_remote, client_cmd, step_s,
                                           settle_s, tool)
        if attempts > CLOCK_RETRIES or client.code != 0 or not clock_uncalibrated(text(client)):
            return client, server, attempts


def text(done: ssh.Completed) -> str:
    """A tool's stdout then stderr, as one text."""
    return (done.out + done.err).decode("utf-8", "replace")


def counters(remote, ports: Sequence[RdmaPort], step_s: float) -> Optional[Dict[str, Dict[str, Optional[int]]]]:
    try:
        done = remote.run(pairtest.counters_command(ports), "counters", step_s)
    except ssh.Failure:
        return None
    return pairtest.parse_counters(ports, done.out.decode("utf-8", "replace"))


def failed(this: ssh.Completed, other: ssh.Completed, tool: str) -> str:
    """Why `this` side failed, in one line (the client's words, else the other side's)."""
    if this.code == 127:
        return f"{tool}: command not found (install perftest / iperf3)"
    said = this.first_err_line() or last_line(this.out) or other.first_err_line() or last_line(other.out)
    return f"exited {this.code}" + (f": {said[:300]}" if said else "")


def evidence(client: ssh.Completed, server: ssh.Completed) -> dict:
    def tail(b: bytes) -> List[str]:
        return b.decode("utf-8", "replace").splitlines()[-12:]
    return {"client_exit": client.code, "client": tail(client.out) + tail(client.err),
            "server_exit": server.code, "server": tail(server.out) + tail(server.err)}


def last_line(b: bytes) -> str:
    lines = [ln.strip() for ln in b.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def settle_s() -> float:
    """The pause before a client connects, as validate sets it for this run."""
    from . import validate

    return validate.SERVER_SETTLE_S
