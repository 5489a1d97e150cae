"""rocetune doctor as Slurm's gate, on a real Slurm: Debian's slurmctld and one slurmd per lab host
(python3 -m lab.slurm), with `rocetune doctor --gate health-check` as HealthCheckProgram and
`--gate prolog` as Prolog.

Each host runs rocetune against a host root of its own (a copy of a real 8-rail H100 RoCE
fixture host under /var/tmp, which each lab host sees and writes into its own overlay): the lab
has no RDMA, so the rails are the fixture's, while Slurm, its drains, the health-check runs and the prologs are real. The fixture
host has one warning (GPUDirect not detected by its NCCL), so every node also shows that
warnings never drain.

- The health check and the prolog are examples/slurm's wrappers as shipped (counters and kernel
  log on), only the path of rocetune pointed at this checkout; each host's root carries a
  /proc/uptime and an old firmware fault in its kernel log, outside the window.
- node02's rail enp64s0np0 is at MTU 1500: drained by its health check with rocetune's reason
  (sinfo -R), while the others stay idle and run a job; the rail is repaired and the node is
  resumed by the next health check.
- node03 is drained by an operator: rocetune never resumes a drain that is not its own.
- node04's rocetune is broken (its root does not exist): no drain, slurmd logs the tool error,
  and its prolog lets jobs run.
- Prologs: a failing node's prolog drains it (Slurm's "Prolog error") with rocetune's line in
  slurmd's log; and plain `rocetune doctor` as a prolog drains a node that has only warnings
  (exit 5): Slurm drains on any non-zero prolog exit.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from lab import netns, slurm

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
# Not in the checkout: a checkout under /tmp is read-only inside the lab hosts (lab/netns.py), and
# the health check keeps its counter window in the host's root.
ROOTS = Path("/var/tmp/rocetune-lab-slurm-gate")
RAIL_MTU = "sys/class/net/enp64s0np0/mtu"  # mlx5_3's netdev, one of the 8 rails
INTERVAL = 3  # HealthCheckInterval (s)
HC, PROLOG = "/etc/rocetune-lab/health-check", "/etc/rocetune-lab/prolog"
ROCETUNE = f"PYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune"


def script(body: str) -> str:
    # slurmd gives a HealthCheckProgram no PATH at all, and a Prolog its own small environment
    return f"#!/bin/sh\n{body}\n"


def gate(mode: str, root: Path, *extra: str) -> str:
    return script(f"{ROCETUNE} doctor --gate {mode} --root {root} --no-counters --timeout 20 {' '.join(extra)}")


EXAMPLES = REPO / "examples" / "slurm"
SHIM = "/etc/rocetune-lab/rocetune"  # stands in for /usr/local/bin/rocetune, inside each lab host


def shipped(name: str) -> str:
    """An examples/slurm wrapper as shipped -- its options, its PATH, counters and kernel log on --
    with only the path of the rocetune it runs pointed at this checkout's (through SHIM)."""
    text = (EXAMPLES / name).read_text()
    assert "exec /usr/local/bin/rocetune doctor --gate " in text
    return text.replace("/usr/local/bin/rocetune", SHIM)


def shim(root: Path) -> str:
    # the host's root and this checkout's rocetune; everything else comes from the wrapper
    return script(f"ROCETUNE_ROOT={root} {ROCETUNE} \"$@\"")


# An old firmware health fault on a rail (mlx5_3, 0000:40:00.0), two days before the host's
# /proc/uptime: outside the kernel log's window, so it drains nothing.
UPTIME_S = 3 * 86400
OLD_FAULT = ("[ 86400.000001] mlx5_core 0000:40:00.0: poll_health:801:(pid 0): device's health compromised - "
             "reached miss count\n")


def set_mtu(root: Path, mtu: int) -> None:
    (root / RAIL_MTU).write_text(f"{mtu}\n")


@pytest.fixture(scope="module")
def cluster(lab4):
    shutil.rmtree(ROOTS, ignore_errors=True)
    roots = {}
    for host in lab4.names:
        roots[host] = ROOTS / host
        shutil.copytree(FIXTURE, roots[host], symlinks=True)
        (roots[host] / "proc/uptime").write_text(f"{UPTIME_S} 1.0\n")
        (roots[host] / "commands/dmesg_--kernel.txt").write_text(OLD_FAULT)
    set_mtu(roots["node02"], 1500)
    for host in lab4.names:
        root = roots[host] if host != "node04" else ROOTS / "no-such-root"
        slurm.write_file(host, SHIM, shim(root), 0o755)
        slurm.write_file(host, HC, shipped("rocetune-health-check"), 0o755)
        slurm.write_file(host, PROLOG, shipped("rocetune-prolog"), 0o755)
    started = time.monotonic()
    c = slurm.start(lab4, health_check=HC, health_check_interval=INTERVAL, prolog=PROLOG)
    print(f"slurm up in {time.monotonic() - started:.1f}s")
    try:
        yield c, roots
    finally:
        slurm.stop()
        shutil.rmtree(ROOTS, ignore_errors=True)


def drained_by_rocetune(node: str):
    return lambda s: "drain" in s[node]["state"] and s[node]["reason"].startswith("rocetune:")


