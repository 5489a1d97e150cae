"""One pair test of `validate`, as pure functions: the perftest and iperf3 command lines for a
server and a client, the counter files that show which rail carried the traffic, and the
judgement of what came back.

perftest (linux-rdma/perftest): `ib_write_bw`/`ib_read_bw -d DEV -i PORT -x GID -F
--report_gbits -D SECONDS -s SIZE -p TCP_PORT [SERVER]`; the server side waits for one client,
the out-of-band exchange goes over TCP to SERVER (the host's name or address as the caller knows
it), the data over RDMA from the GID each side names. `-x` is the GID index the env gives NCCL,
so the test moves data the way the job will.

Which rail carried it: a port's `counters/port_xmit_data` and `port_rcv_data` count 4-octet
words (InfiniBand Architecture Specification, PortCounters; the Linux drivers export them so);
where a device has none (rdma_rxe), the netdev's `statistics/tx_bytes`/`rx_bytes` stand in, which
on a software device count the same frames. The sender's counter must have grown by at least
`COUNTER_SHARE` of the bytes perftest reports having moved.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import ParseError
from .endpoints import RdmaPort, SocketIf
from .measure import DEFAULT_FRACTION, clock_uncalibrated, parse_iperf3, parse_perftest, verdict

PERFTEST_BASE_PORT = 18515  # perftest's own default; rail i uses BASE + i
IPERF3_PORT = 5201
COUNTER_SHARE = 0.9
WORD = 4  # octets per port_xmit_data / port_rcv_data unit
TOOLS = {"write": "ib_write_bw", "read": "ib_read_bw"}


@dataclass(frozen=True)
class Settings:
    rdma_op: str = "write"
    seconds: int = 5
    size: int = 65536
    fraction: float = DEFAULT_FRACTION
    line_rate_gbps: Optional[float] = None  # None: the probed rate of the slower side


def perftest_argv(port: RdmaPort, s: Settings, tcp_port: int, server: Optional[str] = None) -> List[str]:
    argv = [TOOLS[s.rdma_op], "-d", port.device, "-i", str(port.port)]
    if port.gid_index is not None:
        argv += ["-x", str(port.gid_index)]
    argv += ["-F", "--report_gbits", "-D", str(s.seconds), "-s", str(s.size), "-p", str(tcp_port)]
    return argv + ([server] if server else [])


def iperf3_server_argv(local: SocketIf) -> List[str]:
    return ["iperf3", "-s", "-1", "-B", str(local.ipv4), "-p", str(IPERF3_PORT)]


def iperf3_client_argv(local: SocketIf, peer: SocketIf, s: Settings) -> List[str]:
    return ["iperf3", "-c", str(peer.ipv4), "-B", str(local.ipv4), "-p", str(IPERF3_PORT), "-t", str(s.seconds), "-J"]


def command(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


# --- counters ----------------------------------------------------------------------------------
def counter_files(port: RdmaPort) -> List[Tuple[str, str, int]]:
    """(what, sysfs file, bytes per unit): the port counters, then the netdev's as a stand-in."""
    base = f"/sys/class/infiniband/{port.device}/ports/{port.port}/counters"
    files = [("port_xmit_data", f"{base}/port_xmit_data", WORD), ("port_rcv_data", f"{base}/port_rcv_data", WORD)]
    if port.netdev:
        net = f"/sys/class/net/{port.netdev}/statistics"
        files += [("tx_bytes", f"{net}/tx_bytes", 1), ("rx_bytes", f"{net}/rx_bytes", 1)]
    return files


def counters_command(ports: Sequence[RdmaPort]) -> str:
    """One shell line printing each counter file's value, or `-`, one per line in order."""
    paths = [path for p in ports for _, path, _ in counter_files(p)]
    return "for f in " + " ".join(shlex.quote(p) for p in paths) + \
        "; do v=$(cat \"$f\" 2>/dev/null) || v=-; echo \"${v:--}\"; done"


