"""Gather the fleet's results through Slurm itself: one `srun` step, one task on each node, Slurm's
own fan-out (slurmd's tree) instead of one SSH connection per host.

Each task runs `sh -c 'echo "@node $SLURMD_NODENAME"; COMMAND --json doctor --no-counters; echo
"@rc $?"'`: its first line is the node's Slurm name, set by slurmstepd before rocetune runs (so
nothing doctor reads can forge it), its last the exit status. srun's `--label` puts the task id in
front of every line (`03: ...`, src/common/write_labelled_message.c), so the nodes' outputs,
interleaved on one pipe, are told apart. srun labels what each message from a node carries, and
ends a message that stops mid-line with a newline of its own (the same file, "no newline found"): a line longer than a
message (doctor's JSON is one line of about 12 KB) reaches here as several labelled pieces, so a
node's pieces are joined as they are, without newlines (JSON needs none between its tokens, and
its strings hold none). Each node's output is held only until its last line, checked as
`fleet gather` checks what SSH brings (fleet.gather.envelope_data), written to DIR/NODE.json
(core.fleet_host_doc) and dropped. Compact doctor (no -v): the verdict and the node's fleet facts, at
most 20 KB a node, which is what `fleet report` reads.

A node named but not heard from (down, not in the step, killed at the deadline) gets a file
whose `error` says so; a task that names a node not asked for, or one already heard, is refused.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from ..core.fleet_host_doc import HOST_NAME, dumps, new_doc
from ..fsutil import atomic_write
from . import ssh
from .gather import Outcome, envelope_data
from .results import MAX_BYTES
from .targets import Target

LABEL = re.compile(rb"^\s*(\d+): ?(.*)$", re.S)
NODE_LINE = b"@node "
RC_LINE = re.compile(rb"^@rc (\d{1,3})$")
STDERR_KEPT = 20


@dataclass
class Options:
    command: str = "rocetune"
    timeout: float = 300.0  # the whole step
    srun: str = "srun"
    srun_args: Sequence[str] = ()


@dataclass
class _Task:
    node: Optional[str] = None
    lines: List[bytes] = field(default_factory=list)
    size: int = 0
    error: Optional[str] = None


def argv(nodes: Sequence[str], opts: Options) -> List[str]:
    script = f'echo "@node $SLURMD_NODENAME"; {opts.command} --json doctor --no-counters; echo "@rc $?"'
    return [
        opts.srun,
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(nodes)}",
        "--label",
        "--kill-on-bad-exit=0",
        "--job-name=rocetune-gather",
        *opts.srun_args,
        "sh",
        "-c",
        script,
    ]


def gather(
    nodes: Sequence[str],
    out_dir: str,
    opts: Options,
    progress: Optional[Callable[[int, int, int], None]] = None,
    popen: Callable[..., subprocess.Popen] = subprocess.Popen,
) -> List[Outcome]:
    """Gather `nodes` (Slurm node names) through one srun step; the outcomes in the nodes' order."""
    wanted = set(nodes)
    claims: Dict[str, int] = {}  # how many tasks named themselves each node
    outcomes: Dict[str, Outcome] = {}
    tasks: Dict[int, _Task] = {}
    failed = [0]
    command = f"{opts.command} --json doctor --no-counters"
    try:
        proc = popen(argv(nodes, opts), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        why = f"srun cannot run: {exc.strerror or exc}"
        return [_write(out_dir, n, None, why) for n in nodes]
    errors: List[str] = []
    reader = threading.Thread(target=_stderr, args=(proc, errors), daemon=True)
    reader.start()
    timer = threading.Timer(opts.timeout, proc.kill)
    timer.start()
    start = time.monotonic()
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            m = LABEL.match(raw.rstrip(b"\n"))
            if not m:
                continue
            task = tasks.setdefault(int(m.group(1)), _Task())
            done = _line(task, m.group(2), wanted, claims)
            if done:
                outcome = _finish(task, out_dir, command)
                tasks.pop(int(m.group(1)))
                outcomes[outcome.host] = outcome
                failed[0] += outcome.error is not None
                if progress:
                    progress(len(outcomes), len(nodes), failed[0])
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5)
    late = time.monotonic() - start >= opts.timeout
    said = f"; srun: {errors[-1][:300]}" if errors else ""
    for n, count in claims.items():
        if count > 1:  # one of them is not that node, and which cannot be told
            outcomes[n] = _write(out_dir, n, None, f"{count} tasks of the srun step named themselves {n}")
    for n in nodes:
        if n not in outcomes:
            heard = next((t for t in tasks.values() if t.node == n), None)
            why = (
                f"no result within the step's {opts.timeout:g} s"
                if late
                else f"no result from the srun step (exit {proc.returncode})"
            ) + said
            if heard is not None and heard.error:
                why = heard.error
            outcomes[n] = _write(out_dir, n, None, why)
    return [outcomes[n] for n in nodes]


def _line(task: _Task, text: bytes, wanted: set, claims: Dict[str, int]) -> bool:
    """Take one line of a task; True when the task's output is complete (its `@rc` line)."""
    if task.node is None:
        name = text[len(NODE_LINE) :].decode("utf-8", "replace").strip() if text.startswith(NODE_LINE) else ""
        if name in wanted:
            claims[name] = claims.get(name, 0) + 1
        # not a node of this gather, or one another task named first: its output is dropped
        task.node = name if name in wanted and claims[name] == 1 else ""
        return False
    m = RC_LINE.match(text)
    if m and task.node:
        task.lines.append(m.group(1))
        return True
    if task.node and task.error is None:
        task.size += len(text) + 1
        if task.size > MAX_BYTES:
            task.error, task.lines = f"doctor on {task.node} printed more than {MAX_BYTES} bytes", []
        else:
            task.lines.append(text)
    return False


def _finish(task: _Task, out_dir: str, command: str) -> Outcome:
    node = task.node or ""
    if task.error:
        return _write(out_dir, node, None, task.error)
    code = int(task.lines.pop())
    done = ssh.Completed(code, b"".join(task.lines), b"")
    task.lines = []
    try:
        data = envelope_data(Target(node, node), "doctor", command, done)
    except ssh.Failure as exc:
        return _write(out_dir, node, None, str(exc))
    return _write(out_dir, node, data, None)


def _write(out_dir: str, node: str, data: Optional[dict], error: Optional[str]) -> Outcome:
    from .gather import _now

    doc = new_doc(node, _now())
    doc["doctor"], doc["error"] = data, error
    path = os.path.join(out_dir, f"{node}.json")
    atomic_write(path, dumps(doc))
    return Outcome(node, path, error)


def _stderr(proc: subprocess.Popen, kept: List[str]) -> None:
    assert proc.stderr is not None
    for raw in proc.stderr:
        line = raw.decode("utf-8", "replace").strip()
        if line:
            kept.append(line)
            del kept[:-STDERR_KEPT]


def check_names(nodes: Sequence[str]) -> Optional[str]:
    """Why a node name cannot be gathered (a file name, never a path), or None."""
    for n in nodes:
        if not HOST_NAME.match(n) or n.startswith("."):
            return f"{n!r}: not a node name a result file can carry"
    return None
