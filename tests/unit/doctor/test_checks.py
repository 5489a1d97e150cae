"""Doctor's checks over Features built by the rules' kit, with doctor's readings given as a
node would give them; the ACS check over the PCI tree of a real `lspci -vvv`, and over a sysfs tree the
pcie_p2p role's own code converged."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from rocetune.analysis.hostview import HostView
from rocetune.core import pcie_p2p as p2p
from rocetune.doctor import checks as C
from rocetune.doctor.readings import ENV_FILES
from rocetune.model.qos import default_plan

from ..rules.featurekit import rail_host

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LSPCI = FIXTURES / "outputs" / "lspci-vvv-hgx-h100-pex890xx.txt.gz"


def readings(**kw) -> dict:
    base = {"memlock": {"systemd_default": "infinity", "systemd_file": "/etc/systemd/system.conf.d/x.conf",
                        "limits": {"soft": "unlimited", "hard": "unlimited"}, "limits_files": {}},
            "acs": {}, "pause": {}, "ecn": {}, "env_files": {}, "units": {}, "warnings": []}
    base.update(kw)
    base.setdefault("deployed_env", [{"path": ENV_FILES[fmt], "format": fmt, "text": text}
                                     for fmt, text in base["env_files"].items()])
    return base


def run(features: dict, qos=None, planned=None, named=(), all_notes=False, **kw):
    """Doctor's checks; the note that no QoS plan was given (tested on its own) left out unless
    `all_notes`."""
    if "acs" not in kw:  # the kit's GPUs and NICs behind one PCIe switch whose ports have ACS off
        devices = features["pci"]["devices"]
        for x in devices:
            if x.get("kind") in ("gpu", "nic") and not x.get("parent"):
                x["parent"] = "0000:f1:00.0"
        if not any(x["bdf"] == "0000:f1:00.0" for x in devices):
            devices += [{"bdf": "0000:f1:00.0", "kind": "bridge", "parent": "0000:f0:00.0"},
                        {"bdf": "0000:f0:00.0", "kind": "bridge", "parent": None}]
        kw["acs"] = {x["bdf"]: [0x100, 0] for x in devices if x.get("kind") == "bridge"}
    d = C.DoctorInput(features, readings(**kw), HostView(features), planned or {}, qos, set(named))
    return [f for f in C.run_checks(d) if all_notes or not _no_plan_note(f)]


def _no_plan_note(f) -> bool:
    return f.id == "doctor-qos-mismatch" and f.subject == "qos" and f.severity == "info"


def ids(findings, severity=None):
    return sorted({f.id for f in findings if severity is None or f.severity == severity})


def test_a_right_node_has_nothing_to_report():
    assert run(rail_host(2).build()) == []


def test_a_down_rail_is_a_failure_naming_the_port():
    h = rail_host(2)
    h.rdma("mlx5_2", netdev="ens2np0", ipv4="192.168.2.5/24", paths={1: "PIX"}, state="DOWN")
    found = [f for f in run(h.build()) if f.id == "doctor-port-down"]
    assert [(f.severity, f.subject) for f in found] == [("error", "mlx5_2:1")]
    assert "DOWN, not ACTIVE" in found[0].message


def test_a_rail_without_an_ipv4_address_has_no_ipv4_gid():
    h = rail_host(1)
    h.rdma("mlx5_1", netdev="ens1np0", ipv6="fd00::5/64", paths={0: "PIX"})
    found = [f for f in run(h.build()) if f.id == "doctor-no-ipv4-roce-gid"]
    assert [f.subject for f in found] == ["mlx5_1:1"], found


def test_one_rail_left_at_1500_is_named():
    f = rail_host(4).build()
    next(i for i in f["net"]["interfaces"] if i["name"] == "ens2np0")["mtu"] = 1500
    found = [x for x in run(f) if x.id == "doctor-rail-mtu-mismatch"]
    assert [(x.subject, x.severity) for x in found] == [("ens2np0", "error")]
    assert "MTU 1500, the other rails 9000" in found[0].message
    # NCCL takes the smaller port's active_mtu for each QP (v2.26.2 net_ib.cc:1413): the cost is
    # smaller packets on that rail, not frames dropped
    assert "1024-byte packets where the others carry 4096-byte" in found[0].message
    assert "drop" not in found[0].message


def test_memlock_of_services_and_logins():
    f = rail_host(1).build()
    found = run(f, memlock={"systemd_default": None, "systemd_file": None,
                            "limits": {"soft": "unlimited", "hard": "8192"}, "limits_files": {}})
    assert ids(found) == ["doctor-memlock-logins", "doctor-memlock-services"]
    logins = next(x for x in found if x.id == "doctor-memlock-logins")
    assert "hard 8192" in logins.message and "soft" not in logins.message
    # A host without RDMA has nothing to pin: no memlock check.
    assert run(rail_host(0, frontend=True).build(), memlock={"systemd_default": None, "systemd_file": None,
               "limits": {"soft": None, "hard": None}, "limits_files": {}}) == []


def test_iommu_translating_on_bare_metal_but_not_in_a_guest():
    f = rail_host(1).build()
    f["kernel"]["cmdline"] = {"iommu": None, "intel_iommu": "on", "amd_iommu": None, "acs": []}
    f["kernel"]["iommu_groups"] = 120
    assert ids(run(f)) == ["doctor-iommu-translated"]
    f["kernel"]["cmdline"]["iommu"] = "pt"
    assert run(f) == []
    f["kernel"]["cmdline"]["iommu"] = None
    f["host"]["virtualization"]["hypervisor"] = "KVM"
    assert run(f) == []


def test_qos_against_the_plan_pfc_trust_map_pause_and_ecn():
    h = rail_host(2)
    h.nic_qos("ens0np0")                                        # as planned
    h.nic_qos("ens1np0", trust="pcp", pfc=(), dscp_prio={26: 0})  # nothing applied
    plan = default_plan()
    found = run(h.build(), qos=plan, pause={"ens0np0": {"rx": True, "tx": True}},
                ecn={"ens0np0": {"roce_np": {3: False}, "roce_rp": {3: True}}})
    by = {(x.id, x.subject): x for x in found}
    assert set(by) == {("doctor-qos-mismatch", "ens1np0"), ("doctor-global-pause", "ens0np0"),
                       ("doctor-ecn-off", "ens0np0"), ("doctor-rail-qos-mismatch", "rails")}
    msg = by[("doctor-qos-mismatch", "ens1np0")].message
    assert "trust pcp (plan: dscp)" in msg and "PFC off on priority 3" in msg
    assert "global pause is on (RX/TX)" in by[("doctor-global-pause", "ens0np0")].message
    assert "roce_np is off for priority 3" in by[("doctor-ecn-off", "ens0np0")].message
    # Without a QoS plan on the node, nothing holds the rails to a plan, and doctor says so;
    # the two rails still differ from each other.
    found = run(h.build(), qos=None, pause={"ens0np0": {"rx": True, "tx": True}}, all_notes=True)
    assert [(f.id, f.subject, f.severity) for f in found] == [
        ("doctor-qos-mismatch", "qos", "info"), ("doctor-rail-qos-mismatch", "rails", "error")]
    assert found[0].evidence == {"not_checked": "QoS (no QoS plan)"}


def test_one_rail_with_pfc_off_is_named_against_the_others_without_a_plan():
    h = rail_host(3)
    for i in range(3):
        h.nic_qos(f"ens{i}np0", pfc=() if i == 1 else (3,))
    found = [f for f in run(h.build()) if f.id == "doctor-rail-qos-mismatch"]
    assert [(f.subject, f.severity) for f in found] == [("ens1np0", "error")]
    assert "PFC on no priority, the other rails trust dscp, PFC on 3" in found[0].message
    # all alike: nothing to say
    h = rail_host(3)
    for i in range(3):
        h.nic_qos(f"ens{i}np0")
    assert [f for f in run(h.build()) if f.id == "doctor-rail-qos-mismatch"] == []


def test_a_rail_the_env_or_expectations_name_is_checked_though_the_plan_drops_it():
    h = rail_host(2)
    h.rdma("mlx5_2", netdev="ens2np0", paths={2: "PIX"})  # no address: the selector leaves it out
    h.gpu(2)
    f = h.build()
    assert "doctor-no-ipv4-roce-gid" not in ids(run(f))
    found = [x for x in run(f, named={"mlx5_2:1"}) if x.id == "doctor-no-ipv4-roce-gid"]
    assert [x.subject for x in found] == ["mlx5_2:1"]
    assert "a rail the expectations or the deployed env name" in found[0].message


def test_a_down_port_without_an_address_is_a_rail_only_where_it_is_named():
    """An unaddressed RoCE port that is down may be a NIC's spare port: silent, unless the
    expectations or the deployed env name it, when it is a lost rail."""
    h = rail_host(2)
    h.rdma("mlx5_2", netdev="ens2np0", paths={2: "PIX"}, state="DOWN")
    h.gpu(2)
    f = h.build()
    assert "doctor-port-down" not in ids(run(f))
    found = [x for x in run(f, named={"mlx5_2"}) if x.id == "doctor-port-down"]
    assert [(x.subject, x.severity) for x in found] == [("mlx5_2:1", "error")]
    assert "is DOWN, not ACTIVE (a rail the expectations or the deployed env name)" in found[0].message


def test_qos_not_reported_by_any_tool_is_said_not_checked():
    found = run(rail_host(1).build(), qos=default_plan())
    assert [(x.id, x.severity) for x in found] == [("doctor-qos-mismatch", "info")]
    assert "not checked on ens0np0" in found[0].message


def test_env_drift_names_the_changed_variables():
    planned = {"sh": "# rocetune 0.1.0\nexport NCCL_IB_GID_INDEX='3'\nexport NCCL_IB_TC='106'\n",
               "nccl-conf": "# rocetune 0.1.0\nNCCL_IB_TC=106\n"}
    deployed = {"sh": "# rocetune 0.1.0\nexport NCCL_IB_GID_INDEX='5'\nexport NCCL_IB_TC='106'\n",
                "nccl-conf": "NCCL_IB_TC=41\n"}  # the site's own nccl.conf: not rocetune's to judge
    found = run(rail_host(1).build(), planned=planned, env_files=deployed)
    # (GID 5 is not a RoCE v2 GID there: doctor-env-gid-not-roce-v2 says so on its own)
    found = [x for x in found if x.id == "doctor-env-drift"]
    assert [(x.id, x.subject, x.severity) for x in found] == \
        [("doctor-env-drift", ENV_FILES["nccl-conf"], "info"), ("doctor-env-drift", ENV_FILES["sh"], "warning")]
    assert found[1].message.endswith("NCCL_IB_GID_INDEX 5 -> 3")
    same = run(rail_host(1).build(), planned=planned, env_files={"sh": planned["sh"]})
    assert same == []


def test_a_failed_boot_unit_is_a_failure_and_an_unanswered_one_not_checked():
    found = run(rail_host(1).build(), units={
        "rocetune-qos.service": {"LoadState": "loaded", "ActiveState": "failed", "Result": "exit-code",
                                 "ExecMainStatus": "1"},
        "rocetune-env.service": None})
    assert [(x.subject, x.severity) for x in found] == \
        [("rocetune-env.service", "info"), ("rocetune-qos.service", "error")]


# --- ACS, over a real lspci -vvv ---------------------------------------------------------------

def lspci_text() -> str:
    return gzip.open(LSPCI, "rt").read()


def controls_from_lspci(text: str) -> dict:
    """{bdf: [offset, ACS Control] or "no ACS"} as doctor's reading gives them, from the ACSCtl
    lines of `lspci -vvv` (lspci names the bits as core.pcie_p2p does, in bit order)."""
    out, device = {}, None
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) ", line)
        if m:
            device = "0000:" + m.group(1)
            out[device] = p2p.NO_ACS
        line = line.strip()
        if device and line.startswith("ACSCtl:"):
            flags = re.findall(r"(\w+)([+-])", line[len("ACSCtl:"):])
            assert [name for name, _ in flags] == sorted(p2p.BITS, key=p2p.BITS.get), line
            out[device] = [0x100, sum(p2p.BITS[name] for name, sign in flags if sign == "+")]
    return out


def bridge_of_bus(text: str) -> dict:
    """secondary bus -> the bridge above it, from the `Bus: primary=, secondary=` lines."""
    out, device = {}, None
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) ", line)
        if m:
            device = "0000:" + m.group(1)
        m = re.search(r"Bus: primary=[0-9a-f]+, secondary=([0-9a-f]+)", line)
        if m and device:
            out[m.group(1)] = device
    return out


def place(features: dict, text: str, bdf: str) -> None:
    """Give `bdf` and its bridges their parents as the lspci's bus numbers show them."""
    above = bridge_of_bus(text)
    by_bdf = {d["bdf"]: d for d in features["pci"]["devices"]}
    child = bdf
    while child[5:7] in above:
        parent = above[child[5:7]]
        by_bdf[child]["parent"] = parent
        if parent in by_bdf:
            break
        by_bdf[parent] = {"bdf": parent, "kind": "bridge", "parent": None}
        features["pci"]["devices"].append(by_bdf[parent])
        child = parent