def test_health_check_drains_the_broken_rail_and_resumes_it_once_repaired(cluster):
    c, roots = cluster
    # slurmd runs its health check when it starts, before it registers: node02 comes up drained
    states = c.wait("node02 drained by its health check", drained_by_rocetune("node02"), timeout=30)
    reason = states["node02"]["reason"]
    assert reason.startswith("rocetune: enp64s0np0 doctor-rail-mtu-mismatch: enp64s0np0 has MTU 1500"), reason
    assert len(reason) <= 200 and "\n" not in reason
    # the shipped health check that drained node02 ran with the counters on: it kept their window;
    # and the old fault outside the kernel log's window is not in the reason, nor drains the others
    # (each lab host writes into its own overlay: the file is looked for from inside the host)
    window = roots["node02"] / "var/lib/rocetune/counters.json"
    assert netns.run_on("node02", f"grep -c rocetune-nic-counter-window {window}").stdout.strip() == "1"
    assert "doctor-kernel-nic-health" not in reason
    assert states["node01"]["state"] == "idle" and states["node04"]["state"] == "idle", states
    sinfo_r = c.run(["sinfo", "-R", "--noheader", "--format", "%n|%E"]).stdout
    assert "node02|rocetune: enp64s0np0 doctor-rail-mtu-mismatch: " in sinfo_r, sinfo_r

    # an operator's drain is not rocetune's to undo
    c.run(["scontrol", "update", "NodeName=node03", "State=DRAIN", "Reason=maintenance: fan swap"])

    # the good hosts run a job (their prologs pass: warnings do not drain, a broken tool does not
    # either); the drained one is not given it
    job = c.srun(["-N2", "--immediate=30", "hostname"])
    assert sorted(job.stdout.split()) == ["node01", "node04"], job.stdout + job.stderr
    refused = c.srun(["-N1", "-w", "node02", "--immediate=3", "true"], check=False)
    assert refused.returncode != 0
    # a job launched from inside a node, as a user's sbatch script would (the harness's promise)
    inside = netns.run_on("node01", "srun -N2 -l --immediate=30 hostname")
    assert sorted(line.split(": ")[1] for line in inside.stdout.split("\n") if line) == ["node01", "node04"]

    # node04's rocetune cannot run: not drained, and slurmd says why
    log04 = c.slurmd_log("node04")
    assert "health_check failed: rc:3" in log04 and "TOOL ERROR, node not judged" in log04, log04[-2000:]
    c.wait("node04 idle once the jobs completed", lambda s: s["node04"]["state"] == "idle", timeout=30)

    set_mtu(roots["node02"], 9000)
    repaired = time.monotonic()
    states = c.wait("node02 resumed after the repair", lambda s: s["node02"]["state"] == "idle", timeout=8 * INTERVAL)
    print(f"node02 resumed {time.monotonic() - repaired:.1f}s after the repair")
    assert states["node02"]["reason"] == ""
    time.sleep(2 * INTERVAL)  # node03's own health checks found it healthy, and left it drained
    node03 = c.node("node03")
    assert "drain" in node03["state"] and node03["reason"] == "maintenance: fan swap", node03
    job = c.srun(["-w", "node02", "--immediate=30", "hostname"])
    assert job.stdout.strip() == "node02"


def test_a_prolog_drains_only_for_a_failure_and_any_non_zero_exit_drains(cluster):
    c, roots = cluster
    c.run(["scontrol", "update", "NodeName=node03", "State=RESUME"])
    c.wait("node01 and node03 idle", lambda s: s["node01"]["state"] == s["node03"]["state"] == "idle", timeout=30)
    # node01's health check stands aside (judges, drains nothing), so its prolog meets the broken rail
    slurm.write_file("node01", HC, gate("health-check", roots["node01"], "--no-drain"), 0o755)
    time.sleep(INTERVAL)
    set_mtu(roots["node01"], 1500)
    failed = c.srun(["-N1", "-w", "node01", "--immediate=30", "true"], check=False)
    assert failed.returncode != 0
    states = c.wait("node01 drained by its prolog", lambda s: "drain" in s["node01"]["state"], timeout=30)
    assert states["node01"]["reason"] == "Prolog error", states["node01"]
    log01 = c.slurmd_log("node01")
    assert "prolog failed: rc:1 output:rocetune: FAIL node01: enp64s0np0 doctor-rail-mtu-mismatch" in log01, \
        log01[-2000:]

    # the old advice: `rocetune doctor` itself as a prolog exits 5 on a node with warnings only,
    # and Slurm drains it for that
    slurm.write_file("node03", PROLOG, script(f"{ROCETUNE} doctor --root {roots['node03']} --no-counters"), 0o755)
    failed = c.srun(["-N1", "-w", "node03", "--immediate=30", "true"], check=False)
    assert failed.returncode != 0
    states = c.wait("node03 drained by plain doctor", lambda s: "drain" in s["node03"]["state"], timeout=30)
    assert states["node03"]["reason"] == "Prolog error"
    assert "prolog failed: rc:5" in c.slurmd_log("node03")
