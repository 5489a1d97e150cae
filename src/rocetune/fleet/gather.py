"""Gather the fleet's results over SSH (paramiko, fleet.ssh), for sites without Ansible: on each
host run `COMMAND --json doctor -v --no-counters` (with -v its data holds probe's Features and plan too), and
write DIR/HOST.json (core.fleet_host_doc) atomically, with `error` saying why when the host could not
be gathered.

Every host has one deadline for connect, authentication and the command, so a dead or slow
host is reported as failed and never holds up the others beyond it. What a node sends is bounded
by what a result can honestly be (results.MAX_BYTES, and MAX_VALUES values counted before it is
parsed), and at most PARSING outputs are parsed and written at once: sixteen hosts at a time
never hold sixteen parsed documents.
"""

from __future__ import annotations

import datetime
import os
import shlex
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, List, Optional

from ..core.fleet_host_doc import OK_EXITS, dumps, new_doc
from ..fsutil import atomic_write
from ..model.jsonread import JsonError, load_json
from . import ssh
from .results import MAX_BYTES
from .targets import Target

PARSING = 2
_parsing = threading.BoundedSemaphore(PARSING)  # gather: a node's output parsed and written
_decoding = threading.BoundedSemaphore(PARSING)  # any caller of envelope_data (validate, preflight)


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


def gather(targets: List[Target], out_dir: str, opts: Options,
           progress: Optional[Callable[[int, int, int], None]] = None) -> List[Outcome]:
    """Gather every target, at most opts.forks at once; the outcomes in the targets' order."""
    ssh.quiet_paramiko()
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
    doc = new_doc(target.name, _now())
    # -v: doctor's whole data (qos check --hosts reads the Features), not only the verdict and facts
    done, command = None, f"{opts.command} --json doctor -v --no-counters"
    try:
        done = _collect(target, opts, lock, command)
    except ssh.Failure as exc:
        doc["error"] = str(exc)
    except Exception as exc:  # any other paramiko or socket failure is this host's, never the run's
        doc["error"] = f"ssh {ssh.where(target)}: {type(exc).__name__}: {str(exc)[:300]}"
    path = os.path.join(out_dir, f"{target.name}.json")
    with _parsing:  # parsed, written and dropped before another host's output is parsed
        if done is not None:
            try:
                doc["doctor"] = envelope_data(target, "doctor", command, done)
            except ssh.Failure as exc:
                doc["error"] = str(exc)
            done = None
        atomic_write(path, dumps(doc))
    return Outcome(target.name, path, doc["error"])


def _collect(target: Target, opts: Options, lock: threading.Lock, command: str) -> ssh.Completed:
    deadline = ssh.Deadline(opts.timeout)
    client = ssh.connect(target, deadline, opts.known_hosts, opts.accept_new, lock)
    try:
        # doctor's data carries probe's Features and plan with its own findings: one process per
        # host gives both (HOST.json's `probe` stays null; results.from_doc reads either).
        return ssh.run(client, target, command, "doctor", deadline, MAX_BYTES)
    finally:
        client.close()


def envelope_data(target: Target, verb: str, command: str, done: ssh.Completed) -> dict:
    """The `data` of one verb's --json envelope; ssh.Failure (one line) when it has none."""
    code, out = done.code, done.out
    first_err = done.first_err_line()
    said = f" (stderr: {first_err[:200]})" if first_err else ""
    if code == 127:
        raise ssh.Failure(f"{verb} on {target.name}: command not found: {shlex.split(command)[0]}{said}")
    try:
        with _decoding:
            env = load_json(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        start = out[:80].decode("utf-8", "replace").strip()
        why = f": {exc}" if isinstance(exc, JsonError) and str(exc).startswith("more than") else ""
        raise ssh.Failure(f"{verb} on {target.name} exited {code} and printed no JSON rocetune reads "
                          f"({start[:40]!r}{why}){said}") from None
    if not isinstance(env, dict) or not isinstance(env.get("data"), dict):
        raise ssh.Failure(f"{verb} on {target.name}: the output is not a rocetune --json envelope")
    if code not in OK_EXITS or env.get("status") == "error":
        errors = env.get("errors") or []
        why = next((str(e.get("message"))[:300] for e in errors if isinstance(e, dict) and e.get("message")), "")
        raise ssh.Failure(f"{verb} on {target.name} failed (exit {code}){': ' + why if why else said}")
    return env["data"]


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
