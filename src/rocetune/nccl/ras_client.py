"""Ask a running job's RAS (NCCL 2.24+) what it knows, with read-only commands only.

    text = query("localhost", 28028, "STATUS", fmt="json")

The protocol is NCCL's text protocol (src/ras/client.cc and client_support.cc, v2.30.7-1 :350-447, the
same at v2.31.2-1): the client sends "CLIENT PROTOCOL 2" and the server answers "SERVER PROTOCOL <n>";
"SET FORMAT json" (2.28.7+) and "TIMEOUT <secs>" are answered "OK" or "ERROR: ..."; "STATUS", "VERBOSE
STATUS" and "DIAGNOSTICS" (2.31+) stream the answer until the server closes the connection. This client
sends nothing else: the CONTROL namespace (2.31+) changes a running job and is refused here, whoever
asks. The listening address is NCCL_RAS_ADDR's (default localhost:28028, ras_internal.h
NCCL_RAS_CLIENT_PORT). What comes back is untrusted: its size is capped and the whole exchange has a
deadline.
"""

from __future__ import annotations

import socket
import time
from typing import Callable, Optional, Tuple

from .ras import MAX_BYTES

PROTOCOL = 2  # NCCL_RAS_CLIENT_PROTOCOL, 2 in every release with RAS (v2.24.3-1 .. v2.31.2-1)
DEFAULT_PORT = 28028
READ_ONLY = ("STATUS", "VERBOSE STATUS", "DIAGNOSTICS")

Connect = Callable[[Tuple[str, int], float], socket.socket]


class RasClientError(RuntimeError):
    """The job's RAS could not be asked, or answered something else than RAS."""


def parse_address(text: str) -> Tuple[str, int]:
    """"host:port", "[v6]:port" or "host" (port 28028), as NCCL_RAS_ADDR is written."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    if not host or (port and not (port.isdigit() and 0 < int(port) < 65536)):
        raise RasClientError(f"{text!r}: not a RAS address (host:port, as NCCL_RAS_ADDR)")
    return host, int(port) if port else DEFAULT_PORT


def query(host: str, port: int = DEFAULT_PORT, command: str = "STATUS", fmt: Optional[str] = "json",
          timeout: float = 30.0, connect: Optional[Connect] = None) -> bytes:
    """The job's answer to one read-only command, as bytes (at most ras.MAX_BYTES)."""
    cmd = " ".join(command.upper().split())
    if cmd not in READ_ONLY:
        raise RasClientError(f"{command!r}: rocetune sends RAS only {', '.join(READ_ONLY)} (never CONTROL, "
                             "which changes the running job)")
    deadline = time.monotonic() + timeout
    opener = connect or (lambda addr, t: socket.create_connection(addr, timeout=t))
    try:
        sock = opener((host, port), timeout)
    except OSError as e:
        raise RasClientError(f"cannot reach RAS at {host}:{port}: {e.strerror or e} (is the job running here, "
                             "with NCCL_RAS_ENABLE=1 and this NCCL_RAS_ADDR?)") from None
    try:
        reader = _Lines(sock, deadline)
        sock.sendall(f"CLIENT PROTOCOL {PROTOCOL}\n".encode())
        hello = reader.line()
        if not hello.upper().startswith("SERVER PROTOCOL "):
            raise RasClientError(f"{host}:{port} did not answer as NCCL's RAS: {hello[:80]!r}")
        if fmt and cmd != "DIAGNOSTICS":
            sock.sendall(f"SET FORMAT {fmt}\n".encode())
            ok = reader.line()
            if ok.upper() != "OK":
                raise RasClientError(f"RAS refused SET FORMAT {fmt}: {ok[:120]!r} (JSON needs NCCL 2.28.7 or later)")
        sock.sendall(f"{cmd}\n".encode())
        return reader.rest()
    except OSError as e:
        raise RasClientError(f"RAS at {host}:{port}: {e.strerror or e}") from None
    finally:
        sock.close()


class _Lines:
    """Reads a socket line by line, then to its end, within a deadline and a size cap."""

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock, self.deadline, self.buf, self.total = sock, deadline, b"", 0

    def _recv(self) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RasClientError("RAS did not answer in time")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise RasClientError("RAS did not answer in time") from None
        self.total += len(data)
        if self.total > MAX_BYTES:
            raise RasClientError(f"RAS sent more than {MAX_BYTES} bytes: not an answer rocetune reads")
        return data

    def line(self) -> str:
        while b"\n" not in self.buf:
            data = self._recv()
            if not data:
                raise RasClientError("RAS closed the connection before answering")
            self.buf += data
            if len(self.buf) > 4096:
                raise RasClientError("RAS sent a handshake line longer than 4096 bytes")
        head, _, self.buf = self.buf.partition(b"\n")
        return head.decode("utf-8", "replace").strip()

    def rest(self) -> bytes:
        chunks = [self.buf]
        while True:
            data = self._recv()
            if not data:
                return b"".join(chunks)
            chunks.append(data)


def poll_job(host: str, port: int = DEFAULT_PORT, interval: float = 10.0, timeout: float = 30.0,
             sleep: Callable[[float], None] = time.sleep, connect: Optional[Connect] = None):
    """Two STATUS polls `interval` seconds apart (JSON, else text where the release has no JSON), then RAS
    diagnostics where the release has them (2.31+): (first, second, diagnostics text or None, notes)."""
    from .ras import read_status

    notes = []
    fmt: Optional[str] = "json"
    try:
        first = query(host, port, "STATUS", fmt, timeout, connect)
    except RasClientError as e:
        if "SET FORMAT" not in str(e):
            raise
        fmt = None
        notes.append("RAS has no JSON output before NCCL 2.28.7: the text status is read")
        first = query(host, port, "STATUS", fmt, timeout, connect)
    sleep(interval)
    second = query(host, port, "STATUS", fmt, timeout, connect)
    diag: Optional[str] = None
    try:
        answer = query(host, port, "DIAGNOSTICS", None, timeout, connect).decode("utf-8", "replace")
        if "NCCL DIAG" in answer:
            diag = answer
        else:
            notes.append("RAS diagnostics: " + (answer.strip().splitlines() or ["no answer"])[0][:160] +
                         " (NCCL 2.31 or later runs them)")
    except RasClientError as e:
        notes.append(f"RAS diagnostics not read: {e}")
    return read_status(first), read_status(second), diag, notes
