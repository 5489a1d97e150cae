"""The counter baseline: saved under the host root, atomically; read back or refused in one line."""

import json
import os
from pathlib import Path

import pytest

from rocetune.doctor import nic_baseline
from rocetune.doctor.nic_baseline import BASELINE_PATH, baseline_file, load_baseline, save_baseline
from rocetune.doctor.nic_health import judge
from rocetune.errors import ExitCode, RocetuneError
from rocetune.probe.sources.nic_counters import take_snapshot
from tests.unit.doctor.nicsnap import real_snapshot
from tests.unit.treekit import make


def test_round_trip_under_the_root(tmp_path):
    snap = real_snapshot()
    written = save_baseline(snap, str(tmp_path))
    assert written == str(tmp_path / "var/lib/rocetune/counters.json")
    assert load_baseline(str(tmp_path)) == snap
    first = Path(written).read_bytes()
    save_baseline(snap, str(tmp_path))
    assert Path(written).read_bytes() == first, "same snapshot, same bytes"
    assert oct(os.stat(written).st_mode & 0o777) == "0o644"
    assert [n for n in os.listdir(tmp_path / "var/lib/rocetune")] == ["counters.json"]


def test_no_baseline_yet_is_none(tmp_path):
    assert load_baseline(str(tmp_path)) is None


@pytest.mark.parametrize("content, text", [
    (b"{not json", "not JSON"),
    (json.dumps({"kind": "rocetune-nic-counters", "version": 7}).encode(), "version 7"),
    (json.dumps([1, 2]).encode(), "not a rocetune-nic-counters document"),
])
def test_a_bad_baseline_is_one_line_with_a_hint(tmp_path, content, text):
    target = tmp_path / BASELINE_PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_bytes(content)
    with pytest.raises(RocetuneError, match=text) as err:
        load_baseline(str(tmp_path))
    assert err.value.code == ExitCode.INPUT and "remove " in err.value.hint
    assert "\n" not in err.value.message


def test_negative_counter_in_a_baseline_is_refused(tmp_path):
    snap = real_snapshot()
    snap["ports"]["mlx5_bond_0/1"]["counters"]["symbol_error"] = -1
    target = tmp_path / BASELINE_PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(snap))
    with pytest.raises(RocetuneError, match="non-negative integer"):
        load_baseline(str(tmp_path))


def test_a_failed_write_keeps_the_old_baseline(tmp_path, monkeypatch):
    old = real_snapshot()
    save_baseline(old, str(tmp_path))

    def refuse(path, text, mode=0o644):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(nic_baseline, "atomic_write", refuse)
    newer = real_snapshot()
    newer["taken_at"]["uptime_s"] += 60
    with pytest.raises(RocetuneError, match="No space left on device") as err:
        save_baseline(newer, str(tmp_path))
    assert err.value.code == ExitCode.OUTPUT
    assert load_baseline(str(tmp_path)) == old


def test_an_invalid_snapshot_is_not_saved(tmp_path):
    with pytest.raises(RocetuneError):
        save_baseline({"kind": "something else"}, str(tmp_path))
    assert not os.path.exists(baseline_file(str(tmp_path)))


def test_relative_paths_are_refused(tmp_path):
    with pytest.raises(RocetuneError, match="absolute") as err:
        baseline_file(str(tmp_path), "var/lib/x.json")
    assert err.value.code == ExitCode.USAGE


def test_snapshot_saved_then_judged_against_the_next(tmp_path):
    # a Soft-RoCE host (rxe counter names): an hour later, 2 more retry_exceeded_err
    tree = {"sys/class/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err": "0\n",
            "proc/uptime": "100.0 1.0\n", "proc/sys/kernel/random/boot_id": "b1\n"}
    root = make(tmp_path / "host", tree)
    save_baseline(take_snapshot(root, clock=lambda: 1000.0), root)
    make(root, {"sys/class/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err": "2\n",
                "proc/uptime": "3700.0 1.0\n"})
    results = judge(load_baseline(root), take_snapshot(root, clock=lambda: 4600.0))
    assert [(r.id, r.severity, r.subject) for r in results] == [("nic-retries-exceeded", "error", "rxe0/1")]