def acs_host(gpu_bdf: str, nic_bdf: str) -> dict:
    h = rail_host(0)
    h.gpu(0, bdf=gpu_bdf)
    h.rdma("mlx5_0", netdev="ens0np0", ipv4="192.168.0.5/24", pci=nic_bdf, paths={0: "PXB"})
    f = h.build()
    text = lspci_text()
    place(f, text, gpu_bdf)
    place(f, text, nic_bdf)
    return f


def test_the_real_hgx_has_acs_off_between_each_gpu_and_its_connectx7():
    acs = controls_from_lspci(lspci_text())
    assert len([v for v in acs.values() if v != p2p.NO_ACS]) == 55
    assert {b for b, v in acs.items() if v != p2p.NO_ACS and p2p.redirect_on(v[1])} == \
        {"0000:82:00.0", "0000:82:01.0", "0000:82:02.0", "0000:82:03.0"}  # the NVSwitch ports
    f = acs_host("0000:19:00.0", "0000:1a:00.0")  # an H100 and a ConnectX-7 on one PEX890xx
    assert run(f, acs=acs) == []


def test_acs_redirect_on_the_path_is_a_failure_naming_the_bridges():
    """A GPU and a NIC placed on the buses behind the switch ports that have redirect on in the
    same real output (there sit NVSwitches): both ports are named."""
    f = acs_host("0000:83:00.0", "0000:84:00.0")
    found = run(f, acs=controls_from_lspci(lspci_text()))
    assert [(x.id, x.subject, x.severity) for x in found] == [
        ("doctor-acs-redirect", "0000:82:00.0", "error"), ("doctor-acs-redirect", "0000:82:01.0", "error")]
    assert "(ReqRedir+ CmpltRedir+)" in found[0].message and "for GPU0-mlx5_0:" in found[0].message


