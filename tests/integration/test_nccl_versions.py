"""The NCCL a job really loads: a PyTorch wheel's 2.19.3 beside the system's 2.28.3 gets the
2.19-only settings, explain names the library, --nccl-version plans for another release, and
the real H100 capture (which recorded only the system library) still plans for 2.28.3."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from rocetune.probe.parsers.ld_so_cache import build as build_cache

from tests.fixtures.hostspec import elf_shared_object
from tests.fixtures.roots import root_of
from tests.integration.clirun import rocetune, rocetune_json

SYS = "usr/lib/x86_64-linux-gnu"
WHEEL = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
ONLY_219 = ("NCCL_IB_GID_INDEX", "NCCL_IB_TIMEOUT")


def write(root, rel: str, data) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


@pytest.fixture(scope="module")
def torch22_host(tmp_path_factory):
    """pcie-4gpu-2nic (RoCE, no NCCL) with nvidia-peermem loaded, the system's NCCL 2.28.3 in
    ld.so.cache, and a torch 2.2 venv whose wheel carries NCCL 2.19.3."""
    root = str(tmp_path_factory.mktemp("torch22") / "root")
    shutil.copytree(root_of("pcie-4gpu-2nic"), root, symlinks=True)
    write(root, "sys/module/nvidia_peermem/version", "580.159.04\n")
    write(root, f"{SYS}/libnccl.so.2.28.3", elf_shared_object(b"NCCL version 2.28.3+cuda12.9"))
    os.symlink("libnccl.so.2.28.3", os.path.join(root, SYS, "libnccl.so.2"))
    write(root, "etc/ld.so.cache", build_cache([("libnccl.so.2", f"/{SYS}/libnccl.so.2")]))
    site = "opt/torch/.venv/lib/python3.12/site-packages"
    write(root, f"{site}/nvidia_nccl_cu12-2.19.3.dist-info/METADATA",
          "Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.19.3\n\n")
    write(root, f"{site}/nvidia/nccl/lib/libnccl.so.2", elf_shared_object(b"NCCL version 2.19.3+cuda12.3"))
    write(root, f"{site}/torch/version.py", "__version__ = '2.2.2+cu121'\n")
    return root


def env_of(*args) -> dict:
    proc = rocetune("env", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_torch_22_wheel_gets_the_219_settings_and_the_peermem_warning(torch22_host):
    env = env_of("--root", torch22_host)
    assert all(k in env for k in ONLY_219), env
    code, out = rocetune_json("probe", "--root", torch22_host)
    assert code == 0
    nccl = out["data"]["features"]["kernel"]["nccl"]
    assert (nccl["version"], nccl["path"], nccl["basis"]) == ("2.19.3", WHEEL, "lowest")
    found = {f["id"]: f for f in out["data"]["findings"]}
    assert WHEEL in found["nccl-versions-differ"]["message"]
    assert f"/{SYS}/libnccl.so.2.28.3" in found["nccl-versions-differ"]["message"]
    assert "NCCL 2.19.3" in found["gdr-not-detected"]["message"]
    human = rocetune("probe", "--root", torch22_host).stdout
    assert f"nccl planned for: NCCL 2.19.3 at {WHEEL}" in human
    assert f"  2.28.3 /{SYS}/libnccl.so.2.28.3\n" in human


def test_explain_names_the_library_a_decision_was_gated_on(torch22_host):
    proc = rocetune("explain", "--root", torch22_host, "NCCL_IB_TIMEOUT")
    assert proc.returncode == 0, proc.stderr
    assert f"gated on: NCCL 2.19.3 at {WHEEL} (wheel nvidia-nccl-cu12 2.19.3, from the 'NCCL version' string " \
           "inside it), the lowest of the 2 libraries found" in proc.stdout
    code, out = rocetune_json("explain", "--root", torch22_host, "NCCL_IB_TIMEOUT")
    assert out["data"]["gated_on"]["library"] == WHEEL


def test_nccl_version_plans_for_the_jobs_release(torch22_host):
    env = env_of("--root", torch22_host, "--nccl-version", "2.28.9")
    assert not any(k in env for k in ONLY_219), env
    proc = rocetune("explain", "--root", torch22_host, "--nccl-version", "2.21.5", "NCCL_IB_TIMEOUT")
    assert "gated on: NCCL 2.21.5 as declared by --nccl-version" in proc.stdout
    assert "gated on" not in rocetune("explain", "--root", torch22_host, "NCCL_IB_HCA").stdout
    bad = rocetune("env", "--root", torch22_host, "--nccl-version", "2.28")
    assert bad.returncode == 2 and "expected an NCCL release like 2.21.5" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_h100_capture_plans_for_its_system_library_and_says_the_wheel_was_not_seen():
    code, out = rocetune_json("probe", "--root", root_of("h100-firecracker-vm"))
    assert code == 0
    nccl = out["data"]["features"]["kernel"]["nccl"]
    assert (nccl["version"], nccl["basis"]) == ("2.28.3", "single")
    assert [lib["path"] for lib in nccl["libraries"]] == ["/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"]
    found = {f["id"]: f for f in out["data"]["findings"]}
    msg = found["nccl-wheel-not-seen"]["message"]
    assert "none found under this root" in msg and "capture did not record it" in msg