def parse_counters(ports: Sequence[RdmaPort], text: str) -> Dict[str, Dict[str, Optional[int]]]:
    """{port name: {counter: bytes or None}} from counters_command's output."""
    values = text.split()
    out: Dict[str, Dict[str, Optional[int]]] = {}
    i = 0
    for p in ports:
        got: Dict[str, Optional[int]] = {}
        for what, _, unit in counter_files(p):
            raw = values[i] if i < len(values) else "-"
            got[what] = int(raw) * unit if raw.isdigit() else None
            i += 1
        out[p.name] = got
    return out


def rail_moved(before: Dict[str, Optional[int]], after: Dict[str, Optional[int]],
               send: bool) -> Tuple[Optional[int], str]:
    """(bytes the port sent or received between the readings, which counter said so)."""
    for what in (("port_xmit_data", "tx_bytes") if send else ("port_rcv_data", "rx_bytes")):
        b, a = before.get(what), after.get(what)
        if b is not None and a is not None and a >= b:
            return a - b, what
    return None, "no counter readable"


# --- judgement ---------------------------------------------------------------------------------
def judge_rdma(client_out: str, sender: RdmaPort, receiver: RdmaPort, s: Settings,
               moved: Optional[int], counter: str) -> dict:
    """The result of one rail's perftest from the client's output and the sender's counter."""
    unmeasured = clock_uncalibrated(client_out)
    if unmeasured:
        return {"status": "error", "error": unmeasured}
    try:
        run = parse_perftest(client_out)
    except ParseError as exc:
        return {"status": "error", "error": _tail_reason(client_out) or str(exc)}
    row = max(run.rows, key=lambda r: run.gbps(r.average))
    measured = run.gbps(row.average)
    rate = s.line_rate_gbps or _slower(sender.rate_gbps, receiver.rate_gbps)
    doc: Dict[str, Any] = {"measured_gbps": round(measured, 3), "bytes": row.size * row.iterations,
           "gid_index": run.gid_index, "mtu": run.mtu, "link_type": run.link_type}
    doc["counters"] = _rail_check(moved, counter, doc["bytes"])
    if rate is None:
        doc.update(status="unjudged", why="no line rate probed for either port; give --line-rate")
        return doc
    v = verdict(measured, rate, s.fraction)
    doc["verdict"] = v.to_dict()
    doc["status"] = "pass" if v.passed and doc["counters"]["ok"] is not False else "fail"
    if not v.passed:
        doc["why"] = f"{measured:.2f} Gb/s is below {v.needed_gbps:.2f} ({s.fraction:.0%} of {rate:g} Gb/s)"
    elif doc["counters"]["ok"] is False:
        doc["why"] = doc["counters"]["why"]
    return doc


def judge_tcp(client_out: str, a: SocketIf, b: SocketIf, s: Settings) -> dict:
    try:
        run = parse_iperf3(client_out)
    except ParseError as exc:
        return {"status": "error", "error": str(exc)}
    doc: Dict[str, Any] = {"measured_gbps": round(run.received_gbps, 3), "retransmits": run.retransmits}
    rate = s.line_rate_gbps or _slower(a.speed_gbps, b.speed_gbps)
    if rate is None:
        doc.update(status="unjudged", why=f"no link speed known for {a.ifname} or {b.ifname}")
        return doc
    v = verdict(run.received_gbps, rate, s.fraction)
    doc["verdict"] = v.to_dict()
    doc["status"] = "pass" if v.passed else "fail"
    if not v.passed:
        doc["why"] = f"{run.received_gbps:.2f} Gb/s is below {v.needed_gbps:.2f} ({s.fraction:.0%} of {rate:g} Gb/s)"
    return doc


def _rail_check(moved: Optional[int], counter: str, expected: int) -> dict:
    if moved is None:
        return {"ok": None, "counter": counter, "why": "the sender's counters could not be read"}
    ok = moved >= COUNTER_SHARE * expected
    doc = {"ok": ok, "counter": counter, "moved_bytes": moved, "expected_bytes": expected}
    if not ok:
        doc["why"] = (f"the sender's {counter} grew by {moved} bytes, perftest moved {expected}: "
                      "the traffic left by another port")
    return doc


def _slower(a: Optional[float], b: Optional[float]) -> Optional[float]:
    known = [r for r in (a, b) if isinstance(r, (int, float)) and r > 0]
    return min(known) if known else None


def _tail_reason(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= set("-")]
    return lines[-1][:300] if lines else ""
