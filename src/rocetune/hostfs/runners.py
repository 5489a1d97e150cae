"""Commands a probe runs: `LiveRunner` on this machine, `RecordedRunner` from a root's
`commands/<argv>.txt`; both answer with a `CommandResult`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set

from .command import CommandResult, recording_name

if TYPE_CHECKING:
    from .recorder import Recorder
    from .root import HostRoot


def which(name: str) -> Optional[str]:
    """shutil.which(name) on Linux, without importing shutil (zlib, bz2 and lzma with it: a few
    ms of a live probe's start)."""
    if "/" in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or os.curdir, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


class LiveRunner:
    """Runs commands on this machine, with a timeout; a missing tool is `found=False`.

    `start(argvs)` launches commands ahead of the `run` that reads them, side by side: a probe
    starts its slow independent tools (two nvidia-smi calls, 20-60 ms each on an H100 host,
    `ip -j addr show`, one `mlnx_qos` per RoCE port) before it reads what they precede, and
    `run` then waits only for what is left. At most `parallel` run at once; the rest start as
    earlier ones are read. What `run` returns, and what is recorded, is the same as without
    `start`; `close()` ends what was started and never read.
    """

    def __init__(self, timeout: float = 20.0, recorder: Optional[Recorder] = None,
                 parallel: Optional[int] = None):
        self.timeout = timeout
        self.recorder = recorder
        self.parallel = parallel or min(8, os.cpu_count() or 1)
        self._started: Dict[tuple, tuple] = {}  # argv -> (Popen, deadline)
        self._queued: Dict[tuple, None] = {}  # argvs to start, in order

    def start(self, argvs: Sequence[Sequence[str]]) -> None:
        for argv in argvs:
            key = tuple(argv)
            if key not in self._started:
                self._queued[key] = None
        self._fill()

    def _fill(self) -> None:
        import subprocess
        import time

        while self._queued and len(self._started) < self.parallel:
            key = next(iter(self._queued))
            del self._queued[key]
            if which(key[0]) is None:
                continue  # a missing tool is reported by run()
            try:
                proc = subprocess.Popen(list(key), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env={**os.environ, "LC_ALL": "C"})
            except OSError:
                continue
            self._started[key] = (proc, time.monotonic() + self.timeout)

    def run(self, argv: Sequence[str]) -> CommandResult:
        import subprocess

        argv = list(argv)
        self._queued.pop(tuple(argv), None)  # not started yet: run now
        started = self._started.pop(tuple(argv), None)
        if started is not None:
            result = self._finish(argv, *started)
            self._fill()
        elif which(argv[0]) is None:
            result = CommandResult(argv, found=False, reason=f"{argv[0]} not found on PATH")
        else:
            try:
                proc = subprocess.run(
                    argv, capture_output=True, timeout=self.timeout, check=False,
                    env={**os.environ, "LC_ALL": "C"},
                )
                result = CommandResult(
                    argv, True, proc.returncode,
                    proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"),
                )
            except subprocess.TimeoutExpired:
                result = CommandResult(argv, True, 124, reason=f"timed out after {self.timeout:g}s")
            except OSError as exc:
                result = CommandResult(argv, False, reason=str(exc))
        if self.recorder is not None and result.found:
            self.recorder.commands[recording_name(argv)] = result
        return result

    def _finish(self, argv: List[str], proc, deadline: float) -> CommandResult:
        import subprocess
        import time

        try:
            out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return CommandResult(argv, True, 124, reason=f"timed out after {self.timeout:g}s")
        return CommandResult(argv, True, proc.returncode, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"))

    def close(self) -> None:
        """End the commands started and never read (a source that failed before reading)."""
        started, self._started, self._queued = self._started, {}, {}
        for proc, _ in started.values():
            proc.kill()
            proc.communicate()


class RecordedRunner:
    """Replays `ROOT/commands/<name>.txt` (stdout), optional `.rc` (exit code) and `.err`."""

    def __init__(self, root: HostRoot):
        self.root = root
        self._names: Optional[Set[str]] = None  # what commands/ holds, listed once

    def _read(self, name: str) -> Optional[str]:
        # A probe asks for a few commands per netdev (QoS tools on 500 SR-IOV VFs): the listing
        # answers "not recorded" without an open for each. Read inside the root, as host files
        # are: a recording that links out of it is refused with a warning.
        if self._names is None:
            self._names = self.root.list_recordings("/commands")
        return self.root.read_recording("/commands/" + name) if name in self._names else None

    def run(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        name = recording_name(argv)
        out = self._read(name + ".txt")
        if out is None:
            return CommandResult(argv, found=False, reason=f"no recording commands/{name}.txt")
        rc_text = self._read(name + ".rc")
        try:
            rc = int(rc_text.strip()) if rc_text else 0
        except ValueError:
            rc = 1
        return CommandResult(argv, True, rc, out, self._read(name + ".err") or "")


def start_commands(runner, argvs: Sequence[Sequence[str]]) -> None:
    """Let `runner` start these commands ahead of their `run` (a runner that cannot, or a
    recorded root, runs each when it is asked for)."""
    start = getattr(runner, "start", None)
    if start is not None:
        start(argvs)


def close_runner(runner) -> None:
    close = getattr(runner, "close", None)
    if close is not None:
        close()


def runner_for(root: HostRoot, recorder: Optional[Recorder] = None):
    """Live commands on the real root, recorded ones anywhere else."""
    return LiveRunner(recorder=recorder) if root.is_live else RecordedRunner(root)
