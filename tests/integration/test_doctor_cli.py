"""`rocetune doctor` on host roots: every fixture host gives a result (never a traceback), and
a node tuned by the roles' files is clean; each thing broken on a copy of the root is found
with its fix, and the exit code tells a prolog failure (1), warnings (5) and clean (0) apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune, rocetune_json

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
ROLES_FILES = {  # what the rdma_core role writes (plugins/module_utils/rdma_core_node_state.py)
    "etc/security/limits.d/90-rocetune-memlock.conf": "*    soft    memlock    unlimited\n*    hard    memlock    unlimited\n",
    "etc/systemd/system.conf.d/90-rocetune-memlock.conf": "[Manager]\nDefaultLimitMEMLOCK=infinity\n",
    "etc/systemd/system.conf": "[Manager]\n",
    "etc/security/limits.conf": "# /etc/security/limits.conf\n",
}


@pytest.mark.parametrize("host", sorted(p.name for p in HOSTS.iterdir() if p.is_dir()))
def test_every_fixture_host_gets_a_report(host):
    proc = rocetune("--root", str(HOSTS / host), "doctor")
    assert no_traceback(proc) and proc.returncode in (0, 1, 5), proc.stderr
    assert f"failure(s)" in proc.stdout.splitlines()[-1]


@pytest.fixture
def tuned(tmp_path):
    """dgx-h100-roce with the rdma_core role's memlock files, its env written by rocetune env."""
    root = tmp_path / "root"
    shutil.copytree(HOSTS / "dgx-h100-roce", root, symlinks=True)
    for rel, text in ROLES_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "etc/rocetune").mkdir(parents=True, exist_ok=True)
    rocetune("--root", str(root), "-q", "env", "--env-dir", str(root / "etc/rocetune"),
             "--format", "sh", "-o", str(root / "etc/rocetune/nccl.env"), check=True)
    return root


def doctor(root, *args):
    code, out = rocetune_json("--root", str(root), "doctor", *args)
    return code, {(f["id"], f["subject"]): f for f in out["data"]["findings"]}, out


def test_a_tuned_node_has_no_failure_and_only_the_nccl_warning(tuned):
    code, found, out = doctor(tuned)
    assert out["status"] == "warning" and code == 5
    assert [k for k, f in found.items() if f["severity"] != "info"] == [("gdr-not-detected", "nccl")]


def test_env_edited_by_hand_and_memlock_lost_are_found_with_their_fixes(tuned):
    env_file = tuned / "etc/rocetune/nccl.env"
    env_file.write_text(env_file.read_text().replace("NCCL_IB_TIMEOUT='20'", "NCCL_IB_TIMEOUT='14'"))
    (tuned / "etc/systemd/system.conf.d/90-rocetune-memlock.conf").unlink()
    code, found, _ = doctor(tuned)
    drift = found[("doctor-env-drift", "/etc/rocetune/nccl.env")]
    assert drift["severity"] == "warning" and drift["message"].endswith("NCCL_IB_TIMEOUT 14 -> 20")
    assert "rocetune env -o" in drift["fix"]
    assert found[("doctor-memlock-services", "host")]["severity"] == "warning"
    proc = rocetune("--root", str(tuned), "doctor")
    assert proc.returncode == 5 and "fix: DefaultLimitMEMLOCK=infinity" in proc.stdout


def test_a_failed_boot_unit_recorded_by_systemctl_is_a_failure(tuned):
    (tuned / "etc/systemd/system").mkdir(parents=True, exist_ok=True)
    (tuned / "etc/systemd/system/rocetune-qos.service").write_text("[Service]\n")
    recorded = tuned / "commands" / "systemctl_show_rocetune-qos.service_-p_Id,LoadState,ActiveState,Result,ExecMainStatus.txt"
    recorded.write_text("Id=rocetune-qos.service\nLoadState=loaded\nActiveState=failed\nResult=exit-code\n"
                        "ExecMainStatus=1\n")
    code, found, out = doctor(tuned)
    assert code == 1 and out["status"] == "findings"
    assert found[("doctor-boot-unit-failed", "rocetune-qos.service")]["severity"] == "error"
    text = rocetune("--root", str(tuned), "doctor").stdout
    assert text.splitlines()[0].startswith("FAIL  doctor-boot-unit-failed")  # failures first


def test_a_root_with_nothing_to_read_is_an_input_error(tmp_path):
    proc = rocetune("--root", str(tmp_path), "doctor")
    assert proc.returncode == 3 and no_traceback(proc)
