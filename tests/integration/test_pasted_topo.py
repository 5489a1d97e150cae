"""A root holding only a pasted `nvidia-smi topo -m` whose legend names the NICs: NCCL_IB_HCA
from the GPU-near devices (PIX/PXB to some GPU), front-end and storage NICs (no GPU at PIX/PXB)
left out, device names without ports, and the env marked UNVERIFIED. The outputs are real
(tests/fixtures/corpus, provenance in SOURCES.md); the expected sets are the "Expect:" lines of
the research corpus's SOURCES.md for those machines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.clirun import rocetune, rocetune_json

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def pasted_topo(tmp_path: Path, corpus_dir: str) -> str:
    root = tmp_path / corpus_dir
    (root / "commands").mkdir(parents=True)
    shutil.copy(CORPUS / corpus_dir / "topo.txt", root / "commands" / "nvidia-smi_topo_-m.txt")
    return str(root)


def mlx5(*numbers: int) -> str:
    return "=" + ",".join(f"mlx5_{n}" for n in numbers)


COMPUTE = {
    # OCI A100-v2: 16 compute ports PXB to a GPU pair; mlx5_0 and mlx5_13 SYS to every GPU.
    "oci-bm-gpu-a100-v2-8": mlx5(*range(1, 13), *range(14, 18)),
    # 16 RoCE ports PXB to a GPU pair; mlx5_bond_0 (the front-end bond) SYS to every GPU.
    "a100-8gpu-16x-roce-bond-frontend": mlx5(*range(2, 18)),
    # mlx5_ib0..7 PIX/PXB; the 25G mlx5_eth0..4 only NODE to GPU4-7.
    "hgx-h100-ib-mlx5ib-naming": "=" + ",".join(f"mlx5_ib{i}" for i in range(8)),
    # 4 of 8 GPUs in a container: two PIX NICs each; the others belong to GPUs not visible.
    "h800-4gpu-container-17nic": mlx5(4, 6, 7, 8, 13, 14, 15, 16),
}


@pytest.mark.parametrize("corpus_dir", sorted(COMPUTE))
def test_pasted_topo_plans_the_gpu_near_devices(tmp_path, corpus_dir):
    proc = rocetune("env", "--root", pasted_topo(tmp_path, corpus_dir))
    assert proc.returncode == 0, proc.stderr
    assert f"export NCCL_IB_HCA='{COMPUTE[corpus_dir]}'\n" in proc.stdout
    assert "# UNVERIFIED: planned from recorded tool output ('nvidia-smi topo -m') without sysfs" in proc.stdout
    # Link layer and ports unknown: nothing RoCE-specific, no UCX device:port list, no GDR verdict.
    for key in ("NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_QPS_PER_CONNECTION", "UCX_NET_DEVICES",
                "NCCL_IB_DISABLE"):
        assert key not in proc.stdout
    assert "gdr-unavailable" not in proc.stderr and "Traceback" not in proc.stderr


def test_the_chosen_devices_match_the_vendor_nccl_conf(tmp_path):
    # oci-hpc's /etc/nccl.conf for the same shape lists the same 16 devices (in its own order).
    conf = (CORPUS / "oci-bm-gpu-a100-v2-8" / "expert-nccl.conf").read_text()
    vendor = next(line.split("=", 1)[1] for line in conf.splitlines() if line.startswith("NCCL_IB_HCA="))
    code, out = rocetune_json("env", "--root", pasted_topo(tmp_path, "oci-bm-gpu-a100-v2-8"))
    assert code == 0
    plan = out["data"]["plan"]
    value = next(d["value"] for d in plan["decisions"] if d["key"] == "NCCL_IB_HCA")
    assert set(value.lstrip("=").split(",")) == set(vendor.lstrip("=").split(","))
    decision = next(d for d in plan["decisions"] if d["key"] == "NCCL_IB_HCA")
    excluded = {e["port"]: e["why"] for e in decision["evidence"]["excluded"]}
    assert set(excluded) == {"mlx5_0", "mlx5_13"} and "SYS" in excluded["mlx5_0"]
    notes = " ".join(n["message"] for n in plan["notes"])
    assert "without a port" in notes and "UCX_NET_DEVICES needs device:port" in notes


@pytest.mark.parametrize("corpus_dir", ["pcie-asus-esc8000a-e12-4xrtx6000ada-2xcx7",
                                        "pcie-puget-wrx90-2gpu-1xcx7", "pcie-4xa10-2nic-all-sys"])
def test_no_gpu_near_device_means_nothing_is_pinned(tmp_path, corpus_dir):
    # NODE/SYS to every GPU: compute and front-end NICs cannot be told apart from topo -m alone.
    code, out = rocetune_json("env", "--root", pasted_topo(tmp_path, corpus_dir))
    assert code == 0
    keys = {d["key"] for d in out["data"]["plan"]["decisions"]}
    assert not {"NCCL_IB_HCA", "NCCL_IB_DISABLE", "UCX_NET_DEVICES"} & keys
    notes = " ".join(n["message"] for n in out["data"]["plan"]["notes"])
    assert "none is PIX/PXB to a GPU" in notes and "cannot be told apart" in notes


def test_probe_lists_the_legend_devices_and_their_gpus(tmp_path):
    proc = rocetune("probe", "--root", pasted_topo(tmp_path, "hgx-h100-ib-mlx5ib-naming"))
    assert proc.returncode == 0, proc.stderr
    assert "13 RDMA device(s) named by nvidia-smi topo -m only (ports, state, link layer unknown)" in proc.stdout
    assert "GPU0 ? numa 0  nearest NIC PIX: mlx5_ib0" in proc.stdout
    assert "no-rdma-device" not in proc.stdout and "rdma-unknown" not in proc.stdout


def test_topo_lists_the_legend_devices_with_unknown_ports(tmp_path):
    proc = rocetune("topo", "--root", pasted_topo(tmp_path, "h800-4gpu-container-17nic"))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("mlx5_")]
    assert len(rows) == 17 and all(r[1:5] == ["?", "?", "?", "?"] for r in rows)
