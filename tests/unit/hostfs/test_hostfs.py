import os

import pytest

from rocetune.errors import HostReadError
from rocetune.hostfs.command import recording_name
from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.recorder import Recorder
from rocetune.hostfs.root import HostRoot
from rocetune.hostfs.runners import RecordedRunner
from tests.unit.treekit import Dir, Link, make


@pytest.fixture
def root(tmp_path):
    return make(tmp_path, {
        "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/class": "0x020000\n",
        "sys/bus/pci/devices/0000:01:00.0": Link("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
        "sys/abs": Link("/sys/devices/pci0000:00"),
        "sys/loop": Link("loop"),
        "sys/empty": "",
        "sys/binary": b"\x00\x01\x02",
        "sys/latin1": b"caf\xe9",
        "sys/adir": Dir("adir"),
        "commands/nvidia-smi_topo_-m.txt": "GPU0 X\n",
        "commands/ibv_devinfo.txt": "Failed\n",
        "commands/ibv_devinfo.rc": "255\n",
    })


def test_realpath_follows_relative_links_inside_root(root):
    h = HostRoot(root)
    assert h.realpath("/sys/bus/pci/devices/0000:01:00.0/class") == \
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/class"


def test_absolute_link_resolves_under_root_not_on_machine(root):
    h = HostRoot(root)
    assert h.realpath("/sys/abs/0000:00:01.0") == "/sys/devices/pci0000:00/0000:00:01.0"
    assert h.is_dir("/sys/abs/0000:00:01.0")


def test_listed_entries_resolve_as_unlisted_ones(root):
    """A listing records which entries are links; what resolves through them does not change."""
    make(root, {"sys/dangling": Link("nowhere"), "sys/up": Link("../../.."),
                "sys/class/net/eth0": Link("../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0"),
                "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0/mtu": "9000\n"})
    paths = ["/sys/abs/0000:00:01.0", "/sys/loop/x", "/sys/dangling", "/sys/dangling/x", "/sys/up/sys/abs",
             "/sys/bus/pci/devices/0000:01:00.0/class", "/sys/class/net/eth0/mtu", "/sys/adir", "/sys/empty"]
    fresh, listed = HostRoot(root), HostRoot(root)
    for d in ("/", "/sys", "/sys/bus/pci/devices", "/sys/class/net"):
        listed.listdir(d)
    def seen(h, p):
        try:
            real = h.realpath(p)
        except HostReadError as exc:
            real = exc.reason
        return real, h.exists(p), h.read_text(p) if p.endswith(("class", "mtu")) else None

    for p in paths:
        assert seen(listed, p) == seen(fresh, p), p
    assert listed.exists("/sys/dangling") and not listed.exists("/sys/dangling/x")


def test_link_loop_is_refused_with_a_warning(root):
    h = HostRoot(root)
    with pytest.raises(HostReadError, match="more than 40 symbolic links"):
        h.realpath("/sys/loop/x")
    assert not h.exists("/sys/loop/x") and h.listdir("/sys/loop") == [] and not h.is_dir("/sys/loop")
    why = "more than 40 symbolic links to follow: not read (a loop, or a chain made to leave the root)"
    assert h.warnings == [f"cannot read /sys/loop/x: {why}", f"cannot read /sys/loop: {why}"]


def test_missing_is_none_but_unusable_raises(root):
    h = HostRoot(root)
    assert h.read_text("/sys/nope") is None
    assert h.read_text("/sys/empty") == ""
    for bad in ("/sys/binary", "/sys/latin1", "/sys/adir"):
        with pytest.raises(HostReadError):
            h.read_text(bad)


def test_context_turns_unusable_files_into_warnings(root):
    ctx = ProbeContext(HostRoot(root))
    assert ctx.attr("/sys/binary") is None
    assert ctx.int_attr("/sys/bus/pci/devices/0000:01:00.0/class", 16) == 0x020000
    assert ctx.int_attr("/sys/empty") is None
    assert any("binary" in w for w in ctx.status.warnings)


def test_recorded_runner_replays_stdout_and_exit_code(root):
    runner = RecordedRunner(HostRoot(root))
    ok = runner.run(["nvidia-smi", "topo", "-m"])
    assert ok.found and ok.ok and ok.stdout == "GPU0 X\n"
    failed = runner.run(["ibv_devinfo"])
    assert failed.found and failed.returncode == 255 and not failed.ok
    absent = runner.run(["ibstat"])
    assert not absent.found and "commands/ibstat.txt" in absent.reason


def test_recorded_runner_without_commands_dir_finds_nothing(tmp_path):
    make(tmp_path, {"sys/x": "1\n"})
    runner = RecordedRunner(HostRoot(str(tmp_path)))
    for argv in (["ibv_devinfo"], ["mlnx_qos", "-i", "eth0"]):
        result = runner.run(argv)
        assert not result.found and result.reason == f"no recording commands/{recording_name(argv)}.txt"


def test_recorded_runner_reads_stderr_and_defaults_exit_code(tmp_path):
    make(tmp_path, {"commands/ibstat.txt": "CA 'mlx5_0'\n", "commands/ibstat.err": "warn\n",
                    "commands/dcb_pfc.rc": "1\n"})
    runner = RecordedRunner(HostRoot(str(tmp_path)))
    got = runner.run(["ibstat"])
    assert (got.found, got.returncode, got.stdout, got.stderr) == (True, 0, "CA 'mlx5_0'\n", "warn\n")
    assert not runner.run(["dcb", "pfc"]).found  # an exit code without its stdout is no recording


def test_recording_name_escapes_slashes():
    assert recording_name(["ip", "-j", "addr", "show"]) == "ip_-j_addr_show"
    assert recording_name(["cat", "/etc/x"]) == "cat_%2Fetc%2Fx"


def test_recorder_keeps_what_was_read_and_links(root):
    rec = Recorder()
    h = HostRoot(root, recorder=rec)
    h.read_text("/sys/bus/pci/devices/0000:01:00.0/class")
    h.listdir("/sys/bus/pci/devices")
    real = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/class"
    assert rec.files == {real: "0x020000\n"}
    assert "/sys/bus/pci/devices/0000:01:00.0" in rec.links
    assert rec.dirs["/sys/bus/pci/devices"] == ["0000:01:00.0"]


def test_relative_host_paths_are_rejected(root):
    with pytest.raises(ValueError):
        HostRoot(root).host_path("sys/x")
    assert os.path.isabs(HostRoot(root).host_path("/sys/x"))


def test_fifo_is_refused_instead_of_blocking(root):
    os.mkfifo(os.path.join(root, "sys", "fifo"))
    with pytest.raises(HostReadError, match="not a regular file"):
        HostRoot(root).read_text("/sys/fifo")
