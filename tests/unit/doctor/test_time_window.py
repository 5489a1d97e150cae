"""Time and repairs: NIC counter rates over a window the gate keeps current, kernel-log events
judged within a window, and the operator's repair mark that makes what came before stop counting.

A burst that ended is not a failure forever: 100 link flaps 9.7 h ago, none since, with a health
check every 5 minutes, pass; the same burst within the last hour fails. A firmware fault logged
before the window or before the repair mark is not held against the node."""

from __future__ import annotations

import json
from pathlib import Path

from rocetune.doctor import kernel_log, nic_baseline
from rocetune.doctor.nic_baseline import load_window, reference, save_baseline, save_window, slide
from rocetune.doctor.nic_health import judge
from rocetune.doctor.repair import before_mark, load_mark, write_mark
from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from tests.unit.doctor.nicsnap import later, real_snapshot
from tests.unit.treekit import make

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "outputs" / "kernel-log"
BASE = real_snapshot()


def flaps(results):
    return [r.severity for r in results if r.id == "nic-link-flaps"]


def gate_every(minutes: float, hours: float, burst_at_h: float, burst: int):
    """What each health check says about link flaps when the gate runs every `minutes` for `hours`
    and `burst` link_downed happen just before the check at `burst_at_h`: [(hour, severities)]."""
    window, out = [BASE], []
    moved = 0
    for n in range(1, int(hours * 60 / minutes) + 1):
        t = n * minutes / 60
        if not moved and t >= burst_at_h:
            moved = burst
        current = later(BASE, hours=t, port={"link_downed": moved})
        out.append((t, flaps(judge(reference(window, current), current))))
        window = slide(window, current) or window
        assert len(window) <= nic_baseline.WINDOW_S / nic_baseline.SPACING_S + 1
    return out


def test_a_burst_that_ended_leaves_the_window_and_one_within_it_fails():
    seen = gate_every(5, 10, burst_at_h=0.3, burst=100)
    assert seen[3] == (20 / 60, ["error"])  # the check right after the burst
    after = [sev for t, sev in seen if t >= 0.3 + 2 * nic_baseline.WINDOW_S / 3600]
    assert after and all(sev == [] for sev in after), "a burst that ended fails no later check"
    assert seen[-1][0] >= 9.7 and seen[-1][1] == []
    # against the one baseline nothing refreshed (before the window), 100 flaps 9.7 h ago fail
    assert flaps(judge(BASE, later(BASE, hours=10, port={"link_downed": 100}))) == ["error"]


def test_the_reference_is_the_oldest_reading_within_the_window():
    readings = [later(BASE, hours=h) for h in (0, 0.4, 0.8)]
    now = later(BASE, hours=1.2)
    assert reference(readings, now) is readings[1]  # 0.4 h is 48 min before; 0 h is 72 min before
    assert reference(readings[:1], now) is readings[0]  # only an older one: the only rate there is
    assert reference([], now) is None
    # a reading taken a minute after the newest adds nothing: the file is not rewritten
    assert slide(readings[1:], later(BASE, hours=0.81)) is None
    other_boot = dict(later(BASE, hours=1.5), boot_id="another")
    assert slide(readings, other_boot) == [other_boot]


def test_the_window_round_trips_and_an_old_single_snapshot_file_is_a_window_of_one(tmp_path):
    root = str(tmp_path)
    assert load_window(root) == []
    save_baseline(BASE, root)
    assert load_window(root) == [BASE]
    readings = [BASE, later(BASE, hours=0.4)]
    path = save_window(readings, root)
    assert json.loads(Path(path).read_text())["kind"] == "rocetune-nic-counter-window"
    assert load_window(root) == readings
    assert nic_baseline.load_baseline(root) == readings[-1]


def _root(tmp_path, uptime: float, log: str = "mlx5-health-compromised-dmesg.txt"):
    return make(
        tmp_path,
        {
            "commands/dmesg_--kernel.txt": (LOGS / log).read_text(),
            "proc/uptime": f"{uptime} 100.0\n",
            "proc/sys/kernel/random/boot_id": "b0\n",
        },
    )


def test_kernel_events_before_the_default_window_are_left_out(tmp_path):
    # the recorded firmware health fault is at 445.9 s after boot
    fresh = kernel_log.read(ProbeContext(HostRoot(_root(tmp_path / "a", uptime=3600))))
    assert len(fresh["events"]) == 6 and fresh["within"] == "since boot"
    day_later = kernel_log.read(ProbeContext(HostRoot(_root(tmp_path / "b", uptime=445 + 25 * 3600))))
    assert day_later["events"] == [] and day_later["within"] == "in the last 24 h"
    assert day_later["window"]["left_out"] == 6
    # --since is the operator's window: passed to the tools, no second window on top
    root = make(
        tmp_path / "c",
        {
            "commands/dmesg_--kernel_--since_-30d.txt": (LOGS / "mlx5-health-compromised-dmesg.txt").read_text(),
            "proc/uptime": f"{445 + 25 * 3600} 1\n",
        },
    )
    assert len(kernel_log.read(ProbeContext(HostRoot(root)), since="-30d")["events"]) == 6
    # no /proc/uptime: nothing can be placed, everything counts (never less than asked)
    bare = make(
        tmp_path / "d", {"commands/dmesg_--kernel.txt": (LOGS / "mlx5-health-compromised-dmesg.txt").read_text()}
    )
    assert len(kernel_log.read(ProbeContext(HostRoot(bare)))["events"]) == 6


def test_a_repair_mark_makes_earlier_events_and_readings_stop_counting(tmp_path):
    root = _root(tmp_path, uptime=500.0)
    mark = write_mark(root, "mlxfwreset on mlx5_0", clock=lambda: 1795624200.0 + 3600)
    assert load_mark(root)["reason"] == "mlxfwreset on mlx5_0" and mark["taken_at"]["uptime_s"] == 500.0
    read = kernel_log.read(ProbeContext(HostRoot(root)), mark=load_mark(root))
    assert read["events"] == [] and read["within"].startswith("since the repair marked at ")
    assert "(mlxfwreset on mlx5_0)" in read["within"]
    # an event after the mark counts again
    later_line = "[  600.000001] mlx5_core 0000:0d:00.0: device's health compromised - reached miss count\n"
    Path(root, "commands/dmesg_--kernel.txt").write_text(later_line)
    assert len(kernel_log.read(ProbeContext(HostRoot(root)), mark=load_mark(root))["events"]) == 1
    # counter readings: by uptime within the mark's boot, by the wall clock across boots
    at = dict(
        mark, boot_id=BASE["boot_id"], taken_at=dict(mark["taken_at"], uptime_s=BASE["taken_at"]["uptime_s"] + 60)
    )
    assert before_mark(at, BASE) and not before_mark(at, later(BASE, hours=0.1)) and not before_mark(None, BASE)
    # a mark of another boot says nothing
    Path(root, "proc/sys/kernel/random/boot_id").write_text("b1\n")
    assert load_mark(root) is None


def test_a_reason_is_required_and_bounded(tmp_path):
    import pytest

    from rocetune.errors import RocetuneError

    for bad in ("", "   ", "x" * 201):
        with pytest.raises(RocetuneError):
            write_mark(str(tmp_path), bad)
