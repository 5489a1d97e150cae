"""A reader that crashes is said (`doctor-reader-failed`, the exception class), never read as a
pass; one malformed part of the NVLink output costs that part only."""

from __future__ import annotations

import shutil
from pathlib import Path

from rocetune.analysis.hostview import HostView
from rocetune.doctor import below_checks, reader_checks
from rocetune.doctor.checks import DoctorInput
from rocetune.hostfs.command import recording_name
from rocetune.probe import collect
from rocetune.probe.sources import nvlink

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
OUT = Path(__file__).resolve().parents[2] / "fixtures" / "outputs" / "nvlink"
GB300_E = (OUT / "nvidia-smi-nvlink-e-gb300-srt-slurm307-first-link.txt").read_text()


def host(tmp_path, errors_output: str) -> Path:
    """The 8-GPU HGX H100 fixture host, its GPU 0 not registered with the NVLink fabric."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "hgx-h100-nvlink-nonic", root, symlinks=True)
    commands = root / "commands"
    (commands / f"{recording_name(nvlink.FABRIC_CSV_ARGV)}.txt").write_text(
        "00000000:18:00.0, In Progress, N/A\n")
    (commands / f"{recording_name(nvlink.ERRORS_ARGV)}.txt").write_text(errors_output)
    return root


def doctor(features):
    d = DoctorInput(features, {}, HostView(features), {}, None)
    return below_checks.nvlink_fabric(d) + reader_checks.reader_failed(d)


def test_a_malformed_counter_line_never_hides_the_fabric_state(tmp_path):
    # a counter value that str.isdigit() takes and int() does not (U+00B2)
    features = collect.collect_features(str(host(tmp_path, GB300_E.replace("Replay Errors: 0", "Replay Errors: \u00b2"))))
    assert "failed" not in features["sources"]["nvlink"]
    (f,) = doctor(features)
    assert (f.id, f.severity) == ("doctor-nvlink-fabric", "error")


def test_a_source_that_raises_is_not_checked_reader_failed_an_error(tmp_path, monkeypatch):
    def broken(ctx, pci):
        raise RuntimeError("a reader bug")

    monkeypatch.setattr(nvlink, "probe", broken)
    features = collect.collect_features(str(host(tmp_path, GB300_E)))
    assert "nvlink" not in features
    assert features["sources"]["nvlink"] == {"ok": False, "reason": "RuntimeError: a reader bug", "warnings": [],
                                             "failed": "RuntimeError"}
    (f,) = doctor(features)
    assert (f.id, f.severity, f.subject) == ("doctor-reader-failed", "error", "nvlink")
    assert f.message == "nvlink: not checked: reader failed (RuntimeError): RuntimeError: a reader bug"


def test_a_host_whose_readers_all_ran_has_no_such_finding(tmp_path):
    features = collect.collect_features(str(host(tmp_path, GB300_E)))
    assert all("failed" not in s for s in features["sources"].values())
    assert [f.id for f in doctor(features)] == ["doctor-nvlink-fabric"]


def test_a_kernel_log_reader_that_crashes_is_said(tmp_path, monkeypatch):
    from rocetune.doctor import kernel_log
    from rocetune.hostfs.context import ProbeContext
    from rocetune.hostfs.root import HostRoot
    from tests.unit.treekit import make

    def broken(text, limit=0, start=None):
        raise IndexError("a reader bug")

    monkeypatch.setattr(kernel_log, "classify", broken)
    root = make(tmp_path / "k", {"commands/dmesg_--kernel.txt": "[ 1.0] infiniband rxe0: set down\n"})
    reading = kernel_log.read(ProbeContext(HostRoot(root)))
    assert reading["failed"] == "IndexError" and reading["events"] == []
    features = collect.collect_features(str(host(tmp_path, GB300_E)))
    d = DoctorInput(features, {"kernel_log": reading}, HostView(features), {}, None)
    (f,) = reader_checks.reader_failed(d)
    assert (f.severity, f.subject) == ("error", "kernel_log")
    assert f.message == "kernel_log: not checked: reader failed (IndexError): IndexError: a reader bug"
