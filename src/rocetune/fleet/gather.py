"""Gather the fleet's results over SSH (paramiko), for sites without Ansible: on each host run
`COMMAND --json probe` and `COMMAND --json doctor --no-counters`, and write DIR/HOST.json
(results.SCHEMA) atomically, with `error` saying why when the host could not be gathered.

Host keys are checked strictly: a host whose key is not in known_hosts is refused (with its
fingerprint and how to accept it), unless accept_new is set, which records an unknown key and
never a changed one. A changed key is refused always (paramiko's BadHostKeyException).

Every host has one deadline for connect, authentication and both commands, so a dead or slow
host is reported as failed and never holds up the others beyond it.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import logging
import os
import shlex
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from ..fsutil import atomic_write
from .results import MAX_BYTES, SCHEMA
from .targets import Target

OK_EXITS = (0, 1, 5)  # ran: clean, error findings, warnings (docs/cli.md)
_POLL_S = 0.02


class GatherFailure(Exception):
    """Why one host could not be gathered: one line, written to its result's `error`."""


@dataclass
class Options:
    command: str = "rocetune"
    timeout: float = 60.0
    known_hosts: Optional[str] = None  # also read; where --accept-new records keys (else ~/.ssh/known_hosts)
    accept_new: bool = False
    forks: int = 16


@dataclass
class Outcome:
    host: str
    path: str
    error: Optional[str]


def fingerprint(key) -> str:
    """OpenSSH's SHA256 fingerprint of a paramiko key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


def gather(targets: List[Target], out_dir: str, opts: Options,
           progress: Optional[Callable[[int, int, int], None]] = None) -> List[Outcome]:
    """Gather every target, at most opts.forks at once; the outcomes in the targets' order."""
    # paramiko logs each transport's failure with its traceback; the host's result says it in one line.
    logging.getLogger("paramiko").addHandler(logging.NullHandler())
    lock = threading.Lock()
    outcomes = {}
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, opts.forks)) as pool:
        futures = {pool.submit(_one, t, out_dir, opts, lock): t for t in targets}
        for n, future in enumerate(as_completed(futures), 1):
            outcome = future.result()
            outcomes[outcome.host] = outcome
            failed += outcome.error is not None
            if progress:
                progress(n, len(targets), failed)
    return [outcomes[t.name] for t in targets]


