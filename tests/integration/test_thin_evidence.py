"""Fail safe on thin evidence: a root with nothing to read is an input error, NIC columns without
a legend mean "cannot tell", and pasted tool outputs give advice marked unverified -- never a
silent NCCL_IB_DISABLE=1 on what may be a RoCE cluster. Roots are built from real outputs
(tests/fixtures/corpus, provenance in SOURCES-fixtures.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from rocetune.errors import ExitCode
from tests.integration.clirun import rocetune

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def pasted(tmp_path: Path, **outputs: str) -> str:
    root = tmp_path / "pasted"
    (root / "commands").mkdir(parents=True)
    for name, source in outputs.items():
        shutil.copy(CORPUS / source, root / "commands" / f"{name}.txt")
    return str(root)


def test_an_empty_or_mistyped_root_is_an_input_error(tmp_path):
    for root in (tmp_path, tmp_path / "typo"):
        proc = rocetune("env", "--root", str(root))
        assert proc.returncode in (ExitCode.INPUT,), proc.stderr
        assert proc.stdout == "" and len(proc.stderr.splitlines()) <= 2 and "Traceback" not in proc.stderr


def test_nic_columns_without_a_legend_mean_cannot_tell(tmp_path):
    root = pasted(tmp_path, **{"nvidia-smi_topo_-m": "h20-8gpu-cx6lx-2port-only/topo.txt"})
    proc = rocetune("env", "--root", root)
    assert proc.returncode == 0, proc.stderr
    assert "NCCL_IB_DISABLE" not in proc.stdout
    assert "cannot tell whether this host has RDMA" in proc.stderr
    assert len(proc.stderr.splitlines()) == len(set(proc.stderr.splitlines())), "a warning printed twice"


def test_pasted_topo_and_ibstat_give_unverified_advice(tmp_path):
    root = pasted(tmp_path, **{"nvidia-smi_topo_-m": "h20-8gpu-cx6lx-2port-only/topo.txt",
                               "ibstat": "h20-8gpu-cx6lx-2port-only/ibstat.txt"})
    proc = rocetune("env", "--root", root)
    assert proc.returncode == 0, proc.stderr
    assert "# UNVERIFIED: planned from recorded tool output ('ibstat')" in proc.stdout
    # Both ports are Down in the recording: NCCL falls back by itself, nothing is pinned.
    assert "NCCL_IB_DISABLE" not in proc.stdout and "not pinned" in proc.stderr


def test_pasted_ibv_devinfo_plans_its_active_ports(tmp_path):
    root = pasted(tmp_path, **{"ibv_devinfo_-v": "ibv_devinfo-softroce-rxe-verbose/ibv_devinfo-v.txt"})
    proc = rocetune("env", "--root", root)
    assert proc.returncode == 0, proc.stderr
    assert "# UNVERIFIED" in proc.stdout and "export NCCL_IB_HCA='=rxe" in proc.stdout


def test_a_container_without_gid_types_says_so_once(tmp_path):
    host = Path(__file__).resolve().parents[1] / "fixtures" / "hosts" / "container-partial-gid"
    proc = rocetune("probe", "--root", str(host))
    lines = [ln for ln in proc.stderr.splitlines() if "GID" in ln]
    assert len(lines) == 1 and "unreadable" in lines[0], proc.stderr


def test_an_sriov_host_prints_a_screenful():
    host = Path(__file__).resolve().parents[1] / "fixtures" / "hosts" / "sriov-k8s-522"
    proc = rocetune("probe", "--root", str(host))
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) + len(proc.stderr.splitlines()) <= 50
    assert "SR-IOV VFs" in proc.stdout
