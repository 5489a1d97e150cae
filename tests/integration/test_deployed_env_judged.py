"""What the job gets is what is judged: on copies of real fixture hosts, the env files jobs
source -- rocetune's own after the node changed under them, or written by hand, in any dialect --
are held to the node, with or without expectations; the node settings file is read by every verb
so that rocetune's documented ways to change the env never show up as drift; below NCCL 2.21.5 a
GID that moved on one port keeps the majority pin and fails the odd port."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from .clirun import rocetune, rocetune_json

pytestmark = pytest.mark.slow  # several doctor runs per case over 8-rail fixture copies

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
DGX = HOSTS / "dgx-h100-rails-dmabuf"  # 8 ConnectX-7 rails, bond0 front end, 2 storage ports, PFC 3
PCIE = HOSTS / "pcie-4gpu-2nic"  # 3 RoCE rails, GID 3 the IPv4 RoCE v2 GID on each
ENV = "etc/rocetune/nccl.env"


def _copy(host: Path, dst: Path, settings: str = "") -> Path:
    shutil.copytree(host, dst, symlinks=True)
    (dst / "etc/rocetune").mkdir(parents=True)
    if settings:
        (dst / "etc/rocetune/doctor.yml").write_text(settings)
    return dst


def _env(root: Path, *extra: str):
    """What the boot unit runs (rocetune_env role): no option but the files."""
    return rocetune(
        "--root",
        str(root),
        "-q",
        "env",
        "--env-dir",
        str(root / "etc/rocetune"),
        "--format",
        "sh",
        "-o",
        str(root / ENV),
        *extra,
    )


def _doctor(root: Path, *extra: str):
    code, out = rocetune_json("--root", str(root), "doctor", "--no-counters", *extra)
    return code, out["data"]["findings"], out


def _failures(findings) -> dict:
    return {(f["id"], f["subject"]): f for f in findings if f["severity"] == "error"}


def _gate(root: Path) -> int:
    return rocetune("--root", str(root), "doctor", "--gate", "prolog", "--no-counters", "--no-drain").returncode


def _move_gids(root: Path, device: str, frm=(2, 3), to=(4, 5)) -> None:
    """The port's IPv4 address re-added after the slots it had were taken: its RoCE v1/v2 pair
    moves from `frm` to `to` (the kernel frees the old slots; gid_attrs go with the entries)."""
    port = Path(os.path.realpath(root / "sys/class/infiniband" / device / "ports/1"))
    for a, b in zip(frm, to):
        (port / "gids" / str(b)).write_text((port / "gids" / str(a)).read_text())
        (port / "gids" / str(a)).write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
        for attr in ("types", "ndevs"):
            src = port / "gid_attrs" / attr / str(a)
            (port / "gid_attrs" / attr / str(b)).write_text(src.read_text())
            src.unlink()


def _pfc_off_everywhere(root: Path) -> None:
    """`mlnx_qos -i IF --pfc 0,0,0,0,0,0,0,0` on every rail: what mlnx_qos then prints."""
    for path in (root / "commands").glob("mlnx_qos_-i_*.txt"):
        text = path.read_text()
        off = re.sub(r"(enabled\s+0\s+0\s+0\s+)1", r"\g<1>0", text)
        assert off != text
        path.write_text(off)


def _lose_device(root: Path, device: str) -> None:
    port = Path(os.path.realpath(root / "sys/class/infiniband" / device))
    shutil.rmtree(port)
    (root / "sys/class/infiniband" / device).unlink()
    text = (root / "commands/ibv_devinfo.txt").read_text()
    blocks = re.split(r"(?m)^(?=hca_id:)", text)
    (root / "commands/ibv_devinfo.txt").write_text(
        "".join(b for b in blocks if not b.startswith(f"hca_id:\t{device}\n"))
    )


HAND_WRITTEN = "NCCL_IB_HCA=mlx5\nNCCL_SOCKET_IFNAME=eth0\nNCCL_CROSS_NIC=1\n"


def test_a_hand_written_env_that_breaks_jobs_fails_doctor_and_the_gate(tmp_path):
    root = _copy(DGX, tmp_path / "root")
    (root / ENV).write_text(HAND_WRITTEN)  # no rocetune header
    code, findings, _ = _doctor(root)
    failed = _failures(findings)
    assert code == 1
    hca = failed[("doctor-env-selects-non-rail", "/etc/rocetune/nccl.env")]["message"]
    assert hca.startswith("mlx5_1:1, mlx5_2:1, mlx5_7:1, mlx5_8:1: NCCL_IB_HCA=mlx5 also selects them")
    assert "bond0 carries the IPv4 default route" in hca
    assert failed[("doctor-env-ifname-missing", "/etc/rocetune/nccl.env")]["message"].startswith("eth0: ")
    assert _gate(root) == 1


def test_any_dialect_the_node_settings_list_is_judged(tmp_path):
    root = _copy(DGX, tmp_path / "root", "env:\n  files: [/shared/jobs/train.json]\n")
    (root / "shared/jobs").mkdir(parents=True)
    (root / "shared/jobs/train.json").write_text(json.dumps({"NCCL_IB_HCA": "^mlx5_2,mlx5_8"}))
    code, findings, _ = _doctor(root)
    failed = _failures(findings)
    assert code == 1 and set(failed) == {("doctor-env-selects-non-rail", "/shared/jobs/train.json")}
    assert failed[("doctor-env-selects-non-rail", "/shared/jobs/train.json")]["message"].startswith(
        "mlx5_1:1, mlx5_7:1: "
    )  # the ^ list leaves the storage ports selected


def test_a_pinned_gid_that_moved_fails_without_expectations(tmp_path):
    root = _copy(PCIE, tmp_path / "root")
    assert _env(root).returncode == 0 and "NCCL_IB_GID_INDEX='3'" in (root / ENV).read_text()
    for device in ("mlx5_0", "mlx5_1", "mlx5_2"):
        _move_gids(root, device)
    code, findings, _ = _doctor(root)
    failed = _failures(findings)
    assert code == 1
    gid = failed[("doctor-env-gid-not-roce-v2", "mlx5_0:1, mlx5_1:1, mlx5_2:1")]["message"]
    assert "pins NCCL_IB_GID_INDEX=3" in gid and "its IPv4 RoCE v2 GID is at 5" in gid
    assert _gate(root) == 1


def test_a_traffic_class_without_pfc_fails_without_expectations(tmp_path):
    root = _copy(DGX, tmp_path / "root")
    assert _env(root).returncode == 0 and "NCCL_IB_TC='106'" in (root / ENV).read_text()
    _pfc_off_everywhere(root)
    code, findings, _ = _doctor(root)
    failed = _failures(findings)
    assert code == 1
    ((key, f),) = [(k, v) for k, v in failed.items() if k[0] == "doctor-env-tc-lossy"]
    assert key[1].count("mlx5_") == 8 and "DSCP 26 -> priority 3, PFC on no priority" in f["message"]


def test_a_device_the_deployed_env_names_that_is_gone_fails_without_expectations(tmp_path):
    root = _copy(DGX, tmp_path / "root")
    assert _env(root).returncode == 0
    _lose_device(root, "mlx5_4")
    code, findings, data = _doctor(root)
    assert code == 1 and ("doctor-env-names-missing-device", "/etc/rocetune/nccl.env") in _failures(findings)
    assert data["data"]["expect"]["verdict"] == "none"
    assert _gate(root) == 1


OLD_NCCL = 'nccl_version: "2.20.5"\n'  # PyTorch 2.3/2.4 wheels


def test_below_2_21_5_a_moved_gid_keeps_the_majority_pin_and_fails_the_odd_port(tmp_path):
    root = _copy(PCIE, tmp_path / "root", OLD_NCCL)
    assert _env(root, "--no-degrade").returncode == 0
    _move_gids(root, "mlx5_1", (2, 3), (4, 5))
    proc = _env(root, "--no-degrade")
    text = (root / ENV).read_text()
    assert proc.returncode == 0 and "NCCL_IB_GID_INDEX='3'" in text and "NCCL_IB_ADDR_RANGE" not in text
    code, findings, _ = _doctor(root)
    failed = _failures(findings)
    assert code == 1
    assert (
        "its compute address's IPv4 RoCE v2 GID is at index 5, the other ports' at 3"
        in failed[("gid-index-odd-port", "mlx5_1:1")]["message"]
    )
    assert ("doctor-env-gid-not-roce-v2", "mlx5_1:1") in failed


SETTINGS = 'nccl_version: "2.23.4"\nenv:\n  set:\n    NCCL_IB_QPS_PER_CONNECTION: 4\n    NCCL_IB_ECE_ENABLE: 0\n'


def test_node_settings_are_read_by_every_verb_so_nothing_drifts(tmp_path):
    """env --set in the node settings and the jobs' NCCL release on 3 identical nodes: the boot
    unit, doctor, its gate and fleet report (the fleet play's doctor run) pass no option and
    agree; the ECE fix given there is taken as given."""
    results = tmp_path / "fleet"
    results.mkdir()
    for i in (1, 2, 3):
        root = _copy(DGX, tmp_path / f"gpu0{i}", SETTINGS)
        assert _env(root).returncode == 0
        text = (root / ENV).read_text()
        assert "# rule: override (/etc/rocetune/doctor.yml: env.set)\nexport NCCL_IB_QPS_PER_CONNECTION='4'" in text
        code, findings, out = _doctor(root, "-v")
        assert code == 0, [(f["id"], f["message"]) for f in findings if f["severity"] != "info"]
        assert not [f for f in findings if f["id"] in ("doctor-env-drift", "nccl-ece-roce") and f["severity"] != "info"]
        assert _gate(root) == 0
        (results / f"gpu0{i}.json").write_text(json.dumps(out))
    code, report = rocetune_json("fleet", "report", str(results))
    assert code == 0 and report["data"]["summary"]["differ"] == 0, report["data"]["summary"]


def test_fleet_report_shows_what_jobs_get_with_the_plan_beside(tmp_path):
    results = tmp_path / "fleet"
    results.mkdir()
    for i in (1, 2, 3):
        root = _copy(DGX, tmp_path / f"gpu0{i}")
        assert _env(root).returncode == 0
        if i == 2:
            (root / ENV).write_text(HAND_WRITTEN)
        _, _, out = _doctor(root, "-v")
        (results / f"gpu0{i}.json").write_text(json.dumps(out))
    code, report = rocetune_json("fleet", "report", str(results))
    assert code == 1
    fact = report["data"]["facts"]["env.NCCL_SOCKET_IFNAME"]
    assert fact["reference"] == "=bond0", fact
    assert {h for h, v in fact["values"].items() if v["status"] == "odd"} == {"gpu02"}
    assert fact["values"]["gpu02"]["value"] == "eth0" and fact["values"]["gpu02"]["detail"] == "plan: =bond0"
    text = rocetune("fleet", "report", str(results)).stdout
    assert re.search(r"gpu02  \w+ jobs +env NCCL_SOCKET_IFNAME +eth0 +=bond0 on 2 of 3 hosts\n +plan: =bond0\n", text), text


def test_cross_nic_over_rails_measured_apart_fails(tmp_path):
    root = _copy(DGX, tmp_path / "root")
    (root / ENV).write_text("export NCCL_CROSS_NIC=1\n")
    assert _doctor(root)[0] != 1  # without a measurement, routes alone prove nothing
    (root / "etc/rocetune/rail-reach.json").write_text(
        json.dumps(
            {
                "schema": "rocetune.rail-reach/1",
                "verdict": "isolated",
                "reached": 0,
                "tested": 56,
                "measured_at": "2026-11-27T20:00:00Z",
                "hosts": ["gpu01", "gpu02"],
            }
        )
    )
    code, findings, _ = _doctor(root)
    failed = _failures(findings)
    assert code == 1
    assert failed[("doctor-env-cross-nic-unreachable", "/etc/rocetune/nccl.env")]["message"].startswith(
        "NCCL_CROSS_NIC=1: 0 of 56 rail-to-other-rail paths answered (isolated"
    )


@pytest.mark.parametrize("host", sorted(p.name for p in HOSTS.iterdir() if p.is_dir()))
def test_the_env_rocetune_writes_on_a_healthy_host_passes_every_deployed_env_check(tmp_path, host):
    """No false drain: what the boot unit writes on each fixture host, both files, is held to
    the same node and found right."""
    root = _copy(HOSTS / host, tmp_path / "root")
    assert _env(root, "--format", "nccl-conf", "-o", str(root / "etc/nccl.conf")).returncode == 0
    _, findings, _ = _doctor(root)
    assert not [
        (f["id"], f["message"]) for f in findings if f["id"].startswith("doctor-env") and f["severity"] != "info"
    ]


def test_fleet_report_gid_index_is_the_one_jobs_get(tmp_path):
    results = tmp_path / "fleet"
    results.mkdir()
    for i in (1, 2, 3):
        root = _copy(PCIE, tmp_path / f"gpu0{i}")
        assert _env(root).returncode == 0
        if i == 3:  # a hand edit: the file jobs source pins another index than the plan
            (root / ENV).write_text((root / ENV).read_text().replace("NCCL_IB_GID_INDEX='3'", "NCCL_IB_GID_INDEX='5'"))
        _, _, out = _doctor(root, "-v")
        (results / f"gpu0{i}.json").write_text(json.dumps(out))
    code, report = rocetune_json("fleet", "report", str(results))
    fact = report["data"]["facts"]["gid_index"]
    assert code == 1 and fact["reference"] == [3] and fact["values"]["gpu03"]["value"] == [5], fact


@pytest.mark.parametrize(("release", "fails"), [("2.28.9", True), ("2.30.7", False)])
def test_an_empty_port_is_port_0_before_2_30_7_and_any_port_from_it(tmp_path, release, fails):
    """`mlx5_0:` in NCCL_IB_HCA: NCCL before 2.30.7 reads the empty port with atoi, port 0, which no
    port has (v2.30.4-1 src/misc/utils.cc:212), so the device is silently left out; from 2.30.7 it
    is any port (v2.30.7-1 src/misc/utils.cc:203-204). The jobs' release comes from the node settings."""
    root = _copy(DGX, tmp_path / "root", settings=f"nccl_version: \"{release}\"\n")
    assert _env(root).returncode == 0
    env = (root / ENV).read_text()
    hca = re.search(r"NCCL_IB_HCA='?=?([^'\n]*)", env).group(1)
    emptied = ",".join(entry.split(":")[0] + ":" for entry in hca.split(","))
    (root / ENV).write_text(env.replace(hca, emptied))
    _, findings, _ = _doctor(root)
    missing = [f for f in _failures(findings) if f[0] == "doctor-env-names-missing-device"]
    assert bool(missing) is fails, findings
