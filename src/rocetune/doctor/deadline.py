"""Run a piece of work with a deadline it cannot overrun.

A health check must answer within its budget even when what it reads hangs (a sysfs file of a
wedged driver, a tool stuck in the kernel). The work runs in a forked child, in a process
group of its own, and sends its JSON result back through a pipe; at the deadline the whole
group is killed and the parent answers without it. A child stuck where no signal reaches it
(uninterruptible sleep) is left behind, but does not hold the answer up, and its output never
reaches the caller's stdout or stderr (the child's are /dev/null).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import ExitCode, RocetuneError


@dataclass
class Done:
    """How the work ended: `value` (it finished), `error` and `code` (it raised: a
    RocetuneError's own code, 70 for anything else), or `timed_out`."""

    value: Any = None
    error: Optional[str] = None
    code: int = 0
    timed_out: bool = False
    elapsed: float = 0.0


def run(work: Callable[[], Any], timeout: float) -> Done:
    """`work()` (returning JSON-able data) in a child process, for at most `timeout` seconds."""
    start = time.monotonic()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its outcome is what the parent reads
        os.close(read_end)
        _child(work, write_end)
    try:  # both sides set the group, so a kill right after the fork finds it
        os.setpgid(pid, pid)
    except OSError:
        pass
    os.close(write_end)
    chunks = []
    deadline = start + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    elapsed = time.monotonic() - start
    if timed_out:
        _kill_group(pid)
        return Done(timed_out=True, elapsed=elapsed, code=int(ExitCode.INTERNAL))
    _reap(pid, 5.0)
    try:
        doc = json.loads(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Done(error="the check process ended without a result", code=int(ExitCode.INTERNAL), elapsed=elapsed)
    if "error" in doc:
        return Done(error=str(doc["error"]), code=int(doc.get("code") or ExitCode.INTERNAL), elapsed=elapsed)
    return Done(value=doc.get("value"), elapsed=elapsed)


def _child(work: Callable[[], Any], write_end: int) -> None:  # pragma: no cover - runs in the child
    code = 0
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        # also where they were not fds 1 and 2; the child exits without closing it
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            payload = {"value": work()}
        except RocetuneError as exc:
            payload = {"error": exc.message, "code": int(exc.code)}
        except BaseException as exc:  # noqa: BLE001 - any failure of the work is reported, not raised
            payload = {"error": f"unexpected {type(exc).__name__}: {exc}", "code": int(ExitCode.INTERNAL)}
        data = json.dumps(payload, sort_keys=True).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
    except BaseException:  # noqa: BLE001 - nothing to report to: the parent sees no result
        code = 1
    finally:
        os._exit(code)


def _kill_group(pid: int) -> None:
    """The child and everything it started (its process group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _reap(pid, 1.0)


def _reap(pid: int, wait: float) -> None:
    """Collect the child's exit without waiting past `wait` (a child in uninterruptible sleep
    never ends; the caller answers anyway)."""
    end = time.monotonic() + wait
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > end:
            return
        time.sleep(0.01)
