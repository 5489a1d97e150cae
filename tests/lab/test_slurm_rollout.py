"""site.yml's Slurm hooks as shipped (playbooks/hooks/slurm_drain.yml, slurm_resume.yml) on the
four-host lab with a real Slurm (lab/slurm.py: Debian's slurmctld 22.05, one slurmd per host;
ReturnToService=1, so an operator's DOWN stays DOWN) and
rocetune's health gate running as HealthCheckProgram every few seconds the whole time.

- A running job is waited for before its node changes (the job reads MTU 1500 at its end); an
  operator's DRAIN and an operator's DOWN keep their state and reason, and every node is tuned.
- `--tags roce_net` drains too; a rerun with nothing to change drains nothing.
- `--check` never waits on Slurm and changes nothing there.
- A drain timeout fails that node, leaves it drained by the rollout with a reason that says so,
  and a later run resumes it once it is tuned and passes its check.
- The health gate, running during a batch, never resumes the rollout's drain.

The hosts have no RDMA: the checks (the gate and the resume hook's doctor) read a copy of a real
8-rail H100 RoCE fixture host, which passes with warnings. The tests run in order on one set of
hosts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lab import fabric_net, netns, slurm
from lab.playbooks import run_playbook

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
ROOT = REPO / "artifacts" / "slurm-rollout-root"
FABRIC_IF = fabric_net.FABRIC_IF
ROCETUNE = f"PYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune"
HC, DOCTOR = "/etc/rocetune-lab/health-check", "/etc/rocetune-lab/doctor"
INTERVAL = 3
HOOKS = {
    "rocetune_batch_pre_tasks": "hooks/slurm_drain.yml",
    "rocetune_batch_post_tasks": "hooks/slurm_resume.yml",
    "rocetune_doctor_command": DOCTOR,
}
ADMIN_DRAIN = "admin: GPU3 XID 79, RMA pending"
ADMIN_DOWN = "admin: PSU failure"


@pytest.fixture(scope="module")
def cluster(lab4, tmp_path_factory):
    netns.up(len(lab4.names))
    fabric_net.add(lab4)
    inv = tmp_path_factory.mktemp("slurm-rollout") / "fabric.yml"
    inv.write_text(fabric_net.inventory_text())
    shutil.rmtree(ROOT, ignore_errors=True)
    shutil.copytree(FIXTURE, ROOT, symlinks=True)
    for host in lab4.names:
        slurm.write_file(
            host,
            HC,
            f"#!/bin/sh\n{ROCETUNE} doctor --gate health-check --root {ROOT} --no-counters --timeout 20\n",
            0o755,
        )
        slurm.write_file(host, DOCTOR, f'#!/bin/sh\n{ROCETUNE} "$@" --root {ROOT}\n', 0o755)
    c = slurm.start(lab4, health_check=HC, health_check_interval=INTERVAL, return_to_service=1)
    try:
        yield c, inv
    finally:
        slurm.stop()
        fabric_net.remove(lab4)
        shutil.rmtree(ROOT, ignore_errors=True)
        # the plays above restart services on the hosts: the next module gets the session's lab
        # afresh, as this one took it (netns.up rebuilds a lab that is up)
        netns.up(len(lab4.names))


def play(lab4, cluster, tmp_path, *args, **extra):
    _, inv = cluster
    return run_playbook(
        lab4.inventory, tmp_path, *args, "-e", json.dumps(dict(HOOKS, **extra)), extra_inventories=[inv]
    )


def mtu(host: str) -> int:
    return int(netns.run_on(host, f"cat /sys/class/net/{FABRIC_IF}/mtu").stdout)


def job(c, node: str, seconds: int) -> subprocess.Popen:
    """A job on `node` that prints the fabric MTU it sees at its end (stdout; srun's own notes,
    e.g. a node that did not answer for a moment on a loaded machine, go to stderr); returned
    once it runs."""
    proc = subprocess.Popen(
        [
            "srun",
            "--partition",
            slurm.PARTITION,
            "-w",
            node,
            "sh",
            "-c",
            f"sleep {seconds}; cat /sys/class/net/{FABRIC_IF}/mtu",
        ],
        env=c.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    c.wait(f"the job on {node} running", lambda s: s[node]["state"].rstrip("*") in ("allocated", "mixed"), timeout=60)
    return proc


def idle(node: dict) -> bool:
    """In service without a job (a `*`, not responding for a moment on a loaded machine, aside)."""
    return node["state"].rstrip("*") == "idle"


def drains_logged(c) -> list:
    """The reasons slurmctld logged as set, in order."""
    text = c.controller_log.read_text(errors="replace")
    return [line.split("reason set to: ", 1)[1].strip() for line in text.splitlines() if "reason set to: " in line]


class Watch:
    """Polls Slurm in the background: every state seen per node."""

    def __init__(self, c):
        self.c, self.seen, self._stop = c, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.seen.append(self.c.nodes_state())
            except (slurm.SlurmError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.5)

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        return self.seen


def test_jobs_are_waited_for_and_an_operators_drain_and_down_are_left_alone(lab4, cluster, tmp_path):
    c, _ = cluster
    c.run(["scontrol", "update", "NodeName=node02", "State=DRAIN", f"Reason={ADMIN_DRAIN}"])
    c.run(["scontrol", "update", "NodeName=node03", "State=DOWN", f"Reason={ADMIN_DOWN}"])
    running = job(c, "node01", 15)
    watch = Watch(c)
    result = play(lab4, cluster, tmp_path, rocetune_serial=[1, "100%"])
    seen = watch.stop()
    out, _ = running.communicate(timeout=60)
    assert result.rc == 0, result.explain()
    assert running.returncode == 0 and out.strip() == "1500", out  # the job ran to its end, untouched
    assert all(mtu(h) == 9000 for h in lab4.names)
    # node01 was drained while its job ran, and the health gate (every 3 s) never lifted it
    draining = [s["node01"] for s in seen if "drain" in s["node01"]["state"]]
    assert draining and all(s["reason"].startswith("rocetune-rollout: ") for s in draining), draining
    first = next(i for i, s in enumerate(seen) if "drain" in s["node01"]["state"])
    last = max(i for i, s in enumerate(seen) if "drain" in s["node01"]["state"])
    assert all("drain" in s["node01"]["state"] for s in seen[first : last + 1]), seen[first : last + 1]
    states = c.nodes_state()
    assert idle(states["node01"]) and idle(states["node04"]), states
    assert "drain" in states["node02"]["state"] and states["node02"]["reason"] == ADMIN_DRAIN, states
    assert states["node03"]["state"].startswith("down") and states["node03"]["reason"] == ADMIN_DOWN, states
    assert not any(r.startswith("rocetune:") for r in drains_logged(c))  # the gate drained nothing


def test_tags_drain_too_and_a_rerun_with_nothing_to_change_drains_nothing(lab4, cluster, tmp_path):
    c, _ = cluster
    netns.run_on("node04", f"ip link set {FABRIC_IF} mtu 1500")
    before = len(drains_logged(c))
    running = job(c, "node04", 8)
    result = play(lab4, cluster, tmp_path, "--tags", "roce_net")
    out, _ = running.communicate(timeout=60)
    assert result.rc == 0, result.explain()
    assert out.strip() == "1500" and mtu("node04") == 9000, out
    assert drains_logged(c)[before:] == ["rocetune-rollout: fabric tuning"], drains_logged(c)[before:]
    assert idle(c.node("node04"))

    before = len(drains_logged(c))
    again = play(lab4, cluster, tmp_path)
    assert again.rc == 0 and again.total("changed") == 0, again.explain()
    assert drains_logged(c)[before:] == []
    assert c.node("node02")["reason"] == ADMIN_DRAIN and c.node("node03")["reason"] == ADMIN_DOWN


def test_check_mode_never_waits_and_changes_nothing_in_slurm(lab4, cluster, tmp_path):
    c, _ = cluster
    netns.run_on("node01", f"ip link set {FABRIC_IF} mtu 1500")
    before = len(drains_logged(c))
    running = job(c, "node01", 300)
    try:
        started = time.monotonic()
        result = play(lab4, cluster, tmp_path, "--check", rocetune_slurm_drain_timeout=240)
        took = time.monotonic() - started
        assert result.rc == 0, result.explain()
        assert took < 200, took  # it did not wait for the job
        assert drains_logged(c)[before:] == [] and c.node("node01")["state"].rstrip("*") in ("allocated", "mixed")
        assert mtu("node01") == 1500
    finally:
        c.run(["scancel", "--partition", slurm.PARTITION, "--nodelist", "node01"], check=False)
        running.wait(timeout=60)
    c.wait("node01 idle", lambda s: idle(s["node01"]), timeout=30)


def test_a_drain_timeout_fails_the_node_and_leaves_it_to_the_operator(lab4, cluster, tmp_path):
    c, _ = cluster
    running = job(c, "node01", 300)  # node01 is still at MTU 1500
    try:
        result = play(lab4, cluster, tmp_path, rocetune_slurm_drain_timeout=5)
        assert result.rc != 0 and result.recap["node01"]["failed"] == 1, result.explain()
        assert "jobs still running after 5s" in " ".join(result.output.split()), result.explain()
        node01 = c.node("node01")
        assert "drain" in node01["state"], node01
        assert node01["reason"].startswith("rocetune-rollout: not tuned: jobs still ran after 5s"), node01
        assert mtu("node01") == 1500 and running.poll() is None  # not changed; its job runs on
    finally:
        c.run(["scancel", "--partition", slurm.PARTITION, "--nodelist", "node01"], check=False)
        running.wait(timeout=60)
    # The operator let the job end; the next run takes its own drain back once node01 is tuned.
    time.sleep(2 * INTERVAL)  # the health gate ran meanwhile: the rollout's drain is not its own
    assert "drain" in c.node("node01")["state"]
    again = play(lab4, cluster, tmp_path)
    assert again.rc == 0, again.explain()
    assert mtu("node01") == 9000 and idle(c.node("node01")) and c.node("node01")["reason"] == ""
    assert c.node("node02")["reason"] == ADMIN_DRAIN and c.node("node03")["reason"] == ADMIN_DOWN