def test_acs_not_readable_is_not_checked():
    f = acs_host("0000:19:00.0", "0000:1a:00.0")
    acs = {bdf: p2p.UNREADABLE for bdf in controls_from_lspci(lspci_text())}  # lspci as a user: no ACSCtl
    found = run(f, acs=acs)
    assert [(x.id, x.severity) for x in found] == [("doctor-acs-redirect", "info")]
    assert "run doctor as root" in found[0].message


def test_a_node_the_role_converged_passes_and_a_redirect_bit_set_again_fails(tmp_path):
    """The pcie_p2p role's own code (plan, apply) clears a sysfs tree; doctor reads the same tree
    through its root and finds nothing; one redirect bit put back on one bridge (EgressCtrl, which
    the kernel does not set but the role clears) fails that bridge."""
    from rocetune.doctor import readings as R
    from rocetune.hostfs.context import ProbeContext
    from rocetune.hostfs.root import HostRoot
    from tests.unit.roles.test_pcie_p2p import PAIR, hgx

    fs = hgx(tmp_path)
    h = rail_host(0)
    h.gpu(0, bdf=PAIR[0])
    h.rdma("mlx5_0", netdev="ens0np0", ipv4="192.168.0.5/24", pci=PAIR[1], paths={0: "PXB"})
    f = h.build()
    by_bdf = {d["bdf"]: d for d in f["pci"]["devices"]}
    for child, parent in ((PAIR[0], "0000:02:00.0"), (PAIR[1], "0000:02:01.0"), ("0000:02:00.0", "0000:01:00.0"),
                          ("0000:02:01.0", "0000:01:00.0"), ("0000:01:00.0", "0000:00:01.0"), ("0000:00:01.0", None)):
        by_bdf.setdefault(child, {"bdf": child, "kind": "bridge"})["parent"] = parent
    f["pci"]["devices"] = list(by_bdf.values())

    def doctor() -> list:
        return run(f, acs=R.acs(ProbeContext(HostRoot(str(tmp_path))), f, None))

    before = doctor()
    assert [(x.subject, x.severity) for x in before] == [
        ("0000:01:00.0", "error"), ("0000:02:00.0", "error"), ("0000:02:01.0", "error")]
    p2p.apply(fs, p2p.plan(fs, pairs=[PAIR])[0])  # what the role's module and boot unit run
    assert doctor() == []
    offset = p2p.acs_offset(fs.config("0000:02:01.0"))
    fs.write_control("0000:02:01.0", offset, 0x0011 | p2p.BITS["EgressCtrl"])
    again = doctor()
    assert [(x.subject, x.severity) for x in again] == [("0000:02:01.0", "error")]
    assert "(EgressCtrl+)" in again[0].message


