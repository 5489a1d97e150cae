"""site.yml as a rollout on the four-host lab with a fabric interface (rtf0): the collection as
built by tools/build_collection.py and installed from its tarball converges fresh nodes from a project that is not this repository, with
the installed collection read-only; the preflight refuses a broken QoS plan in check mode on
nodes without the QoS tools; batches with a canary stop at the canary's failure; the jumbo path
check under serial and --limit; the read-only verify tags; the node state in --diff.

The tests in this module run in order and share one set of lab hosts (reset at the start)."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from lab import fabric_net, netns
from lab.playbooks import REPO, ansible_env, parse_recap, run_playbook, tool

FABRIC_IF = fabric_net.FABRIC_IF
BROKEN_PLAN = "version: 1\ndata: {dscp: 99, priority: 3}\ncnp: {dscp: 48, prio: 6}\n"


@pytest.fixture(scope="module")
def fabric(lab4, tmp_path_factory):
    """Fresh lab hosts (their roots reset) with rtf0, and an inventory naming it."""
    netns.up(len(lab4.names))
    fabric_net.add(lab4)
    inv = tmp_path_factory.mktemp("rollout") / "fabric.yml"
    inv.write_text(fabric_net.inventory_text())
    try:
        yield lab4, inv
    finally:
        fabric_net.remove(lab4)


def play(fabric, tmp_path, *args, **kw):
    info, inv = fabric
    return run_playbook(info.inventory, tmp_path, *args, extra_inventories=[inv], **kw)


def mtu(run_on, host):
    return int(run_on(host, f"cat /sys/class/net/{FABRIC_IF}/mtu").stdout)


# ---------------------------------------------------------------------------------------------
# Before anything changes: the preflight


def test_a_broken_plan_is_refused_in_check_mode_on_nodes_without_the_qos_tools(fabric, run_on, tmp_path):
    bad = tmp_path / "site-qos.yml"
    bad.write_text(BROKEN_PLAN)
    extra = {"roce_qos_plan_src": str(bad), "roce_qos_manage_packages": True,
             "roce_qos_packages": ["rocetune-absent-qos-tool"]}  # the tools are missing on every node
    for mode in (("--check",), ()):
        result = play(fabric, tmp_path, *mode, "-e", json.dumps(extra))
        assert result.rc != 0, result.explain()
        out = " ".join(result.output.split())
        assert f"QoS plan {bad} (roce_qos_plan_src)" in out, result.explain()
        assert "data.dscp: 99 is out of range 0..63" in out and "cnp: unknown key(s) prio" in out, result.explain()
        assert "known keys of cnp: dscp, priority" in out, result.explain()
        assert result.total("changed") <= 1, result.explain()  # only the agent packed on the controller
    # Refused before the first change anywhere: nothing of any role on any node.
    for host in fabric[0].names:
        assert mtu(run_on, host) == 1500
        assert run_on(host, "ls /etc/rocetune /usr/local/bin/rocetune", check=False).returncode != 0


# ---------------------------------------------------------------------------------------------
# The installed collection, from a project that is not this repository


def test_one_refused_node_stops_every_node_before_anything_changes(fabric, run_on, tmp_path):
    info, inv = fabric
    node = info.names[1]
    refuse = tmp_path / "refuse.yml"  # this node's management link among its fabric interfaces
    refuse.write_text(json.dumps({"all": {"hosts": {node: {"roce_net_interfaces": [FABRIC_IF, "rtl0"]}}}}))
    result = run_playbook(info.inventory, tmp_path, extra_inventories=[inv, refuse])
    assert result.rc != 0 and result.recap[node]["failed"] == 1, result.explain()
    out = " ".join(result.output.split())
    assert "refusing to change the MTU of rtl0 (1500 -> 9000)" in out, result.explain()
    assert f"the preflight refused {node} (the reasons are above)" in out, result.explain()
    assert result.total("changed") <= 1, result.explain()  # only the agent packed on the controller
    for host in info.names:
        assert mtu(run_on, host) == 1500
        assert run_on(host, "ls /etc/rocetune /usr/local/bin/rocetune", check=False).returncode != 0


def test_the_installed_collection_converges_fresh_nodes_from_a_project_of_its_own(fabric, run_on, tmp_path):
    info, inv = fabric
    env = {k: v for k, v in ansible_env().items() if k not in ("ANSIBLE_CONFIG", "PYTHONPATH")}
    galaxy = tool("ansible-galaxy")
    built = subprocess.run([sys.executable, str(REPO / "tools" / "build_collection.py"), "--output-path", str(tmp_path)],
                           check=True, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True, timeout=300)
    project, home = tmp_path / "site-project", tmp_path / "home"
    home.mkdir()
    subprocess.run([galaxy, "collection", "install", built.stdout.strip(),
                    "-p", str(project / "collections")], check=True, cwd=tmp_path, env=env,
                   stdout=subprocess.DEVNULL, timeout=300)
    installed = project / "collections" / "ansible_collections" / "rocetune" / "fabric"
    for path in [installed, *installed.rglob("*")]:  # a shared, read-only install
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    # A unix socket's path is at most 107 bytes: the ssh control sockets get a short directory.
    control = tempfile.mkdtemp(prefix="rt-cp-", dir="/tmp")
    try:
        cfg = (REPO / "ansible.cfg").read_text().replace("roles_path = roles\n", "")
        cfg = cfg.replace("inventory = inventories/lab/hosts.yml\n", "")
        (project / "ansible.cfg").write_text(cfg)
        (project / "site.yml").write_text("- name: The fabric, from the installed collection\n"
                                          "  ansible.builtin.import_playbook: rocetune.fabric.site\n")
        run_env = dict(env, ANSIBLE_CONFIG=str(project / "ansible.cfg"), HOME=str(home),
                       ANSIBLE_SSH_CONTROL_PATH_DIR=control, ANSIBLE_LOCAL_TEMP=str(home / "tmp"))
        argv = [tool("ansible-playbook"), "-i", str(info.inventory), "-i", str(inv), "site.yml"]
        runs = []
        for _ in range(2):
            proc = subprocess.run(argv, cwd=project, env=run_env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
            runs.append((proc, parse_recap(proc.stdout)))
        (first, recap), (second, again) = runs
        assert first.returncode == 0 and all(recap[h]["changed"] >= 1 for h in info.names), first.stdout[-6000:]
        assert second.returncode == 0 and all(again[h]["changed"] == 0 for h in info.names), second.stdout[-6000:]
    finally:
        for path in [installed, *installed.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(control, ignore_errors=True)
    # The agent the collection ships was installed as it is: nothing was packed on the controller.
    assert not (home / ".cache" / "rocetune" / "agent").exists(), first.stdout[-3000:]
    for host in info.names:
        assert mtu(run_on, host) == 9000
        assert run_on(host, "rocetune --version").stdout.startswith("rocetune ")
        assert run_on(host, "test -s /etc/rocetune/nccl.env", check=False).returncode == 0


# ---------------------------------------------------------------------------------------------
# Batches and canaries


def _hooks(tmp_path) -> dict:
    pre = tmp_path / "pre.yml"
    pre.write_text("- name: Mark the node as drained by this batch\n"
                   "  ansible.builtin.command: touch /run/rocetune-test-drained\n"
                   "  changed_when: true\n")
    post = tmp_path / "post.yml"
    post.write_text("- name: The canary's check fails\n"
                    "  ansible.builtin.fail:\n    msg: canary check failed on {{ inventory_hostname }}\n"
                    "  when: inventory_hostname == 'node01'\n")
    return {"rocetune_batch_pre_tasks": str(pre), "rocetune_batch_post_tasks": str(post)}


def test_a_failing_canary_stops_the_rollout_before_the_next_batch(fabric, run_on, tmp_path):
    info, _ = fabric
    for host in info.names:  # every node drifted: each batch has something to change
        run_on(host, f"ip link set {FABRIC_IF} mtu 1500; rm -f /run/rocetune-test-drained")
    extra = dict(_hooks(tmp_path), rocetune_serial=[1, "100%"])
    result = play(fabric, tmp_path, "-e", json.dumps(extra))
    assert result.rc != 0, result.explain()
    assert "canary check failed on node01" in result.output, result.explain()
    assert mtu(run_on, "node01") == 9000  # the canary was changed (before its check failed)
    assert run_on("node01", "test -e /run/rocetune-test-drained", check=False).returncode == 0
    for host in info.names[1:]:  # the next batch never started: not drained, not changed
        assert mtu(run_on, host) == 1500, result.explain()
        assert run_on(host, "test -e /run/rocetune-test-drained", check=False).returncode != 0
    # The canary alone had no peer with its fabric up: said, not skipped silently.
    assert "jumbo path from node01 not checked: no peer has its fabric up yet" in " ".join(result.output.split())


def test_batches_without_a_failure_converge_and_check_the_path_across_batches(fabric, run_on, tmp_path):
    info, _ = fabric
    result = play(fabric, tmp_path, "-e", json.dumps({"rocetune_serial": [1, "100%"]}))
    assert result.rc == 0, result.explain()
    assert all(mtu(run_on, h) == 9000 for h in info.names)
    # A node of the second batch pings the canary, done in the first.
    drift = play(fabric, tmp_path, "--limit", "node01,node02", "-e", json.dumps({"rocetune_serial": [1, "100%"]}))
    assert drift.rc == 0 and drift.total("changed") == 0, drift.explain()


# ---------------------------------------------------------------------------------------------
# --limit, verify, diff


def test_limit_checks_the_path_against_the_peer_group_it_leaves_out(fabric, run_on, tmp_path):
    run_on("node04", f"ip link set {FABRIC_IF} mtu 1500")
    try:
        # node01 has nothing to change: its path check runs when asked (roce_net_path_check_on)
        alone = play(fabric, tmp_path, "--limit", "node01", "-e", "roce_net_path_check_on=always")
        assert alone.rc == 0, alone.explain()
        assert "the hosts --limit left out (name their group in roce_net_peer_group" in " ".join(alone.output.split())
        grouped = play(fabric, tmp_path, "--limit", "node01", "-e", "roce_net_peer_group=gpu_nodes",
                       "-e", "roce_net_path_check_on=always")
        assert grouped.rc != 0, grouped.explain()
        out = " ".join(grouped.output.split())
        assert "node01 rtf0 -> node04 rtf0 (198.19.0.14)" in out and "node04 rtf0 is at MTU 1500, not 9000" in out
        assert mtu(run_on, "node04") == 1500  # read, never changed
    finally:
        run_on("node04", f"ip link set {FABRIC_IF} mtu 9000")


def test_the_verify_tag_applies_nothing_and_fails_on_drift(fabric, run_on, tmp_path):
    run_on("node02", f"ip link set {FABRIC_IF} mtu 1500")
    try:
        verify = play(fabric, tmp_path, "--tags", "roce_net_verify,host_tuning_verify")
        assert verify.rc != 0 and verify.recap["node02"]["failed"] == 1, verify.explain()
        assert verify.recap["node01"]["failed"] == 0 and verify.total("changed") <= 1, verify.explain()
        assert mtu(run_on, "node02") == 1500  # verified, not applied
        diff = play(fabric, tmp_path, "--check", "--diff", "--limit", "node02")
        assert diff.rc == 0, diff.explain()
        assert f"-{FABRIC_IF} mtu: 1500" in diff.output and f"+{FABRIC_IF} mtu: 9000" in diff.output, diff.explain()
        plain = play(fabric, tmp_path, "--check", "--limit", "node02")
        assert f"-{FABRIC_IF} mtu: 1500" not in plain.output  # a diff only in diff mode
    finally:
        run_on("node02", f"ip link set {FABRIC_IF} mtu 9000")


def test_a_later_batch_is_asked_again_before_it_changes(fabric, run_on, tmp_path):
    """The preflight's answer, taken before the first batch, goes stale: node04 drifts while the
    canary's batch runs, and its own batch finds and repairs it."""
    pre = tmp_path / "drift.yml"
    pre.write_text("- name: node04 drifts while the canary's batch runs\n"
                   f"  ansible.builtin.command: ip link set {FABRIC_IF} mtu 1500\n"
                   "  delegate_to: node04\n"
                   "  changed_when: true\n"
                   "  when: inventory_hostname == 'node01'\n")
    assert all(mtu(run_on, h) == 9000 for h in fabric[0].names)
    result = play(fabric, tmp_path, "-e", json.dumps({"rocetune_serial": [1, "100%"],
                                                      "rocetune_batch_pre_tasks": str(pre)}))
    assert result.rc == 0, result.explain()
    assert mtu(run_on, "node04") == 9000 and result.recap["node04"]["changed"] >= 1, result.explain()
    assert result.recap["node02"]["changed"] == 0 and result.recap["node03"]["changed"] == 0, result.explain()
