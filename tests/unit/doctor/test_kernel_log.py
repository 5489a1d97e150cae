"""Doctor's kernel-log checks on recorded real messages (tests/fixtures/outputs/kernel-log/
SOURCES.md): each kind recognised in the forms logs take (dmesg, journal, syslog), judged for the
devices that carry the job -- a compute NIC's firmware fault is an error, the same on another
device is said as info -- and the reading replayed from a root and bounded by --since."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocetune.analysis.hostview import HostView
from rocetune.doctor import below_checks, kernel_log
from rocetune.doctor.checks import DoctorInput
from rocetune.errors import ParseError
from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.recorder import Recorder
from rocetune.hostfs.root import HostRoot
from rocetune.hostfs.runners import RecordedRunner
from rocetune.probe.parsers.kernel_log import classify
from tests.unit.rules.featurekit import Host
from tests.unit.treekit import make

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "outputs" / "kernel-log"


def log(*names: str) -> str:
    return "".join((LOGS / n).read_text() for n in names)


def host(nic_bdf="0000:0d:00.0"):
    """Two rails: the first NIC at `nic_bdf` (the card of the recorded health fault), a GPU."""
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0, bdf="0000:18:00.0")
    h.rdma("mlx5_0", netdev="enp13s0f0np0", ipv4="192.168.0.5/24", pci=nic_bdf, paths={0: "PIX"})
    h.rdma("mlx5_1", netdev="enp14s0f0np0", ipv4="192.168.1.5/24", pci="0000:0e:00.0", paths={0: "PIX"})
    return h.build()


def findings(features, text, since=None):
    events = classify(text)
    events.update(source="dmesg --kernel", since=since or "boot")
    d = DoctorInput(features, {"kernel_log": events}, HostView(features), {}, None)
    out = []
    for fn in (below_checks.nic_health, below_checks.nic_command, below_checks.link_flap,
               below_checks.pcie_aer, below_checks.module_event, below_checks.gpu_xid):
        out += fn(d)
    return out


def test_a_compute_nic_s_firmware_health_failure_is_an_error_and_elsewhere_info():
    found = findings(host(), log("mlx5-health-compromised-dmesg.txt"))
    ours = [f for f in found if f.subject == "0000:0d:00.0"]
    assert [f.severity for f in ours] == ["error"] and "2 firmware health message(s) since boot" in ours[0].message
    assert "first at 445.937186: device's health compromised - reached miss count" in ours[0].message
    # 0d:00.1-.4 are other functions of the same card: the card carries the job
    assert {f.subject for f in found} == {f"0000:0d:00.{i}" for i in range(5)}
    assert {f.severity for f in found} == {"error"}
    elsewhere = findings(host(nic_bdf="0000:5e:00.0"), log("mlx5-health-compromised-dmesg.txt"))
    assert {f.severity for f in elsewhere} == {"info"} and "(not a compute NIC)" in elsewhere[0].message


def test_command_failures_are_counted_by_command_status_and_syndrome():
    (f,) = findings(host(nic_bdf="0000:04:00.0"), log("mlx5-cmd-check-rtr2rts-dmesg.txt"))
    assert f.severity == "warning" and f.subject == "0000:04:00.0"
    assert "3 firmware command(s) failed since boot: RTR2RTS_QP bad parameter syndrome 0x4bb88f x3" in f.message
    (f,) = findings(host(), log("mlx5-cmd-check-create-mkey-dmesg.txt"))  # no device prefix: cannot be placed
    assert f.severity == "warning" and "create_mkey bad parameter syndrome 0x35e6ec" in f.message


def test_a_module_plugged_in_and_its_link_up_is_nothing_wrong():
    events = classify(log("mlx5-cable-plugged-link-up-dmesg.txt"))["events"]
    assert [(e["kind"], e.get("status") or e.get("state")) for e in events] == [
        ("module", "Cable plugged"), ("module", "Cable plugged"), ("link", "up"), ("link", "up")]
    assert findings(host(nic_bdf="0000:01:00.0"), log("mlx5-cable-plugged-link-up-dmesg.txt")) == []


def test_pcie_aer_uncorrectable_is_an_error_on_a_gpu_path_and_corrected_a_warning():
    h = host()
    h["pci"]["devices"].append({"bdf": "0000:03:04.0", "kind": "bridge", "parent": None})
    for dev in h["pci"]["devices"]:
        if dev["bdf"] == "0000:18:00.0":
            dev["parent"] = "0000:03:04.0"
    (f,) = findings(h, log("aer-correctable-and-fatal-journal-rhel9.txt"))
    assert f.severity == "error" and f.subject == "0000:03:04.0"
    assert "Correctable x1" in f.message and "Uncorrectable (Fatal) x1" in f.message
    (f,) = findings(host(), log("aer-corrected-syslog-rhel7.txt"))
    assert f.severity == "info" and "not on a GPU or compute NIC path" in f.message and "Corrected x2" in f.message


def test_the_reading_replays_from_a_root_and_a_capture_keeps_only_fabric_lines(tmp_path):
    noise = "[ 2474.746612] rtlbr0: port 2(rtl-node01) entered disabled state\n"
    text = noise + log("mlx5-health-compromised-dmesg.txt") + noise
    root = make(tmp_path, {"commands/dmesg_--kernel.txt": text})
    ctx = ProbeContext(HostRoot(root))
    read = kernel_log.read(ctx)
    assert read["source"] == "dmesg --kernel" and read["since"] == "boot" and len(read["events"]) == 6
    rec = Recorder()
    recording = ProbeContext(HostRoot(root), RecordedRunner(HostRoot(root)))
    recording.runner.recorder = rec
    kernel_log.read(recording)
    kept = rec.commands["dmesg_--kernel"].stdout
    assert "rtlbr0" not in kept and kept.count("\n") == 6
    assert kernel_log.read(ProbeContext(HostRoot(make(tmp_path / "r", {"commands/dmesg_--kernel.txt": kept}))))[
        "events"] == read["events"]


def test_since_is_passed_to_the_tools_and_a_host_without_either_is_not_checked(tmp_path):
    # dmesg refused (kernel.dmesg_restrict for a non-root user): the journal answers
    root = make(tmp_path, {"commands/dmesg_--kernel_--since_-2h.txt": "",
                           "commands/dmesg_--kernel_--since_-2h.rc": "1\n",
                           "commands/dmesg_--kernel_--since_-2h.err": "dmesg: read kernel buffer failed: Operation "
                                                                     "not permitted\n",
                           "commands/journalctl_-k_-b_-o_short-monotonic_--no-pager_-q_-n_50000_--since_-2h.txt":
                           log("mlx5-cable-plugged-link-up-dmesg.txt")})
    read = kernel_log.read(ProbeContext(HostRoot(root)), since="-2h")
    assert read["source"].startswith("journalctl -k -b") and read["since"] == "-2h" and len(read["events"]) == 4
    assert kernel_log.read(ProbeContext(HostRoot(make(tmp_path / "e", {"etc/hostname": "x\n"})))) is None
    d = DoctorInput(host(), {"kernel_log": None}, HostView(host()), {}, None)
    (f,) = below_checks.log_unread(d)
    assert f.severity == "info" and f.message.startswith("not checked")


@pytest.mark.parametrize("line, kind", [
    ("[ 1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.", "gpu-xid"),
    ("[ 1.0] infiniband rxe0: set down", "link"),
    ("[ 1.0] ice 0000:3b:00.0 ens1f0: NIC Link is Down", "link"),
])
def test_the_forms_of_other_producers(line, kind):
    (event,) = classify(line)["events"]
    assert event["kind"] == kind


def test_a_rail_that_lost_carrier_on_the_lab_vm_is_a_flap_of_its_soft_roce_port():
    """Recorded on a lab VM: QEMU took the rail's carrier away for 2 s (rxe0 on ens4)."""
    events = classify(log("rxe-set-down-active-carrier-lab-vm-dmesg.txt"))
    assert [(e["ibdev"], e["state"]) for e in events["events"]] == [("rxe0", "down"), ("rxe0", "active")]
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.rdma("rxe0", netdev="ens4", ipv4="198.18.2.11/24")
    features = h.build()
    events.update(source="dmesg --kernel", since="boot")
    d = DoctorInput(features, {"kernel_log": events}, HostView(features), {}, None)
    found = below_checks.link_flap(d)
    assert [(f.subject, f.severity) for f in found] == [("rxe0", "warning")]
    assert "link went down 1 time(s) since boot (up again 1 time(s)), last at 67.058386" in found[0].message