def _one(target: Target, out_dir: str, opts: Options, lock: threading.Lock) -> Outcome:
    doc = {"schema": SCHEMA, "host": target.name, "probe": None, "doctor": None,
           "gathered_at": _now(), "error": None}
    try:
        _collect(target, opts, lock, doc)
    except GatherFailure as exc:
        doc["error"] = str(exc)
    except Exception as exc:  # any other paramiko or socket failure is this host's, never the run's
        doc["error"] = f"ssh {_where(target)}: {type(exc).__name__}: {str(exc)[:300]}"
    path = os.path.join(out_dir, f"{target.name}.json")
    atomic_write(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return Outcome(target.name, path, doc["error"])


def _collect(target: Target, opts: Options, lock: threading.Lock, doc: dict) -> None:
    import paramiko

    deadline = _Deadline(opts.timeout)
    client = paramiko.SSHClient()
    try:
        client.load_system_host_keys()  # ~/.ssh/known_hosts; a missing file is no error
        if opts.known_hosts and os.path.isfile(opts.known_hosts):
            client.get_host_keys().load(opts.known_hosts)
        client.set_missing_host_key_policy(_Policy(target, opts, lock))
        _connect(client, target, deadline)
        for verb, argv in (("probe", "--json probe"), ("doctor", "--json doctor --no-counters")):
            doc[verb] = _run(client, target, f"{opts.command} {argv}", verb, deadline)
    finally:
        client.close()


def _connect(client, target: Target, deadline: _Deadline) -> None:
    import socket

    import paramiko

    left = _left(target, deadline, "connect")
    try:
        client.connect(target.hostname, port=target.port or 22, username=target.user,
                       key_filename=target.identities or None, timeout=left, banner_timeout=left,
                       auth_timeout=left, channel_timeout=left, allow_agent=True,
                       look_for_keys=not target.identities)
    except paramiko.BadHostKeyException as exc:
        raise GatherFailure(
            f"host key CHANGED for {target.key_name}: known_hosts has {fingerprint(exc.expected_key)}, "
            f"the host offers {fingerprint(exc.key)}; refused (possible man-in-the-middle; if the host was "
            f"reinstalled, remove the old key with ssh-keygen -R '{target.key_name}')") from None
    except _Unknown as exc:
        raise GatherFailure(str(exc)) from None
    except paramiko.AuthenticationException as exc:
        raise GatherFailure(f"ssh {_where(target)}: authentication failed ({exc})") from None
    except paramiko.ssh_exception.NoValidConnectionsError as exc:
        why = "; ".join(sorted({e.strerror or str(e) for e in exc.errors.values()}))
        raise GatherFailure(f"ssh {_where(target)}: cannot connect: {why}") from None
    except (socket.timeout, TimeoutError):
        raise GatherFailure(f"ssh {_where(target)}: timed out connecting") from None
    except paramiko.SSHException as exc:
        if deadline.passed or "timeout" in str(exc).lower():
            raise GatherFailure(f"ssh {_where(target)}: timed out connecting "
                                f"(no SSH answer within {deadline.total:g} s)") from None
        raise GatherFailure(f"ssh {_where(target)}: {exc}") from None
    except OSError as exc:
        raise GatherFailure(f"ssh {_where(target)}: {exc.strerror or exc}") from None


def _run(client, target: Target, command: str, verb: str, deadline: _Deadline) -> dict:
    """The `data` of one verb's --json envelope."""
    chan = client.get_transport().open_session(timeout=_left(target, deadline, verb))
    try:
        chan.exec_command(command)
        out, err = _drain(chan, target, verb, deadline)
        code = chan.recv_exit_status() if chan.exit_status_ready() else -1
    finally:
        chan.close()
    return _envelope(target, verb, command, code, out, err)


def _drain(chan, target: Target, verb: str, deadline: _Deadline) -> Tuple[bytes, bytes]:
    out, err = bytearray(), bytearray()
    while True:
        busy = False
        if chan.recv_ready():
            out += chan.recv(65536)
            busy = True
        if chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
            busy = True
        if len(out) > MAX_BYTES:
            raise GatherFailure(f"{verb} on {target.name}: output larger than {MAX_BYTES // (1024 * 1024)} MiB")
        if not busy:
            if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
                return bytes(out), bytes(err)
            if chan.closed and not chan.recv_ready():
                return bytes(out), bytes(err)
            _left(target, deadline, verb)
            time.sleep(_POLL_S)


def _envelope(target: Target, verb: str, command: str, code: int, out: bytes, err: bytes) -> dict:
    first_err = next((ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()), "")
    said = f" (stderr: {first_err[:200]})" if first_err else ""
    if code == 127:
        raise GatherFailure(f"{verb} on {target.name}: command not found: {shlex.split(command)[0]}{said}")
    try:
        env = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        start = out[:80].decode("utf-8", "replace").strip()
        raise GatherFailure(f"{verb} on {target.name} exited {code} and printed no JSON "
                            f"({start!r}){said}") from None
    if not isinstance(env, dict) or not isinstance(env.get("data"), dict):
        raise GatherFailure(f"{verb} on {target.name}: the output is not a rocetune --json envelope")
    if code not in OK_EXITS or env.get("status") == "error":
        errors = env.get("errors") or []
        why = next((str(e.get("message"))[:300] for e in errors if isinstance(e, dict) and e.get("message")), "")
        raise GatherFailure(f"{verb} on {target.name} failed (exit {code}){': ' + why if why else said}")
    return env["data"]


class _Deadline:
    """One host's time for connect, authentication and both commands."""

    def __init__(self, total: float):
        self.total = total
        self.at = time.monotonic() + total

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at


def _left(target: Target, deadline: _Deadline, step: str) -> float:
    left = deadline.at - time.monotonic()
    if left <= 0:
        raise GatherFailure(f"{target.name}: timed out after {deadline.total:g} s ({step} had not finished)")
    return left


def _where(target: Target) -> str:
    return f"{target.name}" + (f" ({target.hostname}:{target.port})" if target.hostname != target.name
                               or (target.port or 22) != 22 else "")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Unknown(Exception):
    pass


class _Policy:
    """Refuse an unknown host key, or record it when accept_new is set. A changed key never
    reaches a policy: paramiko refuses it before."""

    def __init__(self, target: Target, opts: Options, lock: threading.Lock):
        self.target, self.opts, self.lock = target, opts, lock

    def missing_host_key(self, client, hostname, key) -> None:
        fp = fingerprint(key)
        name = self.target.key_name
        if not self.opts.accept_new:
            port = self.target.port or 22
            scan = f"ssh-keyscan{' -p ' + str(port) if port != 22 else ''} {self.target.hostname}"
            raise _Unknown(f"host key of {name} is unknown ({key.get_name()} {fp}); refused. Check the "
                           f"fingerprint, then add it ({scan} >> ~/.ssh/known_hosts) or rerun with --accept-new")
        path = self.opts.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
        line = f"{name} {key.get_name()} {key.get_base64()}\n"
        with self.lock:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        client.get_host_keys().add(name, key.get_name(), key)