def test_the_bridges_the_role_s_unit_names_are_held_too():
    f = acs_host("0000:19:00.0", "0000:1a:00.0")
    acs = controls_from_lspci(lspci_text())
    unit = {"scope": "none", "clear": list(p2p.REDIRECT_BITS), "devices": ["0000:82:02.0"], "pairs": []}
    found = run(f, acs=acs, pcie_p2p={"unit": True, "dropin": None, "acs": unit, "error": None})
    assert [(x.subject, x.severity) for x in found] == [("0000:82:02.0", "error")]
    assert "for named in pcie_p2p_acs_devices although rocetune-pcie-p2p clears it at boot" in found[0].message


@pytest.mark.parametrize("check_id", sorted(C.CHECKS))
def test_every_doctor_check_is_declared_with_what_it_reads_the_fix_and_its_source(check_id):
    from rocetune.checks import get

    spec = get(check_id)
    assert spec.kind == "doctor" and spec.reads and spec.fix and spec.source and spec.why


def test_a_module_listed_for_boot_but_not_loaded_is_a_failure():
    found = run(rail_host(1).build(), modules_load={
        "rdma_rxe": {"file": "/etc/modules-load.d/rocetune-rdma.conf", "loaded": False},
        "ib_uverbs": {"file": "/etc/modules-load.d/rocetune-rdma.conf", "loaded": True}})
    assert [(x.id, x.subject, x.severity) for x in found] == [("doctor-module-not-loaded", "rdma_rxe", "error")]