# --- hostile input: records, scope, floods -------------------------------------------------------
FORGED = ("forged-xid-segfault-tmpfs-records-dmesg.txt", "forged-xid-segfault-tmpfs-records-dmesg-json.json")


@pytest.mark.parametrize("name, records", list(zip(FORGED, (3, 4))))
def test_a_further_line_of_a_record_a_user_wrote_is_never_an_event(name, records):
    """Recorded: `nobody` put a newline and an Xid line into a segfault record (a file name) and
    into tmpfs's Unknown parameter record (a mount option inside unshare -rm)."""
    read = classify(log(name))
    assert read["records"] == records and read["events"] == []
    assert findings(host(), log(name)) == []


def test_a_header_inside_a_further_line_starts_no_record():
    text = ("[  274.977736] python3[14187]: segfault at 0 ip 00007ff1 sp 00007ffd error 4 in x\n"
            "               [  274.977740] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
            "kernel: tmpfs: Unknown parameter 'x\n"
            "kernel: NVRM: Xid (PCI:0000:18:00): 79'\n")
    # the last line is a record header at the first column: only the kernel (the journal's own
    # form) writes one there
    assert [e["kind"] for e in classify(text)["events"]] == ["gpu-xid"]
    assert classify(text)["records"] == 3


def test_the_json_reading_is_taken_first_and_a_capture_keeps_it_as_json(tmp_path):
    real = log("forged-xid-segfault-tmpfs-records-dmesg-json.json")
    xid = ('{"dmesg": [{"pri": 4, "time": 5.25, "msg": "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has '
           'fallen off the bus."}]}')
    root = make(tmp_path, {"commands/dmesg_--kernel_--json.txt": real[: real.rindex("]")] + ',{"pri": 4, '
                           '"time": 5.25, "msg": "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the '
                           'bus."}]}\n',
                           "commands/dmesg_--kernel.txt": ""})
    rec = Recorder()
    ctx = ProbeContext(HostRoot(root), RecordedRunner(HostRoot(root)))
    ctx.runner.recorder = rec
    read = kernel_log.read(ctx)
    assert read["source"] == "dmesg --kernel --json"
    assert [(e["kind"], e["xid"], e["time"]) for e in read["events"]] == [("gpu-xid", "79", "5.250000")]
    kept = rec.commands["dmesg_--kernel_--json"].stdout
    assert "segfault" not in kept and classify(kept)["events"] == classify(xid)["events"]


