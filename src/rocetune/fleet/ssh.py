"""SSH to the fleet's hosts with paramiko, for sites without Ansible: strict host keys, one
deadline per host, commands whose output is drained as it comes.

Host keys are checked strictly: a host whose key is not in known_hosts is refused (with its
fingerprint and how to accept it), unless accept_new is set, which records an unknown key and
never a changed one. A changed key is refused always (paramiko's BadHostKeyException).

known_hosts is read as OpenSSH reads it, by this module rather than by paramiko (whose reader
fails the whole file on one marker line): ~/.ssh/known_hosts, the system's
/etc/ssh/ssh_known_hosts and --known-hosts. A `@revoked` key is refused for every host, with
--accept-new too; a `@cert-authority` line is skipped (paramiko cannot check host certificates:
a host known only through one is unknown here); a line paramiko cannot read is skipped.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass
from typing import Optional, Tuple

from .targets import Target

_POLL_S = 0.02
SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
MAX_KNOWN_HOSTS_BYTES = 16 << 20
_parsed: dict = {}  # (path, mtime, size) -> (entries, revoked): parsed once for all hosts
_parsed_lock = threading.Lock()


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
    revoked = load_known_hosts(client.get_host_keys(), known_hosts_files(known_hosts))
    policy = _Policy(target, known_hosts, accept_new, lock, revoked)
    client.set_missing_host_key_policy(policy)  # type: ignore[arg-type]  # duck-typed: paramiko loads lazily
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
        while not chan.exit_status_ready() and not chan.closed:  # the status may follow the EOF
            deadline.left(target, step)
            time.sleep(_POLL_S)
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
            # The end of output is the channel's EOF, not the exit status: sshd sends the status
            # when the command exits, while what it wrote may still wait in the pipe (OpenSSH
            # session.c, session_exit_message), so data can follow the status.
            done = chan.eof_received or chan.closed
            if done and not chan.recv_ready() and not chan.recv_stderr_ready():
                return bytes(out), bytes(err)
            deadline.left(target, step)
            time.sleep(_POLL_S)


class _Unknown(Exception):
    pass


def known_hosts_files(extra: Optional[str]) -> list:
    """What OpenSSH reads for host keys (~/.ssh/known_hosts, the system's file), and --known-hosts."""
    paths = [os.path.expanduser("~/.ssh/known_hosts"), SYSTEM_KNOWN_HOSTS]
    return paths + [extra] if extra and extra not in paths else paths


def load_known_hosts(host_keys, paths) -> set:
    """Add every usable entry of `paths` to paramiko's HostKeys `host_keys`; returns the revoked
    keys as (type, base64) pairs, which are never added. Missing or unreadable files add nothing."""
    revoked: set = set()
    entries: list = []
    for path in paths:
        got = _parse_known_hosts(path)
        entries += got[0]
        revoked |= got[1]
    for names, key in entries:
        if (key.get_name(), key.get_base64()) in revoked:
            continue
        for name in names:
            host_keys.add(name, key.get_name(), key)
    return revoked


def _parse_known_hosts(path: str):
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input

    try:
        st = os.stat(path)
    except OSError:
        return [], set()
    stamp = (path, st.st_mtime_ns, st.st_size)
    with _parsed_lock:
        if stamp in _parsed:
            return _parsed[stamp]
    try:
        text = read_input(path, MAX_KNOWN_HOSTS_BYTES).decode("utf-8", "replace")
    except (HostReadError, OSError):
        return [], set()
    entries, revoked = [], set()
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields[0].lower() if fields[0].startswith("@") else None
        if marker is not None:
            fields = fields[1:]
            if marker != "@revoked":
                continue  # @cert-authority: host certificates are not checked by paramiko
        key = _key(fields)
        if key is None:
            continue
        if marker == "@revoked":
            revoked.add((key.get_name(), key.get_base64()))
        else:
            entries.append((fields[0].split(","), key))
    with _parsed_lock:
        _parsed[stamp] = (entries, revoked)
    return entries, revoked


def _key(fields):
    """The key of a known_hosts entry's fields (names, type, base64, ...), or None."""
    from paramiko.hostkeys import HostKeyEntry

    if len(fields) < 3:
        return None
    try:
        entry = HostKeyEntry.from_line(" ".join(fields[:3]))
    except Exception:  # paramiko raises several types for a key it cannot read
        return None
    return entry.key if entry is not None else None


def _append(path: str, data: bytes) -> None:
    """Append to a known_hosts file: never through a link, to a FIFO or device, or to a file
    with another name elsewhere (a hard link to one of root's)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise _Unknown(f"cannot record the host key in {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise _Unknown(f"cannot record the host key in {path}: not a regular file of one name")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


class _Policy:
    """Refuse an unknown host key, or record it when accept_new is set. A changed key never
    reaches a policy: paramiko refuses it before."""

    def __init__(self, target: Target, known_hosts: Optional[str], accept_new: bool, lock: threading.Lock,
                 revoked: Optional[set] = None):
        self.target, self.known_hosts, self.accept_new, self.lock = target, known_hosts, accept_new, lock
        self.revoked = revoked or set()

    def missing_host_key(self, client, hostname, key) -> None:
        fp = fingerprint(key)
        name = self.target.key_name
        if (key.get_name(), key.get_base64()) in self.revoked:
            raise _Unknown(f"host key of {name} ({key.get_name()} {fp}) is REVOKED in known_hosts; refused")
        if not self.accept_new:
            port = self.target.port or 22
            scan = f"ssh-keyscan{' -p ' + str(port) if port != 22 else ''} {self.target.hostname}"
            raise _Unknown(f"host key of {name} is unknown ({key.get_name()} {fp}); refused. Check the "
                           f"fingerprint, then add it ({scan} >> ~/.ssh/known_hosts) or rerun with --accept-new")
        path = self.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
        line = f"{name} {key.get_name()} {key.get_base64()}\n"
        with self.lock:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            _append(path, line.encode("utf-8"))
        client.get_host_keys().add(name, key.get_name(), key)
