"""The fabric roles of site.yml (rdma_core, roce_net, roce_qos, host_tuning) on the namespace lab.

Each lab host gets a second interface for this module, `rtf0` on a second bridge (198.19.0.0/24,
the "switch" at 9216), so roce_net has a fabric interface that is not the one carrying SSH
(rtl0). The roles converge, rerun with changed=0, and `--check --diff` is clean; a drifted MTU
and sysctl are repaired and reported; an audit names the peer left at 1500; the link-flap guard
refuses the SSH interface, naming it and the variable; QoS on veth is "not supported" (skipped,
or a failure when required) and the boot script exits cleanly.

Namespace hosts cannot load kernel modules or install packages: the lab inventory turns both off
(inventories/lab/group_vars/all/rdma_core.yml); the VM tier covers them.
"""

from __future__ import annotations

import json

import pytest

from lab import fabric_net, netns
from lab.playbooks import REPO, run_playbook

FABRIC_IF = fabric_net.FABRIC_IF
# The fabric roles' part of site.yml; the agent's always-tagged variable check is its own concern.
TAGS = ("--tags", "rdma_core,roce_net,roce_qos,host_tuning", "--skip-tags", "rocetune_agent_check")


@pytest.fixture(scope="module")
def fabric(lab4, tmp_path_factory):
    """The four lab hosts, fresh (roots reset: another module may have converged them), with rtf0,
    and an inventory that names it as their fabric interface."""
    fabric_net.remove(lab4)
    netns.up(len(lab4.names))
    fabric_net.add(lab4)
    inv = tmp_path_factory.mktemp("fabric") / "fabric.yml"
    inv.write_text(fabric_net.inventory_text())
    try:
        yield lab4, inv
    finally:
        fabric_net.remove(lab4)


def play(fabric, tmp_path, *args, **kw):
    info, inv = fabric
    return run_playbook(info.inventory, tmp_path, *TAGS, *args, extra_inventories=[inv], **kw)


def mtu(run_on, host, ifname=FABRIC_IF):
    return int(run_on(host, f"cat /sys/class/net/{ifname}/mtu").stdout)


@pytest.fixture(scope="module")
def fresh_check(fabric, tmp_path_factory):
    """The whole site in `--check --diff` on the fresh hosts, before anything was applied: each
    role's first change, predicted by the converge step (one call per node) in check mode."""
    info, inv = fabric
    return run_playbook(info.inventory, tmp_path_factory.mktemp("check"), "--check", "--diff", extra_inventories=[inv])


@pytest.fixture(scope="module")
def converged(fabric, tmp_path_factory, fresh_check):
    return play(fabric, tmp_path_factory.mktemp("converge"))


# Each role's first change as its diff names it (nic_firmware needs mlxconfig: tests/unit/roles).
FIRST_CHANGES = {
    "rdma_core": "--- before: /etc/security/limits.d/90-rocetune-memlock.conf",
    "roce_net": "--- before: fabric interfaces (node)",
    "roce_qos": "--- before: /etc/rocetune/roce_qos.json",
    "host_tuning": "--- before: sysctls (running kernel)",
    "rocetune_agent": "--- before: /usr/local/bin/rocetune",
}


def test_check_mode_on_fresh_hosts_shows_each_roles_first_change_and_changes_nothing(fresh_check, fabric, run_on):
    info, _ = fabric
    assert fresh_check.rc == 0, fresh_check.explain()
    for host in info.names:
        assert fresh_check.recap[host]["changed"] >= 1 and fresh_check.recap[host]["failed"] == 0
    for role, header in FIRST_CHANGES.items():
        assert fresh_check.output.count(header) == len(info.names), f"{role}\n{fresh_check.explain()}"
    assert "Apply every role that will change this node" in fresh_check.output  # the converge step ran
    for host in info.names:
        assert mtu(run_on, host) == 1500
        left = run_on(
            host,
            "ls /etc/udev/rules.d/81-rocetune-roce-net.rules /etc/rocetune/roce_qos.json "
            "/etc/security/limits.d/90-rocetune-memlock.conf /etc/sysctl.d/99-zz-rocetune-host-tuning.conf "
            "/usr/local/bin/rocetune",
            check=False,
        )
        assert left.returncode != 0 and left.stdout.strip() == "", left.stdout


def test_converge_sets_the_fabric_mtu_and_leaves_the_ssh_interface_alone(converged, fabric, run_on):
    info, _ = fabric
    assert converged.rc == 0, converged.explain()
    for host in info.names:
        assert converged.recap[host]["failed"] == 0, converged.explain()
        assert mtu(run_on, host) == 9000
        assert mtu(run_on, host, "rtl0") == 1500
        rule = run_on(host, "cat /etc/udev/rules.d/81-rocetune-roce-net.rules").stdout
        assert 'NAME=="rtf0", ATTR{mtu}="9000"' in rule