def test_a_flood_of_one_class_keeps_the_fault_before_it_with_first_last_and_count():
    xid = "[  10.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
    flood = "".join(f"[  {11 + i}.000000] pcieport 0000:00:1b.2: AER: Corrected error received: id=ae00\n"
                    for i in range(5000))
    read = classify(xid + flood + xid.replace("10.000000", "9999.000000"))
    (x, aer) = read["events"]
    assert (x["count"], x["time"], x["last"]["time"]) == (2, "10.000000", "9999.000000")
    assert (aer["count"], aer["time"], aer["last"]["time"]) == (5000, "11.000000", "5010.000000")
    (f,) = [f for f in findings(host(), xid + flood) if f.id == "doctor-kernel-gpu-xid"]
    assert f.severity == "error"
    (a,) = [f for f in findings(host(), xid + flood) if f.id == "doctor-kernel-pcie-aer"]
    assert "Corrected x5000" in a.message and len(a.evidence["kernel log"]) == 2


def test_xids_of_many_process_names_stay_one_class():
    lines = "".join(f"[ {i}.0] NVRM: Xid (PCI:0000:18:00): 13, pid={i}, name=job{i}, Graphics Exception\n"
                    for i in range(1, 5001))
    read = classify(lines + "[ 9999.0] NVRM: Xid (PCI:0000:18:00): 79, pid=9, GPU has fallen off the bus.\n")
    assert [(e["xid"], e["count"]) for e in read["events"]] == [("13", 5000), ("79", 1)]


def test_an_xid_of_another_node_s_gpu_is_info_and_an_unplaceable_one_counts():
    line = "[ 1.0] NVRM: Xid (PCI:0000:af:00): 79, pid=1, GPU has fallen off the bus.\n"
    (f,) = findings(host(), line)
    assert f.severity == "info" and "(not a GPU of this node)" in f.message and "need a GPU reset" not in f.message
    (f,) = findings(host(), line.replace("0000:af:00", "0000:18:00"))
    assert f.severity == "error"
    h = host()
    h["gpus"] = []  # the GPU reader found none: a GPU that fell off the bus may be gone from it
    for dev in h["pci"]["devices"]:
        if dev["bdf"] == "0000:18:00.0":
            dev["kind"] = "gpu"
    (f,) = findings(h, line.replace("0000:af:00", "0000:18:00"))
    assert f.severity == "error"
    h["pci"]["devices"] = [x for x in h["pci"]["devices"] if x.get("kind") != "gpu"]
    (f,) = findings(h, line)
    assert f.severity == "error"


def test_a_json_reading_that_is_no_json_is_not_an_empty_log(tmp_path):
    """A cut `dmesg --json` output reads as no log at all, never as a log without faults: the text
    form is read instead."""
    real = log("forged-xid-segfault-tmpfs-records-dmesg-json.json")
    root = make(tmp_path, {"commands/dmesg_--kernel_--json.txt": real[: len(real) // 2],
                           "commands/dmesg_--kernel.txt": log("mlx5-health-compromised-dmesg.txt")})
    ctx = ProbeContext(HostRoot(root))
    read = kernel_log.read(ctx)
    assert read["source"] == "dmesg --kernel" and len(read["events"]) == 6
    assert any("dmesg --kernel --json: dmesg --json output: not JSON" in w for w in ctx.status.warnings)
    with pytest.raises(ParseError):
        classify('{"dmesg": [{"pri": 6, "time": NaN, "msg": "x"}]}')


def test_a_record_that_merely_contains_a_health_message_is_none():
    """A NIC health message carries mlx5's prefix (the device, or MLNX_OFED's `func:line:(pid N): `);
    a user's segfault record naming a file `... unrecoverable hardware error` is no health event."""
    text = ("[ 9.1] python3[7]: segfault at 0 ip 1 sp 2 error 4 in x unrecoverable hardware error[7f+1000]\n"
            "[ 9.2] bash[8]: segfault at 0 ip 1 sp 2 error 4 in Fatal error 1 detected[7f+1000]\n")
    assert classify(text)["events"] == []
    real = "[ 9.3] mlx5_core 0000:0d:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n"
    assert [e["kind"] for e in classify(real)["events"]] == ["nic-health"]
