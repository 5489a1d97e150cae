"""`doctor --write-expect` as an operator uses it, on copies of dgx-h100-rails-dmabuf: versions are
written as their series, so a new build of the kernel passes; a node that fails is refused unless
--force, which names what it left out; GPUDirect and link speed are minimums; an empty document
is no expectations, and the gate line says `[no expectations]`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune, rocetune_json

pytestmark = pytest.mark.slow  # several doctor runs on the 8-GPU fixture

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
HOST = HOSTS / "dgx-h100-rails-dmabuf"
MTU_RAIL = "enp79s0np0"  # mlx5_4's netdev


def _copy(dst: Path) -> Path:
    shutil.copytree(HOST, dst, symlinks=True)
    (dst / "etc/rocetune").mkdir(parents=True, exist_ok=True)
    return dst


def _doctor(root: Path, *extra: str):
    code, env = rocetune_json("--root", str(root), "doctor", "--no-counters", *extra)
    return code, env


def _kernel_release(root: Path) -> str:
    return (root / "proc/sys/kernel/osrelease").read_text().strip()


def test_versions_are_series_and_a_new_kernel_build_still_meets_them(tmp_path):
    root = _copy(tmp_path / "good")
    out = tmp_path / "expect.yml"
    code, env = _doctor(root, "--write-expect", str(out))
    assert code in (0, 5) and env["data"]["expect"]["written"] == str(out)
    text = out.read_text()
    release = _kernel_release(root)
    series = ".".join(release.split(".")[:2]) + ".*"
    assert f"kernel: {series}\n" in text and release not in text, text
    assert "gpudirect: any\n" in text and "speed_gbps:" in text
    # the kernel moves to the next build of its series (an ABI bump): still met
    bumped = _copy(tmp_path / "bumped")
    assert release == "6.8.0-1017-nvidia"
    (bumped / "proc/sys/kernel/osrelease").write_text("6.8.0-1018-nvidia\n")
    shutil.copy(out, bumped / "etc/rocetune/expect.yml")
    code, env = _doctor(bumped)
    assert env["data"]["expect"]["verdict"] == "met", env["data"]["expect"]["differences"]
    # gpudirect: none asks for nothing: a node with a route meets it
    (bumped / "etc/rocetune/expect.yml").write_text("gpudirect: none\n")
    assert _doctor(bumped)[1]["data"]["expect"]["verdict"] == "met"


def test_a_failing_node_is_refused_and_forced_names_what_it_left_out(tmp_path):
    root = _copy(tmp_path / "mtu")
    (root / f"sys/class/net/{MTU_RAIL}/mtu").write_text("1500\n")
    out = tmp_path / "expect.yml"
    proc = rocetune("--root", str(root), "doctor", "--no-counters", "--write-expect", str(out))
    assert proc.returncode == 1 and no_traceback(proc) and not out.exists()
    assert "expectations not written: this node fails (" in proc.stdout and "--force" in proc.stdout
    proc = rocetune("--root", str(root), "doctor", "--no-counters", "--write-expect", str(out), "--force")
    assert proc.returncode == 1 and out.is_file()
    assert "left out: rails.mtu (the rails differ: 1500, 9000)" in proc.stdout, proc.stdout
    text = out.read_text()
    assert "# Written with --force from a node that fails (" in text and "# Left out: rails.mtu" in text
    proc = rocetune("--root", str(root), "doctor", "--force")
    assert proc.returncode == 2 and "--force goes with --write-expect" in proc.stderr


def test_an_empty_document_is_no_expectations_and_the_gate_says_so(tmp_path):
    root = _copy(tmp_path / "empty")
    (root / "etc/rocetune/expect.yml").write_text("# nothing yet\n")
    code, env = _doctor(root)
    assert env["data"]["expect"]["verdict"] == "none"
    notes = [f for f in env["data"]["findings"] if f["id"] == "expect-unchecked"]
    assert notes and "declares no field: no expectations" in notes[0]["message"]
    proc = rocetune("--root", str(root), "doctor", "--no-counters", "--gate", "prolog")
    assert proc.stdout.rstrip().endswith("[no expectations]"), proc.stdout
    (root / "etc/rocetune/expect.yml").write_text("gpus:\n  count: 8\n")
    proc = rocetune("--root", str(root), "doctor", "--no-counters", "--gate", "prolog")
    assert "[no expectations]" not in proc.stdout, proc.stdout