def test_rerun_reports_no_change_and_check_diff_is_clean(converged, fabric, tmp_path):
    again = play(fabric, tmp_path)
    assert again.rc == 0 and again.total("changed") == 0, again.explain()
    check = play(fabric, tmp_path, "--check", "--diff")
    assert check.rc == 0 and check.total("changed") == 0, check.explain()
    assert "--- before" not in check.output, check.explain()


def test_memlock_is_persisted_and_modules_are_explicitly_off_in_the_lab(converged, run_on):
    limits = run_on("node01", "cat /etc/security/limits.d/90-rocetune-memlock.conf").stdout
    assert "hard    memlock    unlimited" in limits
    assert (
        "DefaultLimitMEMLOCK=infinity"
        in run_on("node01", "cat /etc/systemd/system.conf.d/90-rocetune-memlock.conf").stdout
    )
    # rdma_core_manage_modules: false in the lab inventory: nothing loaded, nothing persisted.
    assert run_on("node01", "test -e /etc/modules-load.d/rocetune-rdma.conf", check=False).returncode != 0


def test_host_tuning_applies_what_a_namespace_allows_and_names_the_rest(converged, run_on):
    out = converged.output
    assert "absent here: net.core.netdev_max_backlog" in out, converged.explain()
    assert "net.core.rmem_max" in out.split("read-only here:", 1)[1].split("\n", 1)[0], converged.explain()
    assert run_on("node02", "cat /proc/sys/net/ipv4/tcp_rmem").stdout.split() == ["4096", "87380", "134217728"]
    assert (
        "net.ipv4.tcp_mtu_probing = 1" in run_on("node02", "cat /etc/sysctl.d/99-zz-rocetune-host-tuning.conf").stdout
    )


def test_drift_is_repaired_and_reported_then_the_third_run_is_clean(converged, fabric, run_on, tmp_path):
    run_on("node02", f"ip link set {FABRIC_IF} mtu 1500")
    run_on("node03", "echo 0 > /proc/sys/net/ipv4/tcp_mtu_probing")
    second = play(fabric, tmp_path)
    assert second.rc == 0, second.explain()
    assert second.recap["node02"]["changed"] >= 1 and second.recap["node03"]["changed"] >= 1, second.explain()
    assert second.recap["node01"]["changed"] == 0, second.explain()
    assert mtu(run_on, "node02") == 9000
    assert run_on("node03", "cat /proc/sys/net/ipv4/tcp_mtu_probing").stdout.strip() == "1"
    third = play(fabric, tmp_path)
    assert third.rc == 0 and third.total("changed") == 0, third.explain()


def test_an_audit_names_the_peer_left_at_1500(converged, fabric, run_on, tmp_path):
    run_on("node04", f"ip link set {FABRIC_IF} mtu 1500")
    try:
        audit = play(fabric, tmp_path, "-e", "roce_net_apply=false")
        assert audit.rc != 0, audit.explain()
        assert "node01 rtf0 -> node04 rtf0 (198.19.0.14)" in audit.output, audit.explain()
        assert "node04 rtf0 is at MTU 1500, not 9000" in audit.output, audit.explain()
        assert "node04 rtf0 -> node01 rtf0 (198.19.0.11): this node's route MTU is 1500" in audit.output
        assert mtu(run_on, "node04") == 1500  # the audit changed nothing
    finally:
        back = play(fabric, tmp_path)
        assert back.rc == 0, back.explain()
    assert mtu(run_on, "node04") == 9000


def test_the_ssh_interface_is_refused_naming_it_and_the_variable(converged, fabric, run_on, tmp_path):
    persisted = "cat /etc/udev/rules.d/81-rocetune-roce-net.rules; ls -l --time-style=+%s /etc/udev/rules.d"
    before = run_on("node01", persisted).stdout
    result = play(fabric, tmp_path, "--limit", "node01", "-e", json.dumps({"roce_net_interfaces": ["rtf0", "rtl0"]}))
    assert result.rc != 0 and result.recap["node01"]["failed"] == 1, result.explain()
    assert "refusing to change the MTU of rtl0 (1500 -> 9000)" in result.output, result.explain()
    assert "198.18.0.11" in result.output and "roce_net_allow_link_flap: true" in result.output
    assert "nothing was changed" in result.output, result.explain()
    assert mtu(run_on, "node01", "rtl0") == 1500
    # Refused means refused everywhere: the persisted rule still names the rails alone, so the
    # next boot or driver reload cannot put the management link at 9000.
    after = run_on("node01", persisted).stdout
    assert after == before and 'NAME=="rtl0"' not in after, after


