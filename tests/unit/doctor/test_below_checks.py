"""Doctor's firmware, PHY and NVLink checks on the Features sections the sources build from
recorded real outputs (tests/fixtures/outputs/SOURCES.md, tests/unit/roles/fixtures/PROVENANCE.md):
each judged for the ports and cards that carry the job, against the QoS plan where one applies."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocetune.analysis.hostview import HostView
from rocetune.core.nic_firmware_params import parse_query
from rocetune.doctor import below_checks as bc
from rocetune.doctor.checks import DoctorInput
from rocetune.model.qos import QosPlan, TrafficClass
from rocetune.probe.parsers.nvsmi_nvlink import parse_fabric_query, parse_nvlink_errors, parse_nvlink_status
from rocetune.probe.parsers.phy import parse_mlxlink, parse_module_info
from rocetune.probe.sources import nic_firmware
from tests.unit.rules.featurekit import Host

OUT = Path(__file__).resolve().parents[2] / "fixtures" / "outputs"
ROLES = Path(__file__).resolve().parents[2] / "unit" / "roles" / "fixtures"


def text(*parts: str) -> str:
    return (OUT.joinpath(*parts)).read_text()


def host():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0, bdf="0000:18:00.0")
    h.rdma("mlx5_0", netdev="eth2", ipv4="192.168.0.5/24", pci="0000:3b:00.0", paths={0: "PIX"})
    h.rdma("mlx5_1", netdev="eth3", ipv4="192.168.1.5/24", pci="0000:3b:00.1", paths={0: "PIX"})
    return h.build()


def run(features, *checks, qos=None):
    d = DoctorInput(features, {}, HostView(features), {}, qos)
    return [f for fn in checks for f in fn(d)]


def card(query_text: str) -> dict:
    rows = parse_query(query_text)
    return {"error": None, "params": {k: {nic_firmware._COLUMNS[c]: v for c, v in r.items()}
                                      for k, r in rows.items() if k in nic_firmware.WATCHED}}


# --- firmware -----------------------------------------------------------------------------------
def test_force_relax_pending_at_next_boot_is_a_warning_and_a_pending_reset():
    f = host()
    f["nic_firmware"] = {"tool": "mlxconfig", "devices": {
        "0000:3b:00.0": card((ROLES / "mlxconfig-e-q-egrep-connectx6-shs-docs.txt").read_text())}}
    found = run(f, bc.fw_wr_ordering, bc.fw_pending)
    assert [(x.id, x.severity) for x in found] == [("doctor-fw-pci-wr-ordering", "warning"),
                                                      ("doctor-fw-pending-reset", "info")]
    assert "force_relax (next boot)" in found[0].message and "per_mkey(0)" in found[0].message
    assert "PCI_WR_ORDERING per_mkey(0) -> force_relax(1)" in found[1].message


def test_the_defaults_of_a_connectx4_lx_against_the_plan():
    f = host()
    f["nic_firmware"] = {"tool": "mlxconfig", "devices": {
        "0000:3b:00.0": card(text("mlxconfig", "mlxconfig-q-connectx4lx-xtremeownage.txt"))}}
    checks = (bc.fw_wr_ordering, bc.fw_cc_mask, bc.fw_cnp, bc.fw_user_cc, bc.fw_ats, bc.fw_pending)
    # mask 255 covers priority 3; CNP 48/6 is the default plan's class; per_mkey: nothing to say
    assert run(f, *checks) == []
    other = QosPlan(data=TrafficClass(26, 3), cnp=TrafficClass(46, 5), source="plan.yml")
    found = run(f, *checks, qos=other)
    assert sorted(x.message.split(": ", 1)[1].split(" is ")[0] for x in found) == [
        "CNP_802P_PRIO_P1", "CNP_802P_PRIO_P2", "CNP_DSCP_P1", "CNP_DSCP_P2"]
    assert "the plan's CNP DSCP is 46 (plan.yml)" in " ".join(x.message for x in found)


def test_a_mask_without_the_data_priority_and_a_user_programmable_cc():
    f = host()
    f["nic_firmware"] = {"tool": "mstconfig", "devices": {"0000:3b:00.0": {"error": None, "params": {
        "ROCE_CC_PRIO_MASK_P1": {"current": "16", "next_boot": "16"},
        "USER_PROGRAMMABLE_CC": {"current": "True(1)", "next_boot": "True(1)"},
        "ATS_ENABLED": {"next_boot": "True(1)"}}}}}
    found = run(f, bc.fw_cc_mask, bc.fw_user_cc, bc.fw_ats)
    assert [x.id for x in found] == ["doctor-fw-cc-prio-mask", "doctor-fw-user-cc", "doctor-fw-ats"]
    assert "without bit 8 of the data priority 3 (the built-in QoS defaults)" in found[0].message
    assert found[2].severity == "info"


def test_an_unread_card_is_not_checked_in_the_tool_s_words():
    f = host()
    f["nic_firmware"] = {"tool": "mlxconfig", "devices": {
        "0000:3b:00.0": {"error": "exit 3: -E- Failed to open the device", "params": {}}}}
    found = run(f, bc.fw_unread)
    assert [x.severity for x in found] == ["info"] and "-E- Failed to open the device" in found[0].message


# --- PHY ----------------------------------------------------------------------------------------
def phy_port(link=None, fec=None, module=None, errors=None, netdev="eth2"):
    return {"netdev": netdev, "pci": "0000:3b:00.0", "link": link, "fec": fec, "module": module,
            "errors": errors or {}}


def test_a_healthy_100g_rs_fec_link_passes_and_the_cable_speed_recommendation_is_said():
    f = host()
    good = parse_mlxlink(text("mlxlink", "mlxlink-c-connectx4-100gbe-rsfec-nvidia-forum.txt"))
    sdr = parse_mlxlink(text("mlxlink", "mlxlink-connectx5-ib-sdr-bluebanquise.txt"))
    f["phy"] = {"link_tool": "mlxlink", "ports": {"mlx5_0:1": phy_port(good),
                                                  "mlx5_1:1": phy_port(sdr, netdev="eth3")}}
    checks = (bc.phy_speed, bc.phy_fec, bc.phy_ber, bc.phy_recommendation, bc.phy_module)
    found = run(f, *checks)
    rec = [x for x in found if x.id == "doctor-phy-recommendation"]
    assert [(x.subject, x.severity) for x in rec] == [("mlx5_1:1", "warning")]
    assert "Cable speed not enabled (status opcode 25)" in rec[0].message
    # and the two compute ports run at different speeds (100 vs 10 Gb/s)
    assert any(x.id == "doctor-phy-speed" and x.subject == "mlx5_1:1" for x in found)
    assert not any(x.subject == "mlx5_0:1" and x.id in ("doctor-phy-ber", "doctor-phy-fec") for x in found)


def test_no_fec_at_100g_and_errors_past_fec_and_a_thin_raw_ber():
    f = host()
    link = parse_mlxlink(text("mlxlink", "mlxlink-c-connectx4-100gbe-rsfec-nvidia-forum.txt"))
    f["phy"] = {"link_tool": "mlxlink", "ports": {
        "mlx5_0:1": phy_port(dict(link, effective_errors=42, effective_ber=1e-12)),
        "mlx5_1:1": phy_port(dict(link, fec="No FEC", raw_ber=3e-9), netdev="eth3",
                             fec={"configured": ["Off"], "active": "None"})}}
    found = run(f, bc.phy_fec, bc.phy_ber)
    assert [(x.id, x.subject, x.severity) for x in found] == [
        ("doctor-phy-fec", "mlx5_1:1", "warning"), ("doctor-phy-ber", "mlx5_0:1", "error"),
        ("doctor-phy-ber", "mlx5_1:1", "warning")]
    assert "42 error(s) got past FEC" in found[1].message and "3e-09 is above 1e-12 (no FEC)" in found[2].message


def test_a_module_with_its_rx_power_low_alarm_on():
    f = host()
    mod = parse_module_info(text("ethtool", "ethtool-m-sfp-10gbase-sr-rx-los-csdn-first-rows.txt"))
    f["phy"] = {"link_tool": None, "ports": {"mlx5_0:1": phy_port(module=mod)}}
    found = run(f, bc.phy_module)
    assert [x.severity for x in found] == ["warning"]
    assert "Laser rx power low alarm, Laser rx power low warning on" in found[0].message
    assert "FINISAR CORP. FTLX8571D3BCL-HD" in found[0].message


def test_a_virtio_netdev_without_fec_or_module_is_not_checked():
    f = host()
    f["phy"] = {"link_tool": None, "ports": {"mlx5_0:1": phy_port(errors={
        "ethtool --show-fec": "exit 1: netlink error: Operation not supported"})}}
    assert [x.severity for x in run(f, bc.phy_unread)] == ["info"]


# --- NVLink -------------------------------------------------------------------------------------
def nvlink_section(**kw):
    q = parse_fabric_query(text("nvlink", "nvidia-smi-q-hgx-h100-sxm-x8-fabric-completed-thamada.txt"))
    fabric = {b: {"state": v.get("state"), "status": v.get("status")} for b, v in q.items()}
    doc = {"nvswitches": 4, "fabric": fabric,
           "links": parse_nvlink_status(text("nvlink", "nvidia-smi-nvlink-s-a100-sxm4-gpud.txt")),
           "link_errors": parse_nvlink_errors(text("nvlink", "nvidia-smi-nvlink-e-gb300-srt-slurm307-first-link.txt")),
           "services": {"nvidia-fabricmanager.service": {"LoadState": "loaded", "ActiveState": "active",
                                                         "SubState": "running", "Result": "success"}},
           "errors": {}}
    doc.update(kw)
    return doc


def test_a_registered_fabric_with_every_link_up_passes():
    f = host()
    f["nvlink"] = nvlink_section()
    assert run(f, bc.nvlink_fabric, bc.nvlink_service, bc.nvlink_links, bc.nvlink_errors) == []


def test_gpus_in_progress_and_fabric_manager_failed_are_errors():
    f = host()
    sec = nvlink_section()
    sec["fabric"]["0000:18:00.0"] = {"state": "In Progress", "status": None}
    sec["services"]["nvidia-fabricmanager.service"] = {"LoadState": "loaded", "ActiveState": "failed",
                                                       "SubState": "failed", "Result": "exit-code"}
    f["nvlink"] = sec
    found = run(f, bc.nvlink_fabric, bc.nvlink_service)
    assert [(x.id, x.severity) for x in found] == [("doctor-nvlink-fabric", "error"),
                                                      ("doctor-nvlink-service", "error")]
    assert "1 of 8 GPU(s) not registered" in found[0].message and "In Progress/N/A x1" in found[0].message


def test_an_inactive_link_and_growing_error_counters():
    f = host()
    sec = nvlink_section()
    sec["links"]["3"]["links"]["7"] = "inactive"
    sec["link_errors"]["0"]["0"]["Replay Errors"] = 12
    f["nvlink"] = sec
    found = run(f, bc.nvlink_links, bc.nvlink_errors)
    assert [(x.id, x.subject) for x in found] == [("doctor-nvlink-links", "GPU3"), ("doctor-nvlink-errors", "GPU0")]
    assert "11 active NVLink(s), the node's other GPUs up to 12; inactive: link 7" in found[0].message


def test_imex_down_is_a_warning_and_no_fabric_manager_beside_nvswitches_an_error():
    f = host()
    sec = nvlink_section()
    sec["services"] = {"nvidia-fabricmanager.service": {"LoadState": "not-found", "ActiveState": "inactive"},
                       "nvidia-imex.service": {"LoadState": "loaded", "ActiveState": "inactive",
                                               "SubState": "dead", "Result": "success"}}
    f["nvlink"] = sec
    found = run(f, bc.nvlink_service)
    assert [(x.subject, x.severity) for x in found] == [("nvidia-fabricmanager.service", "error"),
                                                          ("nvidia-imex.service", "warning")]
    assert "not installed on a node with 4 NVSwitch" in found[0].message
    assert "nvidia-imex.service is inactive (dead, result success)" in found[1].message


def test_a_pcie_node_without_nvswitch_or_fabric_state_says_nothing():
    f = host()
    f["nvlink"] = nvlink_section(nvswitches=0, fabric={"0000:18:00.0": {"state": None, "status": None}},
                                 services={"nvidia-fabricmanager.service": {"LoadState": "not-found",
                                                                            "ActiveState": "inactive"}})
    assert run(f, bc.nvlink_fabric, bc.nvlink_service) == []


# --- the pcie_p2p role ----------------------------------------------------------------------------
UNIT = ("[Service]\nType=oneshot\nExecStart=/usr/bin/python3 /usr/local/lib/rocetune/rocetune_pcie_p2p_boot.py "
        "--scope none --clear ReqRedir,CmpltRedir,EgressCtrl --device=0000:00:02.0 --pair=0000:18:00.0,0000:3b:00.0\n")


def p2p_root(tmp_path, unit=UNIT, dropin=None):
    from tests.unit.treekit import make

    files = {"etc/systemd/system/rocetune-pcie-p2p.service": unit}
    if dropin:
        files["etc/default/grub.d/rocetune-pcie-p2p.cfg"] = dropin
    return make(tmp_path, files)


def p2p_reading(root):
    from rocetune.doctor import readings
    from rocetune.hostfs.context import ProbeContext
    from rocetune.hostfs.root import HostRoot

    return readings.pcie_p2p(ProbeContext(HostRoot(str(root))))


def test_the_unit_s_arguments_are_what_doctor_holds_and_iommu_pt_waits_for_a_reboot(tmp_path):
    reading = p2p_reading(p2p_root(tmp_path, dropin="x iommu=pt\n"))
    assert reading["acs"] == {"scope": "none", "clear": ["ReqRedir", "CmpltRedir", "EgressCtrl"],
                              "devices": ["0000:00:02.0"], "pairs": [("0000:18:00.0", "0000:3b:00.0")]}
    assert reading["error"] is None
    f = host()
    f["kernel"]["cmdline"]["iommu"] = None
    d = DoctorInput(f, {"pcie_p2p": reading}, HostView(f), {}, None)
    assert [(x.id, x.subject, x.severity) for x in bc.pcie_p2p_iommu(d)] == [("doctor-pcie-p2p-iommu", "host", "warning")]


def test_a_unit_with_other_arguments_is_said_and_no_role_no_reading(tmp_path):
    bad = UNIT.replace("--scope none", "--scope none --gpu-id 1af4:1044")
    reading = p2p_reading(p2p_root(tmp_path / "bad", unit=bad))
    assert reading["acs"] is None and "unexpected argument '--gpu-id'" in reading["error"]
    reading = p2p_reading(p2p_root(tmp_path / "ok", dropin="iommu=pt\n"))
    f = host()
    f["kernel"]["cmdline"]["iommu"] = "pt"
    assert bc.pcie_p2p_iommu(DoctorInput(f, {"pcie_p2p": reading}, HostView(f), {}, None)) == []
    from tests.unit.treekit import make

    assert p2p_reading(make(tmp_path / "none", {"etc/hostname": "n\n"})) is None


# --- unreported is unknown, not broken ------------------------------------------------------------
def test_nvlink_slots_beyond_what_topo_shows_are_not_populated():
    f = host()
    sec = nvlink_section()
    for g in sec["links"]:  # the same GPUs listing 18 slots, 6 of them not populated
        sec["links"][g]["links"].update({str(i): "inactive" for i in range(12, 18)})
    f["nvlink"] = sec
    assert run(f, bc.nvlink_links) == []  # every GPU alike: unpopulated, without the topology too
    f["gpus"][0]["nvlink"] = {str(p): 2 for p in range(1, 7)}  # topo -m: NV2 to six peers, 12 links
    assert run(f, bc.nvlink_links) == []
    sec["links"]["0"]["links"]["4"] = "inactive"
    (found,) = run(f, bc.nvlink_links)
    assert found.subject == "GPU0" and "11 active NVLink(s), `nvidia-smi topo -m` gives it 12" in found.message
    # an NVSwitch board: NV18 to every peer, all 18 slots go to the switches
    f["gpus"][0]["nvlink"] = {str(p): 18 for p in range(1, 8)}
    sec["links"]["0"]["links"]["4"] = "25 GB/s"
    (found,) = run(f, bc.nvlink_links)
    assert "12 active NVLink(s), `nvidia-smi topo -m` gives it 18" in found.message


def test_a_module_without_a_temperature_sensor_is_unknown_not_cold_or_hot():
    f = host()
    mod = {"identifier": "QSFP28", "vendor": "Mellanox", "part": "MCP1600-C003", "temperature_c": 0.0,
           "temperature_range": (0.0, 0.0), "rx_power_dbm": [0.0, 0.0, 0.0, 0.0], "rx_power_range": (0.0, 0.0),
           "alarms": []}
    f["phy"] = {"link_tool": None, "ports": {"mlx5_0:1": phy_port(module=mod)}}
    assert run(f, bc.phy_module) == []
    hot = dict(mod, temperature_c=75.0, temperature_range=(-5.0, 70.0))
    f["phy"] = {"link_tool": None, "ports": {"mlx5_0:1": phy_port(module=hot)}}
    assert [x.severity for x in run(f, bc.phy_module)] == ["warning"]


def test_a_two_lane_link_is_judged_against_two_lane_speeds():
    f = host()
    link = parse_mlxlink(text("mlxlink", "mlxlink-c-connectx4-100gbe-rsfec-nvidia-forum.txt"))
    two = dict(link, speed="200G_2X", width="2x", speed_gbps=200.0, state="Active",
               enabled_speeds=["400G_4X", "200G_2X", "100G_1X"], cable_speeds=["400G_4X", "200G_2X", "100G_1X"])
    f["phy"] = {"link_tool": "mlxlink", "ports": {"mlx5_0:1": phy_port(two)}}
    assert [x for x in run(f, bc.phy_speed) if x.subject == "mlx5_0:1"] == []
    slow = dict(two, speed="100G_1X", width="1x", speed_gbps=100.0)
    f["phy"] = {"link_tool": "mlxlink", "ports": {"mlx5_0:1": phy_port(slow)}}
    assert [x.subject for x in run(f, bc.phy_speed)] == []  # a 1-lane link: 100G_1X is its best
    f["phy"] = {"link_tool": "mlxlink", "ports": {"mlx5_0:1": phy_port(dict(two, speed="100G_2X", speed_gbps=100.0))}}
    assert [x.subject for x in run(f, bc.phy_speed)] == ["mlx5_0:1"]


# --- a GPU the driver lost ------------------------------------------------------------------------
@pytest.mark.parametrize("name, bdf, why", [
    ("nvidia-smi-unknown-error-open-gpu-kernel-modules-387.txt", "0000:0b:00.0", "Unknown Error"),
    ("nvidia-smi-gpu-is-lost-owod-81.txt", "0000:02:00.0", "GPU is lost. Reboot the system to recover this GPU"),
    ("nvidia-smi-gpu-is-lost-two-spaces-marian-251.txt", "0000:03:00.0",
     "GPU is lost. Reboot the system to recover this GPU"),
    ("nvidia-smi-no-space-syno-nvidia-gpu-driver-22.txt", "0000:07:00.0", "Unknown Error"),
])
def test_a_gpu_nvidia_smi_cannot_reach_is_lost_in_every_form_it_prints(name, bdf, why):
    from rocetune.probe.parsers.nvsmi_query import lost_gpus

    lost = lost_gpus(text("gpu-lost", name))
    assert lost == [{"bus_id": bdf, "why": why}]
    d = DoctorInput(host(), {"gpu_lost": lost}, HostView(host()), {}, None)
    (found,) = bc.gpu_lost(d)
    assert found.severity == "error" and found.subject == bdf and why in found.message
