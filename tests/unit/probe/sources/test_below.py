"""The sources below NCCL -- NIC firmware read-back, the PHY, the NVLink fabric -- over host roots
of recorded real outputs (tests/fixtures/outputs/SOURCES.md): absent where no tool answered (the
Features of such a host are unchanged), each tool's reading or its own words otherwise, and a
capture of a host replays to the same sections."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from rocetune.hostfs.command import recording_name
from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.capture import build_tar, record
from rocetune.probe.sources import nic_firmware, nvlink, phy
from tests.unit.treekit import make

OUT = Path(__file__).resolve().parents[3] / "fixtures" / "outputs"
ROLES = Path(__file__).resolve().parents[3] / "unit" / "roles" / "fixtures"
CX4LX = (OUT / "mlxconfig" / "mlxconfig-q-connectx4lx-xtremeownage.txt").read_text()
CX5 = (OUT / "mlxconfig" / "mlxconfig-q-connectx5-bluebanquise.txt").read_text()
CX6_EGREP = (ROLES / "mlxconfig-e-q-egrep-connectx6-shs-docs.txt").read_text()
FORUM = (OUT / "mlxlink" / "mlxlink-c-connectx4-100gbe-rsfec-nvidia-forum.txt").read_text()
SFP = (OUT / "ethtool" / "ethtool-m-sfp-10gbase-sr-rx-los-csdn-first-rows.txt").read_text()
FEC = (OUT / "ethtool" / "ethtool-I-show-fec-rs-fbnic-netdev.txt").read_text()
H100_Q = (OUT / "nvlink" / "nvidia-smi-q-hgx-h100-sxm-x8-fabric-completed-thamada.txt").read_text()
A100_S = (OUT / "nvlink" / "nvidia-smi-nvlink-s-a100-sxm4-gpud.txt").read_text()

PCI = {"devices": [{"bdf": "0000:3b:00.0", "kind": "nic", "vendor": "0x15b3"},
                   {"bdf": "0000:3b:00.1", "kind": "nic", "vendor": "0x15b3"},
                   {"bdf": "0000:18:00.0", "kind": "gpu", "vendor": "0x10de"},
                   {"bdf": "0000:05:00.0", "kind": "nvswitch", "vendor": "0x10de"}]}
RDMA = {"devices": [
    {"name": "mlx5_0", "pci": "0000:3b:00.0", "function": "pci", "ports": [{"port": 1, "netdev": "eth2"}]},
    {"name": "mlx5_1", "pci": "0000:3b:00.1", "function": "pci", "ports": [{"port": 1, "netdev": "eth3"}]},
    {"name": "rxe0", "pci": None, "function": "software", "ports": [{"port": 1, "netdev": "ens4"}]}]}


def cmd(argv, out, rc=0, err=""):
    name = recording_name(argv)
    files = {f"commands/{name}.txt": out}
    if rc:
        files[f"commands/{name}.rc"] = f"{rc}\n"
    if err:
        files[f"commands/{name}.err"] = err
    return files


def ctx(tmp_path, files):
    return ProbeContext(HostRoot(str(make(tmp_path, {"etc/hostname": "n1\n", **files}))))


# --- NIC firmware -------------------------------------------------------------------------------
def test_no_tool_no_section(tmp_path):
    assert nic_firmware.probe(ctx(tmp_path, {}), RDMA, PCI) is None
    assert phy.probe(ctx(tmp_path / "b", {}), RDMA, PCI) is None
    assert nvlink.probe(ctx(tmp_path / "c", {}), PCI) is None


def test_one_query_per_card_through_its_first_function_with_the_role_s_reader(tmp_path):
    doc = nic_firmware.probe(ctx(tmp_path, cmd(["mlxconfig", "-d", "0000:3b:00.0", "-e", "q"], CX4LX)), RDMA, PCI)
    assert doc["tool"] == "mlxconfig" and list(doc["devices"]) == ["0000:3b:00.0"]
    params = doc["devices"]["0000:3b:00.0"]["params"]
    # A query without -e has one column (Next Boot), kept as the tool printed it.
    assert params["PCI_WR_ORDERING"] == {"next_boot": "per_mkey(0)"}
    assert params["ROCE_CC_PRIO_MASK_P1"] == {"next_boot": "255"}
    assert params["CNP_DSCP_P2"] == {"next_boot": "48"} and params["CNP_802P_PRIO_P1"] == {"next_boot": "6"}
    assert "MEMIC_BAR_SIZE" not in params  # only what RoCE depends on


def test_mstconfig_when_mft_is_absent_and_the_three_columns_of_e(tmp_path):
    doc = nic_firmware.probe(ctx(tmp_path, cmd(["mstconfig", "-d", "0000:3b:00.0", "-e", "q"], CX6_EGREP)), RDMA, PCI)
    assert doc["tool"] == "mstconfig"
    assert doc["devices"]["0000:3b:00.0"]["params"]["PCI_WR_ORDERING"] == {
        "default": "per_mkey(0)", "current": "per_mkey(0)", "next_boot": "force_relax(1)"}


def test_a_query_that_fails_says_so_in_the_tool_s_words(tmp_path):
    files = cmd(["mlxconfig", "-d", "0000:3b:00.0", "-e", "q"], "", rc=3,
                err="-E- Failed to open the device\n")
    doc = nic_firmware.probe(ctx(tmp_path, files), RDMA, PCI)
    assert doc["devices"]["0000:3b:00.0"] == {"error": "exit 3: -E- Failed to open the device", "params": {}}


def test_ats_enabled_read_from_a_connectx5(tmp_path):
    doc = nic_firmware.probe(ctx(tmp_path, cmd(["mlxconfig", "-d", "0000:3b:00.0", "-e", "q"], CX5)), RDMA, PCI)
    assert doc["devices"]["0000:3b:00.0"]["params"]["ATS_ENABLED"] == {"next_boot": "False(0)"}


# --- PHY ----------------------------------------------------------------------------------------
def test_mlxlink_on_connectx_ports_and_ethtool_on_every_netdev(tmp_path):
    files = {**cmd(["mlxlink", "-d", "0000:3b:00.0", "-p", "1", "-m", "-c"], FORUM),
             **cmd(["ethtool", "-m", "eth2"], SFP),
             **cmd(["ethtool", "--show-fec", "eth2"], FEC),
             **cmd(["ethtool", "--show-fec", "ens4"], "", rc=1, err="netlink error: Operation not supported\n")}
    doc = phy.probe(ctx(tmp_path, files), RDMA, PCI)
    assert doc["link_tool"] == "mlxlink"
    p = doc["ports"]["mlx5_0:1"]
    assert p["link"]["speed_gbps"] == 100 and p["link"]["fec"] == "Standard RS-FEC - RS(528,514)"
    assert p["link"]["raw_ber"] == 3e-12 and p["link"]["recommendation"] == "No issue was observed."
    assert p["fec"] == {"configured": ["RS"], "active": "RS"}
    assert p["module"]["temperature_c"] == 30.14 and p["module"]["rx_power_dbm"] == [-33.98]
    assert p["module"]["alarms"] == ["Laser rx power low alarm", "Laser rx power low warning"]
    assert doc["ports"]["rxe0:1"]["errors"] == {"ethtool --show-fec": "exit 1: netlink error: Operation not supported"}
    assert doc["ports"]["rxe0:1"]["pci"] is None  # a software device: no mlxlink


# --- NVLink -------------------------------------------------------------------------------------
def test_fabric_state_from_q_where_the_query_fields_are_not_known(tmp_path):
    files = {**cmd(nvlink.FABRIC_CSV_ARGV, "", rc=2,
                   err='Field "fabric.state" is not a valid field to query.\n'),
             **cmd(nvlink.QUERY_ARGV, H100_Q), **cmd(nvlink.STATUS_ARGV, A100_S)}
    doc = nvlink.probe(ctx(tmp_path, files), PCI)
    assert doc["nvswitches"] == 1 and len(doc["fabric"]) == 8
    assert doc["fabric"]["0000:18:00.0"] == {"state": "Completed", "status": "Success", "clique_id": "0",
                                             "cluster_uuid": "00000000-0000-0000-0000-000000000000",
                                             "bandwidth": None}
    assert doc["links"]["0"]["links"]["11"] == "25 GB/s" and doc["link_errors"] is None


def test_fabric_state_from_the_query_fields(tmp_path):
    files = cmd(nvlink.FABRIC_CSV_ARGV, "00000000:18:00.0, In Progress, N/A\n")
    doc = nvlink.probe(ctx(tmp_path, files), PCI)
    assert doc["fabric"] == {"0000:18:00.0": {"state": "In Progress", "status": None}}


def test_a_capture_of_a_host_with_every_below_reading_replays_to_the_same(tmp_path):
    host = tmp_path / "host"
    make(host, {"proc/cmdline": "ro\n", **cmd(nvlink.QUERY_ARGV, H100_Q)})
    features, rec = record(str(host))
    assert "nic_firmware" not in features and "phy" not in features  # no RDMA device on this root
    with tarfile.open(fileobj=io.BytesIO(build_tar(str(host), rec))) as tar:
        tar.extractall(tmp_path / "replay")
    again, _ = record(str(tmp_path / "replay"))
    assert again.get("nvlink") == features.get("nvlink")


def test_a_capture_of_a_gpu_node_with_firmware_phy_and_nvlink_readings_replays_to_the_same(tmp_path):
    """A copy of a real 8-rail H100 host (tests/fixtures/hosts/dgx-h100-roce) given recordings of the
    tools: `rocetune capture` keeps them, and the capture replays to the same three sections."""
    import shutil

    from rocetune.core.nic_firmware_params import first_function

    src = Path(__file__).resolve().parents[3] / "fixtures" / "hosts" / "dgx-h100-roce"
    host = tmp_path / "host"
    shutil.copytree(src, host, symlinks=True)
    first, _ = record(str(host))
    nics = sorted({d["pci"] for d in first["rdma"]["devices"] if d.get("pci")})
    netdev = next(p["netdev"] for d in first["rdma"]["devices"] for p in d["ports"] if p.get("netdev"))
    files = {**cmd(["mlxconfig", "-d", first_function(nics[0]), "-e", "q"], CX6_EGREP),
             **cmd(["mlxlink", "-d", nics[0], "-p", "1", "-m", "-c"], FORUM),
             **cmd(["ethtool", "-m", netdev], SFP), **cmd(nvlink.STATUS_ARGV, A100_S)}
    for rel, text in files.items():
        (host / rel).write_text(text)
    features, rec = record(str(host))
    assert features["nic_firmware"]["tool"] == "mlxconfig" and features["phy"]["link_tool"] == "mlxlink"
    assert features["nvlink"]["links"]["0"]["links"]["0"] == "25 GB/s"
    with tarfile.open(fileobj=io.BytesIO(build_tar(str(host), rec))) as tar:
        tar.extractall(tmp_path / "replay")
    again, _ = record(str(tmp_path / "replay"))
    for section in ("nic_firmware", "phy", "nvlink"):
        assert again[section] == features[section], section
