"""The LLDP source over host roots: absent where lldpctl is not installed (the Features of such a
host are unchanged), an error where lldpd is not running, the neighbours where it is; a capture
of each replays to the same."""

from __future__ import annotations

from pathlib import Path

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.capture import build_tar, record
from rocetune.probe.sources import lldp
from tests.unit.treekit import make

LLDP = Path(__file__).resolve().parents[3] / "fixtures" / "outputs" / "lldp"
TWO = (LLDP / "lldpctl-json0-two-interfaces-lab.json").read_text()


def source(root) -> object:
    return lldp.probe(ProbeContext(HostRoot(str(root))))


def test_no_lldpctl_no_section(tmp_path):
    assert source(make(tmp_path, {"etc/hostname": "n1\n"})) is None


def test_installed_but_lldpd_not_running(tmp_path):
    doc = source(make(tmp_path, {"usr/sbin/lldpctl": ""}))
    assert doc == {"tool": "lldpctl -f json0", "error": "lldpd is not running (no /run/lldpd.socket)", "interfaces": {}}


def test_the_neighbours_of_a_running_lldpd(tmp_path):
    doc = source(make(tmp_path, {"run/lldpd.socket": "", "commands/lldpctl_-f_json0.txt": TWO}))
    assert doc["error"] is None and sorted(doc["interfaces"]) == ["rt31a0", "rt31a1"]
    assert doc["interfaces"]["rt31a1"][0]["port"] == "rt31s1"


def test_the_tool_s_failure_in_its_own_words_without_its_timestamp(tmp_path):
    doc = source(make(tmp_path, {
        "run/lldpd.socket": "", "commands/lldpctl_-f_json0.txt": "", "commands/lldpctl_-f_json0.rc": "1\n",
        "commands/lldpctl_-f_json0.err": "2026-11-27T19:17:25 [WARN/control] unable to connect to socket "
                                        "/run/lldpd.socket: Connection refused\n"}))
    assert doc["error"] == "exit 1: [WARN/control] unable to connect to socket /run/lldpd.socket: Connection refused"


def test_a_capture_of_a_host_with_lldp_replays_to_the_same(tmp_path):
    root = make(tmp_path / "host", {"run/lldpd.socket": "", "commands/lldpctl_-f_json0.txt": TWO,
                                    "proc/cmdline": "ro\n"})
    features, rec = record(root)
    assert features["lldp"]["interfaces"]["rt31a0"][0]["chassis"] == "leaf-rail0"
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(build_tar(root, rec))) as tar:
        tar.extractall(tmp_path / "replay")
    again, _ = record(str(tmp_path / "replay"))
    assert again["lldp"] == features["lldp"] and again["sources"]["lldp"] == features["sources"]["lldp"]
