"""SSH to the fleet's hosts with paramiko, for sites without Ansible: strict host keys, one
deadline per host, commands whose output is drained as it comes.

Host keys are checked strictly: a host whose key is not in known_hosts is refused (with its
fingerprint and how to accept it), unless accept_new is set, which records an unknown key and
never a changed one. A changed key is refused always (paramiko's BadHostKeyException).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Optional, Tuple

from .targets import Target

_POLL_S = 0.02


class Failure(Exception):
    """Why a host could not be reached or a command on it did not finish: one line."""


@dataclass
class Completed:
    code: int  # -1: no exit status came back
    out: bytes
    err: bytes

    def first_err_line(self) -> str:
        return next((ln.strip() for ln in self.err.decode("utf-8", "replace").splitlines() if ln.strip()), "")


class Deadline:
    """One host's time for everything done on it."""

    def __init__(self, total: float):
        self.total = total
        self.at = time.monotonic() + total

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def left(self, target: Target, step: str) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise Failure(f"{target.name}: timed out after {self.total:g} s ({step} had not finished)")
        return left


def fingerprint(key) -> str:
    """OpenSSH's SHA256 fingerprint of a paramiko key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def quiet_paramiko() -> None:
    # paramiko logs each transport's failure with its traceback; the caller says it in one line.
    logging.getLogger("paramiko").addHandler(logging.NullHandler())


def where(target: Target) -> str:
    return f"{target.name}" + (f" ({target.hostname}:{target.port})" if target.hostname != target.name
                               or (target.port or 22) != 22 else "")


def connect(target: Target, deadline: Deadline, known_hosts: Optional[str], accept_new: bool,
            lock: threading.Lock):
    """A connected paramiko SSHClient; Failure (one line) when it cannot be."""
    import socket

    import paramiko

    client = paramiko.SSHClient()
    client.load_system_host_keys()  # ~/.ssh/known_hosts; a missing file is no error
    if known_hosts and os.path.isfile(known_hosts):
        client.get_host_keys().load(known_hosts)
    client.set_missing_host_key_policy(_Policy(target, known_hosts, accept_new, lock))  # type: ignore[arg-type]
    left = deadline.left(target, "connect")
    try:
        client.connect(target.hostname, port=target.port or 22, username=target.user,
                       key_filename=target.identities or None,  # type: ignore[arg-type]  # a list is documented
                       timeout=left, banner_timeout=left,
                       auth_timeout=left, channel_timeout=left, allow_agent=True,
                       look_for_keys=not target.identities)
        return client
    except paramiko.BadHostKeyException as exc:
        why = (f"host key CHANGED for {target.key_name}: known_hosts has {fingerprint(exc.expected_key)}, "
               f"the host offers {fingerprint(exc.key)}; refused (possible man-in-the-middle; if the host was "
               f"reinstalled, remove the old key with ssh-keygen -R '{target.key_name}')")
    except _Unknown as exc:
        why = str(exc)
    except paramiko.AuthenticationException as exc:
        why = f"ssh {where(target)}: authentication failed ({exc})"
    except paramiko.ssh_exception.NoValidConnectionsError as exc:
        why = f"ssh {where(target)}: cannot connect: " + "; ".join(
            sorted({getattr(e, 'strerror', None) or str(e) for e in exc.errors.values()}))
    except (socket.timeout, TimeoutError):
        why = f"ssh {where(target)}: timed out connecting"
    except paramiko.SSHException as exc:
        if deadline.passed or "timeout" in str(exc).lower():
            why = f"ssh {where(target)}: timed out connecting (no SSH answer within {deadline.total:g} s)"
        else:
            why = f"ssh {where(target)}: {exc}"
    except OSError as exc:
        why = f"ssh {where(target)}: {exc.strerror or exc}"
    client.close()
    raise Failure(why)


def start(client, target: Target, command: str, step: str, deadline: Deadline, stdin: Optional[bytes] = None):
    """A channel running `command` (a server the caller waits for later with `finish`); `stdin`,
    when given, is sent and the channel's input closed."""
    chan = client.get_transport().open_session(timeout=deadline.left(target, step))
    chan.exec_command(command)
    if stdin is not None:
        chan.sendall(stdin)
        chan.shutdown_write()
    return chan


def finish(chan, target: Target, step: str, deadline: Deadline, max_bytes: int) -> Completed:
    """Drain a started command until it exits (Failure at the deadline or past max_bytes)."""
    try:
        out, err = _drain(chan, target, step, deadline, max_bytes)
        code = chan.recv_exit_status() if chan.exit_status_ready() else -1
    finally:
        chan.close()
    return Completed(code, out, err)


def run(client, target: Target, command: str, step: str, deadline: Deadline, max_bytes: int,
        stdin: Optional[bytes] = None) -> Completed:
    return finish(start(client, target, command, step, deadline, stdin), target, step, deadline, max_bytes)


def _drain(chan, target: Target, step: str, deadline: Deadline, max_bytes: int) -> Tuple[bytes, bytes]:
    out, err = bytearray(), bytearray()
    while True:
        busy = False
        if chan.recv_ready():
            out += chan.recv(65536)
            busy = True
        if chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
            busy = True
        if len(out) > max_bytes or len(err) > max_bytes:
            raise Failure(f"{step} on {target.name}: output larger than {max(1, max_bytes // (1024 * 1024))} MiB")
        if not busy:
            if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
                return bytes(out), bytes(err)
            if chan.closed and not chan.recv_ready():
                return bytes(out), bytes(err)
            deadline.left(target, step)
            time.sleep(_POLL_S)


class _Unknown(Exception):
    pass


class _Policy:
    """Refuse an unknown host key, or record it when accept_new is set. A changed key never
    reaches a policy: paramiko refuses it before."""

    def __init__(self, target: Target, known_hosts: Optional[str], accept_new: bool, lock: threading.Lock):
        self.target, self.known_hosts, self.accept_new, self.lock = target, known_hosts, accept_new, lock

    def missing_host_key(self, client, hostname, key) -> None:
        fp = fingerprint(key)
        name = self.target.key_name
        if not self.accept_new:
            port = self.target.port or 22
            scan = f"ssh-keyscan{' -p ' + str(port) if port != 22 else ''} {self.target.hostname}"
            raise _Unknown(f"host key of {name} is unknown ({key.get_name()} {fp}); refused. Check the "
                           f"fingerprint, then add it ({scan} >> ~/.ssh/known_hosts) or rerun with --accept-new")
        path = self.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
        line = f"{name} {key.get_name()} {key.get_base64()}\n"
        with self.lock:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        client.get_host_keys().add(name, key.get_name(), key)