def test_a_deployed_env_naming_a_device_the_node_lacks_is_a_failure():
    env = {"sh": "# rocetune\nexport NCCL_IB_HCA='=mlx5_0:1,mlx5_7:1'\n", "nccl-conf": "NCCL_IB_HCA=^mlx5_9\n"}
    found = [x for x in run(rail_host(1).build(), env_files=env) if x.id == "doctor-env-names-missing-device"]
    assert [(x.subject, x.severity) for x in found] == [(ENV_FILES["sh"], "error")]
    assert found[0].message.endswith("no RDMA device mlx5_7")
    prefix = {"sh": "export NCCL_IB_HCA='mlx5'\n"}  # a prefix that matches mlx5_0
    assert [x for x in run(rail_host(1).build(), env_files=prefix) if x.id == "doctor-env-names-missing-device"] == []


def test_pause_is_read_with_the_roce_qos_roles_own_reader(tmp_path):
    """doctor reads `ethtool -a` with the parser the roce_qos role uses (one reader)."""
    from rocetune.doctor import readings
    from rocetune.hostfs.context import ProbeContext
    from rocetune.hostfs.root import HostRoot
    from rocetune.hostfs.runners import RecordedRunner

    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "ethtool_-a_ens0np0.txt").write_text(
        "Pause parameters for ens0np0:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\ton\n")
    root = HostRoot(str(tmp_path))
    ctx = ProbeContext(root, RecordedRunner(root))
    assert readings.pause(ctx, "ens0np0") == {"rx": True, "tx": True}
    assert readings.pause(ctx, "ens1np0") is None  # no recording: unknown, not "off"


def test_a_deployed_traffic_class_is_held_to_the_nics_pfc():
    from rocetune.model.qos import QosPlan

    env = {"sh": "export NCCL_IB_TC=106\n"}  # DSCP 26, priority 3 under the default DSCP map
    h = rail_host(2)
    for i in range(2):
        h.nic_qos(f"ens{i}np0", pfc=(3,) if i == 0 else (4,))
    found = [x for x in run(h.build(), env_files=env) if x.id == "doctor-env-tc-lossy"]
    assert [(x.subject, x.severity) for x in found] == [("mlx5_1:1", "error")]
    assert "ens1np0: DSCP 26 -> priority 3, PFC on 4" in found[0].message
    lossy = QosPlan(lossless_priorities=())  # a fabric run lossy by design, as its plan says
    assert [x for x in run(h.build(), qos=lossy, env_files=env) if x.id == "doctor-env-tc-lossy"] == []
