"""The RAS client against a replay of NCCL's side of the protocol (src/ras/client_support.cc v2.30.7-1
:350-447: "SERVER PROTOCOL 2" to "CLIENT PROTOCOL", "OK" or "ERROR: ..." to SET FORMAT and TIMEOUT, the
answer to STATUS/DIAGNOSTICS streamed until the connection closes), standing in for a running job; the
answers it streams are NCCL's published samples (tests/fixtures/ncclras)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from rocetune.nccl.ras import read_status
from rocetune.nccl.ras_client import RasClientError, parse_address, poll_job, query

RAS = Path(__file__).resolve().parents[2] / "fixtures" / "ncclras"
LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"


class FakeRas:
    """One job's RAS socket on 127.0.0.1: answers as client_support.cc does and records every line sent."""

    def __init__(self, status: bytes, diagnostics: bytes = b"", json_ok: bool = True):
        self.status, self.diagnostics, self.json_ok = status, diagnostics, json_ok
        self.received: list = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as f:
                self._answer(conn, f)
                conn.shutdown(socket.SHUT_RDWR)  # NCCL closes the connection after an answer

    def _answer(self, conn, f):
        for raw in f:
            cmd = raw.decode().strip()
            self.received.append(cmd)
            low = cmd.lower()
            if low.startswith("client protocol "):
                conn.sendall(b"SERVER PROTOCOL 2\n")
            elif low.startswith("set format "):
                ok = self.json_ok or low.endswith("text")
                conn.sendall(b"OK\n" if ok else b"ERROR: Unknown command " + raw.strip() + b"\n")
            elif low in ("status", "verbose status"):
                conn.sendall(self.status)
                break
            elif low == "diagnostics":
                conn.sendall(self.diagnostics or b"ERROR: Unknown command DIAGNOSTICS\n")
                break
            else:
                conn.sendall(b"ERROR: Unknown command " + raw.strip() + b"\n")
                break

    def close(self):
        self.sock.close()


@pytest.fixture
def job():
    servers = []

    def make(*a, **kw):
        s = FakeRas(*a, **kw)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def test_status_as_json_with_the_protocol_handshake(job):
    ras = job((RAS / "docs-2.31.2-status.json").read_bytes())
    got = query("127.0.0.1", ras.port, "STATUS", fmt="json", timeout=5)
    assert read_status(got).comms["0xae94423cfbb2ef4a"].size == 2
    assert ras.received == ["CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS"]


def test_control_and_any_other_command_are_never_sent(job):
    ras = job(b"")
    for cmd in ("CONTROL PROFILER_MASK none", "control profiler_mask all", "MONITOR", "TIMEOUT 0"):
        with pytest.raises(RasClientError, match="never CONTROL"):
            query("127.0.0.1", ras.port, cmd, timeout=5)
    assert ras.received == []


def test_two_polls_then_diagnostics_and_the_text_form_before_json(job):
    status = ((RAS / "docs-2.31.2-status-mismatch.txt").read_text() + "\n" +
              (RAS / "docs-2.31.2-warnings-mismatch.txt").read_text()).encode()
    diag = (LOGS / "nccl-docs-2.31.2-ras-diagnostics.log").read_bytes()
    ras = job(status, diag, json_ok=False)
    slept = []
    first, second, diagnostics, notes = poll_job("127.0.0.1", ras.port, interval=7, timeout=5, sleep=slept.append)
    assert slept == [7] and first.form == "text" and second.groups[0].errors == ["MISMATCH"]
    assert "NCCL DIAG [OK]   GPU inventory" in diagnostics
    assert any("before NCCL 2.28.7" in n for n in notes)
    # SET FORMAT json refused (before 2.28.7): no STATUS on that connection; then two text polls
    assert [c for c in ras.received if c != "CLIENT PROTOCOL 2"] == ["SET FORMAT json", "STATUS", "STATUS",
                                                                    "DIAGNOSTICS"]


def test_a_release_without_diagnostics_is_a_note(job):
    ras = job((RAS / "docs-2.31.2-status.json").read_bytes())
    *_, diagnostics, notes = poll_job("127.0.0.1", ras.port, interval=0, timeout=5, sleep=lambda s: None)
    assert diagnostics is None and any("ERROR: Unknown command DIAGNOSTICS" in n for n in notes)


def test_no_job_and_a_stranger_on_the_port_are_one_line_errors(job):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(RasClientError, match="cannot reach RAS"):
        query("127.0.0.1", port, timeout=2)
    stranger = socket.socket()
    stranger.bind(("127.0.0.1", 0))
    stranger.listen(1)

    def serve():
        c, _ = stranger.accept()
        c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        c.close()

    threading.Thread(target=serve, daemon=True).start()
    with pytest.raises(RasClientError, match="did not answer as NCCL's RAS"):
        query("127.0.0.1", stranger.getsockname()[1], timeout=2)
    stranger.close()


@pytest.mark.parametrize("text,addr", [("localhost", ("localhost", 28028)), ("node7:12345", ("node7", 12345)),
                                       ("[::1]:28028", ("::1", 28028))])
def test_addresses_as_nccl_ras_addr_writes_them(text, addr):
    assert parse_address(text) == addr


def test_a_bad_address_is_refused():
    with pytest.raises(RasClientError):
        parse_address("node:99999")
