"""doctor --nccl-log through the CLI: what NCCL used comes first, then the differences, held to
what the plan knows beyond its env (the release it was made for, whether it expects GPUDirect
RDMA). Logs: tests/fixtures/nccl-logs (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.clirun import rocetune, rocetune_json

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl-logs"


def test_the_text_starts_with_what_nccl_used_then_the_differences():
    proc = rocetune("--root", str(HOSTS / "dgx-h100-rails-dmabuf"), "doctor", "--no-counters", "--nccl-log",
                    str(LOGS / "nccl-1412-ib-connections-no-gdrdma.log"))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("NCCL used (") and "this reader reads NCCL 2.6 to 2.31" in lines[0]
    assert "  GDR per pair GPU 4/NET 3 off, GPU 5/NET 3 off" in lines
    first_finding = next(i for i, ln in enumerate(lines) if ln.startswith(("FAIL", "WARN")))
    assert all(not ln.startswith(("FAIL", "WARN")) for ln in lines[:first_finding])
    assert lines[first_finding].startswith("FAIL  nccl-log-gdr-off")  # the plan expects GDR (DMA-BUF, PIX pairs)


def test_the_release_the_job_ran_is_held_to_the_plan_s():
    code, out = rocetune_json("--root", str(HOSTS / "dgx-h100-roce"), "doctor", "--no-counters", "--nccl-log",
                              str(LOGS / "nccl-1646-2.25.1-version-info.log"))
    found = {f["id"]: f for f in out["data"]["findings"]}
    assert "the job ran NCCL 2.25.1+cuda12.2; the plan was made for 2.21.5" in \
        found["nccl-log-version-differs"]["message"]
    assert out["data"]["nccl_log"]["used"][0].startswith("NCCL used (")
    assert out["data"]["nccl_log"]["reads"] == "NCCL 2.6 to 2.31"
