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
    # both about the NCCL release the node plans for (2.21.5): its peer-memory check and its ECE exchange
    assert sorted(k for k, f in found.items() if f["severity"] != "info") == [
        ("gdr-not-detected", "nccl"), ("nccl-ece-roce", "NCCL_IB_ECE_ENABLE")]


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


LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl-logs"


def test_nccl_log_of_another_host_differs_from_this_hosts_plan():
    """A real Soft-RoCE job's log (rxe0 on eth0) read against the softroce-3nic plan (rails rxe1,
    rxe2 on ens4/ens5, ens3 for sockets): NCCL used a device the plan excludes and got other values."""
    code, found, out = doctor(HOSTS / "softroce-3nic", "--nccl-log", str(LOGS / "rxe-2.20.5-ring2_node0.log"))
    assert code == 1
    assert {k for k, f in found.items() if f["severity"] == "error"} == {
        ("nccl-log-device-excluded", "rxe0:1"), ("nccl-log-var-differs", "NCCL_IB_HCA"),
        ("nccl-log-var-differs", "NCCL_SOCKET_IFNAME")}
    assert found[("nccl-log-gdr-disabled", "rxe0")]["severity"] == "warning"
    assert "NET/IB : Using [0]rxe0:1/RoCE" in found[("nccl-log-device-excluded", "rxe0:1")]["message"]
    assert out["data"]["nccl_log"]["versions"] == ["2.20.5+cuda12.4"]


def test_nccl_log_with_socket_fallback_is_a_failure():
    code, found, _ = doctor(HOSTS / "dgx-h100-roce", "--nccl-log", str(LOGS / "nccl-1267-2.19.3-ib-no-device-socket.log"))
    assert code == 1 and found[("nccl-log-socket-fallback", "network")]["severity"] == "error"


def test_a_file_that_is_not_an_nccl_log_is_an_input_error(tmp_path):
    (tmp_path / "x.log").write_text("hello\nworld\n")
    proc = rocetune("--root", str(HOSTS / "dgx-h100-roce"), "doctor", "--nccl-log", str(tmp_path / "x.log"))
    assert proc.returncode == 3 and no_traceback(proc) and "NCCL" in proc.stderr


def test_save_baseline_then_the_next_run_judges_against_it(tuned):
    code, _, out = doctor(tuned, "--save-baseline")
    saved = tuned / "var/lib/rocetune/counters.json"
    assert out["data"]["counters"]["saved"] == str(saved) and saved.is_file()
    assert out["data"]["counters"]["baseline"] is None
    code, _, out = doctor(tuned)
    assert out["data"]["counters"]["baseline"] == str(saved)
    saved.write_text("{not json")
    proc = rocetune("--root", str(tuned), "doctor")
    assert proc.returncode == 3 and no_traceback(proc) and "remove" in proc.stderr
