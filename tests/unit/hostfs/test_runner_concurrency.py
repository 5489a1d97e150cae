"""Commands a probe starts ahead run side by side, and give what they give when run one by one."""

from __future__ import annotations

import os
import time

import pytest

from rocetune.hostfs.command import recording_name
from rocetune.hostfs.recorder import Recorder
from rocetune.hostfs.root import HostRoot
from rocetune.hostfs.runners import LiveRunner, RecordedRunner, close_runner, start_commands
from rocetune.probe.sources import gpu

SLOW = 0.4


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A PATH with a slow nvidia-smi that answers each of the probe's two calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f"sleep {SLOW}\n"
        'case "$1" in\n'
        '  topo) printf "\\tGPU0\\nGPU0\\t X \\n" ;;\n'
        '  *) echo "0, 00000000:18:00.0, NVIDIA H100 80GB HBM3"; echo "locale $LC_ALL" >&2 ;;\n'
        "esac\n"
        "exit 3\n")
    script.chmod(0o755)
    (bin_dir / "hang").write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / "hang").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_started_commands_overlap_and_read_as_if_run_alone(tools):
    alone = LiveRunner()
    expected = [alone.run(a) for a in gpu.COMMANDS]
    rec = Recorder()
    runner = LiveRunner(recorder=rec)
    t0 = time.monotonic()
    start_commands(runner, gpu.COMMANDS)
    got = [runner.run(a) for a in gpu.COMMANDS]
    elapsed = time.monotonic() - t0
    assert elapsed < 2 * SLOW * 0.9, f"{elapsed:.2f} s: the two calls ran one after the other"
    for want, have in zip(expected, got):
        assert (have.found, have.returncode, have.stdout, have.stderr) == \
            (want.found, want.returncode, want.stdout, want.stderr)
    assert got[1].returncode == 3 and "locale C" in got[1].stderr  # exit code and LC_ALL=C kept
    assert sorted(rec.commands) == sorted(recording_name(a) for a in gpu.COMMANDS)


def test_a_started_command_never_read_is_ended_and_not_recorded(tools):
    rec = Recorder()
    runner = LiveRunner(recorder=rec)
    start_commands(runner, [["hang"], gpu.TOPO_ARGV])
    runner.run(gpu.TOPO_ARGV)
    t0 = time.monotonic()
    close_runner(runner)
    assert time.monotonic() - t0 < 5
    assert list(rec.commands) == [recording_name(gpu.TOPO_ARGV)]
    assert runner.run(["hang-absent-tool"]).found is False


def test_a_started_command_keeps_its_timeout(tools):
    runner = LiveRunner(timeout=0.3)
    start_commands(runner, [["hang"]])
    t0 = time.monotonic()
    result = runner.run(["hang"])
    assert result.returncode == 124 and "timed out" in result.reason
    assert time.monotonic() - t0 < 5


def test_a_recorded_root_replays_the_same_with_or_without_start(tmp_path):
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / f"{recording_name(gpu.TOPO_ARGV)}.txt").write_text("\tGPU0\n")
    runner = RecordedRunner(HostRoot(str(tmp_path)))
    start_commands(runner, gpu.COMMANDS)  # a recorded runner has nothing to start
    assert runner.run(gpu.TOPO_ARGV).stdout == "\tGPU0\n"
    assert runner.run(gpu.QUERY_ARGV).found is False
    close_runner(runner)


def test_at_most_parallel_run_at_once_and_the_rest_start_as_earlier_ones_are_read(tools):
    log = tools / "log"
    (tools / "port").write_text(f"#!/bin/sh\necho start $1 >> {log}\nsleep 0.2\necho $1\necho end $1 >> {log}\n")
    (tools / "port").chmod(0o755)
    argvs = [["port", str(i)] for i in range(6)]
    runner = LiveRunner(parallel=2)
    start_commands(runner, argvs)
    t0 = time.monotonic()
    got = [runner.run(a).stdout for a in argvs]
    elapsed = time.monotonic() - t0
    assert got == [f"{i}\n" for i in range(6)]
    running, most = 0, 0
    for line in log.read_text().splitlines():
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
    assert most <= 2, log.read_text()
    assert elapsed < 6 * 0.2 * 0.9, f"{elapsed:.2f} s: one at a time"


def test_the_qos_source_starts_every_ports_tool_together(tools):
    from rocetune.hostfs.context import ProbeContext
    from rocetune.probe.sources import qos

    (tools / "mlnx_qos").write_text("#!/bin/sh\nsleep 0.3\nexit 1\n")
    (tools / "mlnx_qos").chmod(0o755)
    rdma = {"devices": [{"ports": [{"link_layer": "Ethernet", "netdev": f"rtqos-absent{i}"}]} for i in range(4)]}
    ctx = ProbeContext(HostRoot("/"), LiveRunner(parallel=4))
    t0 = time.monotonic()
    assert qos.probe(ctx, rdma) == {"interfaces": {}}  # mlnx_qos fails, and dcb knows no such port
    assert time.monotonic() - t0 < 4 * 0.3 * 0.9


def test_which_finds_what_shutil_finds(tools, tmp_path, monkeypatch):
    import shutil

    from rocetune.hostfs.runners import which

    (tools / "not-executable").write_text("#!/bin/sh\n")
    (tools / "a-directory").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'absent'}{os.pathsep}{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    for name in ("nvidia-smi", "sh", "not-executable", "a-directory", "no-such-tool", str(tools / "hang"),
                 str(tools / "not-executable")):
        assert which(name) == shutil.which(name), name
