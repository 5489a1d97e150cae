"""A node held to what it should be, not to what it shows now: on copies of dgx-h100-rails-dmabuf
(8 GPUs, 8 ConnectX-7 rails, DSCP trust and PFC 3 recorded), a lost rail, a rail that lost its
address, a node without a QoS plan and one rail with PFC off each fail doctor -- also after the
env was re-derived the way a boot unit without a guard would (`env -q -o`) -- and the boot
unit's mode (`env --no-degrade`) refuses to write the degraded env, leaving the previous one."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from .clirun import rocetune, rocetune_json

pytestmark = pytest.mark.slow  # probes every fixture host against expectations

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
HOST = HOSTS / "dgx-h100-rails-dmabuf"
LOST = "mlx5_4"            # GPU2's rail (PIX), netdev enp79s0np0
LOST_NETDEV = "enp79s0np0"
PFC_OFF = "enp94s0np0"     # mlx5_5, GPU3's rail


def _copy(dst: Path) -> Path:
    shutil.copytree(HOST, dst, symlinks=True)
    (dst / "etc/rocetune").mkdir(parents=True)
    return dst


def _env(root: Path, *extra: str):
    return rocetune("--root", str(root), "-q", "env", "--env-dir", str(root / "etc/rocetune"),
                    "--format", "sh", "-o", str(root / "etc/rocetune/nccl.env"), *extra)


def _doctor(root: Path, *extra: str):
    code, env = rocetune_json("--root", str(root), "doctor", "--no-counters", *extra)
    found = {(f["id"], f["subject"]): f for f in env["data"]["findings"]}
    return code, found, env["data"]


def _failures(found: dict) -> list:
    """The error findings: a node whose copy is good has none (it may have warnings of its own,
    such as the NCCL release's known bugs)."""
    return sorted(k for k, f in found.items() if f["severity"] == "error")


def _lose_rail(root: Path) -> None:
    """The RDMA device is gone (driver or firmware trouble); its netdev stays, as it does then.
    ibv_devinfo's recording goes with it: verbs no longer sees it either."""
    port = Path(os.path.realpath(root / "sys/class/infiniband" / LOST))
    shutil.rmtree(port)
    (root / "sys/class/infiniband" / LOST).unlink()
    text = (root / "commands/ibv_devinfo.txt").read_text()
    blocks = re.split(r"(?m)^(?=hca_id:)", text)
    (root / "commands/ibv_devinfo.txt").write_text("".join(b for b in blocks if not b.startswith(f"hca_id:\t{LOST}\n")))


def _lose_address(root: Path) -> None:
    """The rail's IPv4 address is gone, and with it its IPv4 GIDs (the kernel removes them)."""
    path = root / "commands/ip_-j_addr_show.txt"
    links = json.loads(path.read_text())
    for link in links:
        if link["ifname"] == LOST_NETDEV:
            link["addr_info"] = [a for a in link["addr_info"] if a["family"] != "inet"]
    path.write_text(json.dumps(links))
    port = Path(os.path.realpath(root / "sys/class/infiniband" / LOST / "ports/1"))
    for index in (2, 3):  # ::ffff:10.200.2.27, RoCE v1 and v2
        (port / "gids" / str(index)).write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
        for attr in ("types", "ndevs"):
            (port / "gid_attrs" / attr / str(index)).unlink()


def _pfc_off(root: Path) -> None:
    """`mlnx_qos -i IF --pfc 0,0,0,0,0,0,0,0` on one rail: what mlnx_qos then prints."""
    path = root / f"commands/mlnx_qos_-i_{PFC_OFF}.txt"
    text = path.read_text()
    off = re.sub(r"(enabled\s+0\s+0\s+0\s+)1", r"\g<1>0", text)
    assert off != text
    path.write_text(off)


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> Path:
    """The expectations a known-good node of this kind gives (`doctor --write-expect`)."""
    root = _copy(tmp_path_factory.mktemp("good") / "root")
    out = root.parent / "expect.yml"
    code, found, data = _doctor(root, "--write-expect", str(out))
    assert code in (0, 5) and not _failures(found), _failures(found)
    assert data["expect"]["verdict"] == "none" and data["expect"]["written"] == str(out)
    return out


def test_a_known_good_node_written_down_meets_its_own_expectations(expected, tmp_path):
    text = expected.read_text()
    assert "rails:\n  count: 8\n  per_gpu: true\n" in text and "- mlx5_4:1\n" in text
    assert "env:\n  NCCL_IB_TC: '106'\n" in text
    root = _copy(tmp_path / "root")
    shutil.copy(expected, root / "etc/rocetune/expect.yml")
    code, found, data = _doctor(root)
    assert code in (0, 5) and not _failures(found) and data["expect"]["verdict"] == "met"
    assert data["expect"]["source"].endswith("etc/rocetune/expect.yml")
    # the node has no QoS plan, so its document does not require one, and no mlxconfig to read its
    # firmware with: the two fields left out
    assert found[("expect-unchecked", "expectations")]["message"].endswith(
        "leaves them out): qos.plan_required, firmware")


def test_the_report_names_the_document_it_wrote(expected, tmp_path):
    out = tmp_path / "again.yml"
    proc = rocetune("--root", str(HOST), "doctor", "--no-counters", "--write-expect", str(out))
    assert proc.returncode in (0, 5) and proc.stdout.splitlines()[-1] == f"expectations written to {out}"
    assert out.read_text() == expected.read_text()  # the same node kind gives the same bytes


@pytest.mark.parametrize("declared", [False, True], ids=["no-expectations", "expectations"])
def test_a_lost_rail_fails_after_the_env_is_rewritten(expected, tmp_path, declared):
    root = _copy(tmp_path / "root")
    if declared:
        shutil.copy(expected, root / "etc/rocetune/expect.yml")
    assert _env(root).returncode == 0
    _lose_rail(root)
    assert _env(root).returncode == 0  # an unguarded rewrite: the env now fits the broken node
    assert f"{LOST}:1" not in (root / "etc/rocetune/nccl.env").read_text()
    code, found, data = _doctor(root)
    if declared:
        assert code == 1
        assert found[("expect-rails", f"{LOST}:1")]["severity"] == "error"
        assert "expected 8" in found[("expect-rails", "rails")]["message"]
        assert found[("expect-rails", "GPU2")]["severity"] == "error"
        assert data["expect"]["verdict"] == "short"
    else:
        # Nothing declared and the env rewritten: what is left is the GPU without a rail.
        assert code == 5 and found[("gpu-without-rail", "GPU2")]["severity"] == "warning"


def test_the_boot_units_mode_refuses_a_lost_rail_and_keeps_the_env(tmp_path):
    root = _copy(tmp_path / "root")
    env_file = root / "etc/rocetune/nccl.env"
    assert _env(root, "--no-degrade").returncode == 0
    before, mtime = env_file.read_bytes(), env_file.stat().st_mtime_ns
    _lose_rail(root)
    proc = _env(root, "--no-degrade")
    assert proc.returncode == 1
    assert f"refused to replace the env: {env_file}: NCCL_IB_HCA would lose {LOST}:1 (8 -> 7 RDMA ports)" in proc.stdout
    assert "rocetune: error: refused to replace" in proc.stderr  # -q hides warnings, never this
    assert env_file.read_bytes() == before and env_file.stat().st_mtime_ns == mtime
    record = json.loads((root / "var/lib/rocetune/env-refused.json").read_text())
    assert record["files"] == [str(env_file)] and "NCCL_IB_HCA would lose" in record["reasons"][0]
    code, found, _ = _doctor(root)
    assert code == 1
    assert "left the previous one in place" in found[("doctor-env-refused", str(env_file))]["message"]
    assert ("doctor-env-names-missing-device", "/etc/rocetune/nccl.env") in found


def test_a_refusal_is_lifted_by_a_run_that_writes(tmp_path):
    root = _copy(tmp_path / "root")
    assert _env(root, "--no-degrade").returncode == 0
    _pfc_off(root)
    assert _env(root, "--no-degrade").returncode == 1
    assert (root / "var/lib/rocetune/env-refused.json").exists()
    shutil.copy(HOST / f"commands/mlnx_qos_-i_{PFC_OFF}.txt", root / f"commands/mlnx_qos_-i_{PFC_OFF}.txt")
    proc = _env(root, "--no-degrade")
    assert proc.returncode == 0 and proc.stdout.startswith("unchanged ")
    assert not (root / "var/lib/rocetune/env-refused.json").exists()
    code, found, _ = _doctor(root)
    assert code in (0, 5) and not _failures(found), _failures(found)


@pytest.mark.parametrize("declared", [False, True], ids=["no-expectations", "expectations"])
def test_a_rail_that_lost_its_address_fails_after_the_env_is_rewritten(expected, tmp_path, declared):
    root = _copy(tmp_path / "root")
    if declared:
        shutil.copy(expected, root / "etc/rocetune/expect.yml")
    assert _env(root).returncode == 0
    _lose_address(root)
    assert _env(root, "--no-degrade").returncode == 1  # the boot unit's mode keeps the old env
    assert _env(root).returncode == 0
    code, found, _ = _doctor(root)
    assert code == 1
    # The port is there, next to GPU2, and unusable: an error with or without a declaration.
    assert found[("rail-port-unusable", f"{LOST}:1")]["severity"] == "error"
    assert "GPU2 has no other rail" in found[("rail-port-unusable", f"{LOST}:1")]["message"]
    if declared:  # the expectations name the port: doctor looks at it though the plan drops it
        assert found[("doctor-no-ipv4-roce-gid", f"{LOST}:1")]["severity"] == "error"
        assert "not used: no IPv4/IPv6 RoCE v2 GID" in found[("expect-rails", f"{LOST}:1")]["message"]


def test_a_deployed_env_naming_the_port_is_enough_for_the_gid_check(tmp_path):
    root = _copy(tmp_path / "root")
    assert _env(root).returncode == 0
    _lose_address(root)
    code, found, _ = _doctor(root)  # the env still names mlx5_4:1
    assert code == 1
    assert "a rail the expectations or the deployed env name" in \
        found[("doctor-no-ipv4-roce-gid", f"{LOST}:1")]["message"]


def test_no_qos_plan_is_said_plainly_and_fails_where_one_is_required(tmp_path):
    root = _copy(tmp_path / "root")
    proc = rocetune("--root", str(root), "doctor", "--no-counters")
    assert proc.returncode in (0, 5) and " 0 failure(s)" in proc.stdout
    assert proc.stdout.splitlines()[-1].endswith(
        "not checked: QoS (no QoS plan), expectations (none declared)")
    (root / "etc/rocetune/expect.yml").write_text("qos: {plan_required: true}\n")
    code, found, _ = _doctor(root)
    assert code == 1 and found[("expect-qos-plan", "qos")]["severity"] == "error"
    (root / "etc/rocetune/qos.yml").write_text("version: 1\ntrust: dscp\n")
    code, found, _ = _doctor(root)
    assert code in (0, 5) and not _failures(found) and ("expect-qos-plan", "qos") not in found
    assert ("doctor-qos-mismatch", "qos") not in found


@pytest.mark.parametrize("declared", [False, True], ids=["no-expectations", "expectations"])
def test_pfc_off_on_one_rail_fails_after_the_env_dropped_the_traffic_class(expected, tmp_path, declared):
    root = _copy(tmp_path / "root")
    if declared:
        shutil.copy(expected, root / "etc/rocetune/expect.yml")
    assert _env(root).returncode == 0
    assert "NCCL_IB_TC='106'" in (root / "etc/rocetune/nccl.env").read_text()
    _pfc_off(root)
    refused = _env(root, "--no-degrade")
    assert refused.returncode == 1 and "NCCL_IB_TC=106 would be dropped" in refused.stdout
    assert _env(root).returncode == 0
    assert "NCCL_IB_TC" not in (root / "etc/rocetune/nccl.env").read_text()  # on all 8 rails
    code, found, _ = _doctor(root)
    assert code == 1
    assert found[("doctor-rail-qos-mismatch", PFC_OFF)]["severity"] == "error"
    assert found[("tc-not-derived", "NCCL_IB_TC")]["severity"] == "warning"
    if declared:
        assert found[("expect-env", "NCCL_IB_TC")]["message"] == "the plan does not set NCCL_IB_TC (expected 106)"


def test_expectations_given_on_the_command_line_and_refused_with_the_field(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("rails:\n  cuont: 8\n")
    proc = rocetune("--root", str(HOST), "doctor", "--expect", str(bad))
    assert proc.returncode == 3
    assert f"rocetune: error: {bad}: rails.cuont: not a known key (did you mean count?)" in proc.stderr
    good = tmp_path / "good.yml"
    good.write_text("gpus: {count: 16}\n")
    proc = rocetune("--root", str(HOST), "env", "--expect", str(good))
    assert proc.returncode == 0
    assert "expect-gpus: 8 GPU(s), expected 16: a GPU is missing" in proc.stderr


def test_the_nodes_check_configuration_is_honoured_by_doctor_and_the_boot_units_mode(tmp_path):
    root = _copy(tmp_path / "root")
    (root / "etc/rocetune/expect.yml").write_text("versions: {nic_firmware: '28.40.*'}\n")
    refused = _env(root, "--no-degrade")
    assert refused.returncode == 1
    assert "mlx5_0's firmware is 28.39.1002, expected 28.40.* (expect-versions)" in refused.stdout
    (root / "etc/rocetune/doctor.yml").write_text(
        "version: 1\ngrade:\n  - id: expect-versions\n    severity: warning\n"
        "    reason: NIC firmware rolling upgrade to 28.40\n")
    assert _env(root, "--no-degrade").returncode == 0
    proc = rocetune("--root", str(root), "doctor", "--no-counters")
    assert proc.returncode == 5
    assert "graded error -> warning by " in proc.stdout and "NIC firmware rolling upgrade to 28.40" in proc.stdout
    assert "graded warning expect-versions: NIC firmware rolling upgrade to 28.40 [" in proc.stdout
    code, found, data = _doctor(root, "--skip", "expect-versions=firmware window")
    assert code in (0, 5) and not _failures(found) and data["skipped"] and all(f["graded"]["by"] == "--skip" for f in data["skipped"])
    # the command line's rule replaces the file's for the same id, for this run
    assert [r["source"] for r in data["check_config"]["rules"]] == ["--skip"]
    assert data["check_config"]["sources"] == [str(root / "etc/rocetune/doctor.yml"), "--skip"]


# The rails' cards as mlxconfig reads them: the recorded real query of a ConnectX-4 Lx (its defaults:
# mask 255, CNP DSCP 48 / 802.1p 6, per_mkey; tests/fixtures/outputs/SOURCES.md) stands in for each
# card of this host, which was captured without MFT installed.
CX4LX_QUERY = HOSTS.parent / "outputs" / "mlxconfig" / "mlxconfig-q-connectx4lx-xtremeownage.txt"


def _with_mlxconfig(root: Path) -> Path:
    from rocetune.hostfs.command import recording_name

    cards = sorted({os.path.basename(os.path.realpath(d / "device")).rsplit(".", 1)[0] + ".0"
                    for d in (root / "sys/class/infiniband").iterdir()})
    for bdf in cards:
        name = recording_name(["mlxconfig", "-d", bdf, "-e", "q"])
        shutil.copy(CX4LX_QUERY, root / "commands" / f"{name}.txt")
    return root


def test_firmware_written_down_is_held_and_unread_firmware_is_said(tmp_path):
    root = _with_mlxconfig(_copy(tmp_path / "root"))
    out = tmp_path / "expect.yml"
    code, found, data = _doctor(root, "--write-expect", str(out))
    text = out.read_text()
    assert "firmware:\n  CNP_802P_PRIO_P1: 6\n" in text and "  PCI_WR_ORDERING: per_mkey(0)\n" in text, text
    shutil.copy(out, root / "etc/rocetune/expect.yml")
    code, found, data = _doctor(root)
    assert data["expect"]["verdict"] == "met" and not [k for k in found if k[0] == "expect-firmware"], found
    # another CNP class declared for every rail: each rail's card falls short
    (root / "etc/rocetune/expect.yml").write_text(text.replace("CNP_DSCP_P1: 48", "CNP_DSCP_P1: 26"))
    code, found, data = _doctor(root)
    short = sorted(k[1] for k, f in found.items() if k[0] == "expect-firmware" and f["severity"] == "error")
    assert code == 1 and data["expect"]["verdict"] == "short" and len(short) == 8, short
    assert "CNP_DSCP_P1 is 48 (next boot; the query has no Current column), expected 26" in \
        found[("expect-firmware", short[0])]["message"]
    # the same expectations on the node as captured (no mlxconfig): said on the summary line, not passed
    proc = rocetune("--root", str(HOST), "doctor", "--no-counters", "--expect", str(out))
    assert "not checked: " in proc.stdout.splitlines()[-1] and \
        "declared firmware (neither mlxconfig nor mstconfig answered)" in proc.stdout.splitlines()[-1], proc.stdout
    code, found, data = _doctor(HOST, "--expect", str(out))
    assert found[("expect-firmware", "firmware")]["severity"] == "info"
    assert found[("expect-firmware", "firmware")]["message"].startswith("not checked: neither mlxconfig")