def test_qos_on_the_ssh_interface_is_refused_and_nothing_changes(converged, fabric, run_on, tmp_path):
    state = "cat /etc/rocetune/qos.yml /etc/rocetune/roce_qos.json 2>&1; ls -l --time-style=+%s /etc/rocetune"
    before = run_on("node01", state).stdout
    result = play(
        fabric,
        tmp_path,
        "--limit",
        "node01",
        "--tags",
        "roce_qos",
        "-e",
        json.dumps({"roce_qos_interfaces": [FABRIC_IF, "rtl0"]}),
    )
    assert result.rc != 0 and result.recap["node01"]["failed"] == 1, result.explain()
    assert "refusing to change the QoS of rtl0" in result.output, result.explain()
    assert "roce_qos_allow_link_flap: true" in result.output and "nothing was changed" in result.output
    assert run_on("node01", state).stdout == before


def test_a_bad_qos_plan_is_refused_before_it_is_installed(converged, fabric, run_on, tmp_path):
    bad = tmp_path / "qos.yml"
    bad.write_text("version: 1\ndata: {dscp: 99, priority: 3}\n")
    state = "cat /etc/rocetune/qos.yml /etc/rocetune/roce_qos.json 2>&1; ls -l --time-style=+%s /etc/rocetune"
    before = run_on("node01", state).stdout
    for mode in ((), ("--check",)):
        result = play(
            fabric,
            tmp_path,
            "--limit",
            "node01",
            "--tags",
            "roce_qos",
            *mode,
            "-e",
            json.dumps({"roce_qos_plan_src": str(bad)}),
        )
        assert result.rc != 0 and result.recap["node01"]["failed"] == 1, result.explain()
        assert "data.dscp: 99 is out of range 0..63" in result.output, result.explain()
    assert run_on("node01", state).stdout == before


def test_the_qos_boot_unit_turned_off_is_removed_and_back_on_is_reinstalled(converged, fabric, run_on, tmp_path):
    files = (
        "/etc/systemd/system/rocetune-qos.service",
        "/usr/local/lib/rocetune/rocetune_qos_reapply.py",
        "/usr/local/lib/rocetune/roce_qos_state.py",
        "/usr/local/lib/rocetune/rocetune_qos_plan.py",
        "/usr/local/lib/rocetune/roce_qos_buffer.py",
        "/usr/local/lib/rocetune/rocetune_qos_tools.py",
        "/usr/local/lib/rocetune/rocetune_nic_facts.py",
        "/etc/rocetune/roce_qos.json",
    )

    def installed():
        wants = run_on("node02", "ls /etc/systemd/system/multi-user.target.wants/").stdout.split()
        there = [f for f in files if run_on("node02", f"test -e {f}", check=False).returncode == 0]
        return "rocetune-qos.service" in wants, there

    assert installed() == (True, list(files))
    for lib in (f for f in files if f.startswith("/usr/local/lib/rocetune/") and "reapply" not in f):
        # the module's own sources, from its payload: the collection's files as they are
        name = lib.rsplit("/", 1)[1]
        assert run_on("node02", f"cat {lib}").stdout == (REPO / "plugins" / "module_utils" / name).read_text(), lib
    off = play(fabric, tmp_path, "--limit", "node02", "--tags", "roce_qos", "-e", "roce_qos_boot_unit=false")
    try:
        assert off.rc == 0 and off.recap["node02"]["changed"] == 1, off.explain()
        assert installed() == (False, [])
        again = play(fabric, tmp_path, "--limit", "node02", "--tags", "roce_qos", "-e", "roce_qos_boot_unit=false")
        assert again.rc == 0 and again.recap["node02"]["changed"] == 0, again.explain()
    finally:
        back = play(fabric, tmp_path, "--limit", "node02", "--tags", "roce_qos")
        assert back.rc == 0, back.explain()
    assert installed() == (True, list(files))


def test_qos_on_veth_is_not_supported_skipped_or_failed_when_required(converged, fabric, run_on, tmp_path):
    assert "DCB is not supported on rtf0 (driver veth)" in converged.output, converged.explain()
    required = play(fabric, tmp_path, "--limit", "node01", "-e", "roce_qos_required=true")
    assert required.rc != 0 and required.recap["node01"]["failed"] == 1, required.explain()
    assert "not supported on rtf0 (driver veth)" in required.output
    assert "roce_qos_required: true" in required.output


def test_the_qos_boot_unit_runs_and_exits_cleanly_on_veth(converged, run_on):
    unit = run_on("node01", "cat /etc/systemd/system/rocetune-qos.service").stdout
    exec_line = next(ln for ln in unit.splitlines() if ln.startswith("ExecStart="))[len("ExecStart=") :]
    assert (
        run_on("node01", "readlink /etc/systemd/system/multi-user.target.wants/rocetune-qos.service").stdout.strip()
        == "/etc/systemd/system/rocetune-qos.service"
    )
    out = run_on("node01", exec_line)  # check=True: exit 0
    assert "DCB is not supported on rtf0 (driver veth)" in out.stdout
