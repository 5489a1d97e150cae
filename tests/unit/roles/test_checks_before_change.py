"""What the roles check before anything changes: every error of a QoS plan at once (with the
known keys), roce_qos_ets, kernel module names, the sysctl boot order and keys the kernel refuses
at write time, the one `ip -j addr` reader, and the preflight's check-mode stand-in."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tests.unit.roles import REPO, load_module_utils

P = load_module_utils("roce_qos", "rocetune_qos_plan")
N = load_module_utils("rdma_core", "rdma_core_node_state")
S = load_module_utils("host_tuning", "host_tuning_sysctl_state")
H = load_module_utils("host_tuning", "host_tuning_sysctl_run")
L = load_module_utils("", "rocetune_links")
IP = load_module_utils("", "rocetune_ip_addr")


class Done(Exception):
    pass


class Failed(Exception):
    pass


class FakeModule:
    """What a module body needs of AnsibleModule."""

    def __init__(self, params, check_mode=False, diff=False):
        self.params, self.check_mode, self._diff, self.warnings = params, check_mode, diff, []

    def warn(self, message):
        self.warnings.append(message)

    def exit_json(self, **result):
        raise Done(result)

    def fail_json(self, msg, **result):
        raise Failed(msg, result)


# ---------------------------------------------------------------------------------------------
# The QoS plan and roce_qos_ets


def test_a_plan_with_several_errors_names_every_one_with_the_known_keys():
    with pytest.raises(P.QosPlanError) as info:
        P.validate({"data": {"dscp": 99, "priority": 3}, "cnp": {"dscp": 48, "prio": 6}, "lossles_priorities": [3]})
    err = info.value
    assert [m for m, _ in err.errors] == ["unknown key(s) lossles_priorities", "data.dscp: 99 is out of range 0..63",
                                          "cnp: unknown key(s) prio"]
    assert "known keys of cnp: dscp, priority" in err.describe() and "lossless_priorities" in err.hint


@pytest.mark.parametrize("ets, needle", [
    ({"tc_bww": [100, 0, 0, 0, 0, 0, 0, 0]}, "roce_qos_ets: unknown key(s) tc_bww"),
    ({"prio_tc": [0, 0, 0, 1]}, "roce_qos_ets.prio_tc: expected a list of 8 integers"),
    ({"tc_bw": [101, 0, 0, 0, 0, 0, 0, 0]}, "roce_qos_ets.tc_bw[0]: 101 is out of range 0..100"),
    ({"tc_tsa": ["ets"] * 7 + ["fifo"]}, "roce_qos_ets.tc_tsa: [7] 'fifo' not one of strict, ets, vendor"),
    ("garbage", "roce_qos_ets: expected a mapping"),
    ({"tc_tsa": ["ets", "ets"] + ["strict"] * 6, "tc_bw": [50, 40, 0, 0, 0, 0, 0, 0]},
     "the ETS traffic classes' shares (TC0 50%, TC1 40%) add up to 90, not 100"),
])
def test_roce_qos_ets_is_refused_naming_the_entry(ets, needle):
    with pytest.raises(P.QosPlanError) as info:
        P.validate_ets(ets)
    assert needle in info.value.describe()


def test_valid_ets_and_an_empty_one_pass():
    ets = {"prio_tc": [0, 0, 0, 1, 0, 0, 0, 0], "tc_tsa": ["ets", "ets"] + ["strict"] * 6,
           "tc_bw": [50, 50, 0, 0, 0, 0, 0, 0]}
    assert P.validate_ets(ets) == ets and P.validate_ets({}) == {}


# ---------------------------------------------------------------------------------------------
# rdma_core: module names


def test_a_module_name_with_a_newline_is_refused():
    problems = N.module_name_problems(["ib_uverbs", "rdma_ucm\nkernel.core_pattern"], "mlx5_ib")
    assert problems == ["rdma_core_modules: 'rdma_ucm\\nkernel.core_pattern' is not a kernel module name "
                        "(1 to 55 of A-Z a-z 0-9 _ -)"]
    assert N.module_name_problems(["ib_uverbs"], "mlx5 ib") == [
        "rdma_core_nic_driver: 'mlx5 ib' is not a kernel module name (1 to 55 of A-Z a-z 0-9 _ -)"]


# ---------------------------------------------------------------------------------------------
# host_tuning: the boot order and keys refused at write time


def _sysctl_tree(tmp_path):
    proc = tmp_path / "proc"
    (proc / "net" / "ipv4").mkdir(parents=True)
    (proc / "net" / "ipv4" / "tcp_mtu_probing").write_text("0\n")
    (proc / "net" / "ipv4" / "tcp_ecn").write_text("2\n")
    root = tmp_path / "root"
    (root / "etc" / "sysctl.d").mkdir(parents=True)
    return proc, root


def test_a_file_read_later_at_boot_that_sets_a_key_back_is_named(tmp_path):
    proc, root = _sysctl_tree(tmp_path)
    (root / "etc" / "sysctl.conf").write_text("# site\nnet/ipv4/tcp_mtu_probing = 0\n")
    (root / "etc" / "sysctl.d" / "99-sysctl.conf").symlink_to("../sysctl.conf")
    (root / "etc" / "sysctl.d" / "10-early.conf").write_text("net.ipv4.tcp_mtu_probing = 0\n")  # before ours
    found = S.boot_overrides("/etc/sysctl.d/60-rocetune.conf", {"net.ipv4.tcp_mtu_probing": 1}, str(root))
    # The last file applied wins: `sysctl --system` reads /etc/sysctl.conf after every sysctl.d file.
    assert found == ["/etc/sysctl.conf:2 sets net.ipv4.tcp_mtu_probing = 0 (/etc/sysctl.d/60-rocetune.conf says 1)"]
    assert S.boot_overrides("/etc/sysctl.d/60-rocetune.conf", {"net.ipv4.tcp_mtu_probing": 0}, str(root)) == []
    params = {"sysctls": {"net.ipv4.tcp_mtu_probing": 1}, "file": "/etc/sysctl.d/60-rocetune.conf",
              "apply": True, "on_unsupported": "fail", "proc_sys": str(proc), "config_root": str(root)}
    with pytest.raises(Failed) as info:
        H.run(FakeModule(params))
    assert "sets these keys back" in info.value.args[0] and "nothing was changed" in info.value.args[0]
    assert (proc / "net" / "ipv4" / "tcp_mtu_probing").read_text() == "0\n"


def test_a_key_refused_at_write_time_is_not_persisted_and_fails_with_on_unsupported_fail(tmp_path, monkeypatch):
    proc, root = _sysctl_tree(tmp_path)
    target = root / "etc" / "sysctl.d" / "99-zz-rocetune.conf"
    real_open = open

    def refusing_open(path, mode="r", *args, **kwargs):
        if str(path).endswith("tcp_ecn") and "w" in mode:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    params = {"sysctls": {"net.ipv4.tcp_mtu_probing": 1, "net.ipv4.tcp_ecn": 1}, "file": str(target),
              "apply": True, "on_unsupported": "warn", "proc_sys": str(proc), "config_root": str(tmp_path / "none")}
    with pytest.raises(Done) as done:
        H.run(FakeModule(dict(params)))
    assert "net.ipv4.tcp_ecn" not in target.read_text() and "net.ipv4.tcp_mtu_probing = 1" in target.read_text()
    assert done.value.args[0]["unsupported"] == ["net.ipv4.tcp_ecn"]
    (proc / "net" / "ipv4" / "tcp_mtu_probing").write_text("0\n")
    target.unlink()
    with pytest.raises(Failed) as failed:
        H.run(FakeModule(dict(params, on_unsupported="fail")))
    assert "net.ipv4.tcp_ecn (Permission denied)" in failed.value.args[0] and "restored" in failed.value.args[0]
    assert (proc / "net" / "ipv4" / "tcp_mtu_probing").read_text() == "0\n" and not target.exists()


def test_a_file_that_cannot_be_written_restores_the_live_values(tmp_path, monkeypatch):
    proc, root = _sysctl_tree(tmp_path)

    def disk_full(changes):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(H, "apply_changes", disk_full)
    params = {"sysctls": {"net.ipv4.tcp_mtu_probing": 1}, "file": str(tmp_path / "x.conf"), "apply": True,
              "on_unsupported": "fail", "proc_sys": str(proc), "config_root": str(tmp_path / "none")}
    with pytest.raises(Failed) as failed:
        H.run(FakeModule(params))
    assert "the live values were restored; nothing was changed" in failed.value.args[0], failed.value.args[0]
    assert (proc / "net" / "ipv4" / "tcp_mtu_probing").read_text() == "0\n"


def test_check_mode_diff_shows_the_running_kernels_values(tmp_path):
    proc, _ = _sysctl_tree(tmp_path)
    params = {"sysctls": {"net.ipv4.tcp_mtu_probing": 1}, "file": "", "apply": True, "on_unsupported": "fail",
              "proc_sys": str(proc), "config_root": str(tmp_path / "none")}
    with pytest.raises(Done) as done:
        H.run(FakeModule(params, check_mode=True, diff=True))
    assert done.value.args[0]["diff"][-1]["before"] == "net.ipv4.tcp_mtu_probing = 0\n"
    with pytest.raises(Done) as plain:
        H.run(FakeModule(params, check_mode=True))
    assert "diff" not in plain.value.args[0]  # only in diff mode


# ---------------------------------------------------------------------------------------------
# One `ip -j addr` reader


def test_the_agent_reads_ip_addr_with_the_modules_reader():
    source = REPO / "src" / "rocetune" / "core" / "ip_addr_json.py"
    copy = REPO / "plugins" / "module_utils" / "rocetune_ip_addr.py"
    assert not source.is_symlink() and not copy.is_symlink()
    assert copy.read_text().split("\n", 1)[1] == source.read_text()  # below the generated-by line


def test_the_agent_and_the_connection_guard_agree_and_skip_empty_entries():
    from rocetune.probe.parsers.ip_addr import parse_ip_addr

    text = (REPO / "tests" / "fixtures" / "corpus" / "ip-addr-debian12-build-host" / "ip-j-addr-show.json").read_text()
    data = json.loads(text)
    data.insert(1, {})  # what some iproute2 versions print for a filtered link
    text = json.dumps(data)
    agent = parse_ip_addr(text)
    guard = L.parse_ip_addr(text)
    assert sorted(agent) == sorted(guard)
    for name, addrs in agent.items():
        want = {f"{a['address']}/{a['prefixlen']}" for a in addrs}
        assert set(guard[name]) <= want  # the guard leaves out link-scope addresses only
    assert L.parse_ip_addr('[{}, {"ifname": "eth0", "addr_info": [{}]}]') == {"eth0": []}


# ---------------------------------------------------------------------------------------------
# The preflight runs a module's body in check mode


def test_the_preflight_runs_a_role_module_in_check_mode_and_changes_nothing(tmp_path):
    import sys

    pytest.importorskip("ansible", reason="the preflight's action plugin runs inside ansible-core")
    sys.path.insert(0, str(REPO / "collections"))
    from ansible_collections.rocetune.fabric.plugins.module_utils import rocetune_preflight as PF

    proc, _ = _sysctl_tree(tmp_path)

    class Real:
        def run_command(self, argv):
            raise AssertionError("no command expected")

        def get_bin_path(self, name, required=False, opt_dirs=None):
            return None

    args = {"sysctls": {"net.ipv4.tcp_mtu_probing": 1}, "file": str(tmp_path / "t.conf"), "proc_sys": str(proc),
            "config_root": str(tmp_path / "none")}
    answers = PF.check_all(Real(), [{"role": "host_tuning", "module": "host_tuning_sysctl", "args": args},
                                    {"role": "bad", "module": "host_tuning_sysctl",
                                     "args": dict(args, sysctls={"net..x": 1})},
                                    {"role": "rocetune_env", "module": "rocetune_env",
                                     "args": {"command": "/nonexistent", "env_file": "/x/e.env"}}])
    assert answers["host_tuning"]["run"] and not answers["host_tuning"]["failed"]
    assert answers["bad"]["failed"] and "'net..x' is not a sysctl name" in answers["bad"]["msg"]
    assert answers["rocetune_env"]["deferred"].startswith("checked when it runs, after host_tuning")
    assert (proc / "net" / "ipv4" / "tcp_mtu_probing").read_text() == "0\n" and not Path(args["file"]).exists()


# ---------------------------------------------------------------------------------------------
# Signals and node-state diffs


def test_a_manager_with_another_memlock_limit_is_a_pending_reexec():
    assert N.memlock_pending("8388608") and N.memlock_pending("65536\n")
    assert not N.memlock_pending("infinity\n")
    assert not N.memlock_pending(None)  # no systemd running: nothing to re-execute


def test_the_qos_diff_shows_each_nic_setting_as_it_is_and_as_it_becomes():
    Q = load_module_utils("roce_qos", "roce_qos_state")
    A = load_module_utils("roce_qos", "roce_qos_apply_run")
    from tests.unit.roles import QOS_FIXTURES

    pfc = (QOS_FIXTURES / "dcb-pfc-show-manpage.txt").read_text()  # dcb(8)'s example: PFC on 6 and 7
    notes = []
    cmds = Q.dcb_commands("ens1np0", Q.desired(Q.load_plan(None, None)), pfc, "", "", notes)
    assert cmds and ("pfc", "0,0,0,0,0,0,1,1", "0,0,0,1,0,0,0,0") in notes
    diff = A.node_diff([{"ifname": "ens1np0", "notes": notes}], [], lambda path: None)[0]
    assert "ens1np0 pfc: 0,0,0,0,0,0,1,1\n" in diff["before"] and "ens1np0 pfc: 0,0,0,1,0,0,0,0\n" in diff["after"]
    assert "ens1np0 dscp 26 -> priority: none\n" in diff["before"] and "ens1np0 dscp 26 -> priority: 3\n" in diff["after"]


def test_the_preflight_tells_a_change_from_a_run_that_only_verifies_or_tells(monkeypatch):
    """A rollout drains a node only for `change`: a pending reboot to report is a reason to run the
    role, not to drain the node (a rerun with nothing to change drains nothing)."""
    import sys
    import types

    pytest.importorskip("ansible", reason="the preflight's module runs inside ansible-core")
    sys.path.insert(0, str(REPO / "collections"))
    from ansible_collections.rocetune.fabric.plugins.module_utils import rocetune_preflight as PF

    def body(result):
        return types.SimpleNamespace(ARGUMENT_SPEC={}, run=lambda module: module.exit_json(**result))

    monkeypatch.setitem(PF.MODULES, "tells", body({"changed": False, "reboot_required": True}))
    monkeypatch.setitem(PF.MODULES, "changes", body({"changed": True}))
    monkeypatch.setitem(PF.MODULES, "clean", body({"changed": False}))
    answers = PF.check_all(object(), [{"role": r, "module": r, "args": {}} for r in ("tells", "clean", "changes")])
    assert (answers["tells"]["run"], answers["tells"]["change"]) == (True, False)
    assert (answers["clean"]["run"], answers["clean"]["change"]) == (False, False)
    assert (answers["changes"]["run"], answers["changes"]["change"]) == (True, True)


def test_packages_to_install_are_a_change_even_where_nothing_else_is(monkeypatch):
    """rdma_core_node reports missing distribution packages without `pending`: the role must run
    (its package task installs them) and a rollout must drain the node for it."""
    import sys
    import types

    sys.path.insert(0, str(REPO / "collections"))
    from ansible_collections.rocetune.fabric.plugins.module_utils import rocetune_preflight as PF

    found = {"changed": False, "missing_packages": ["rdma-core"], "daemon_reexec_required": False}
    monkeypatch.setitem(PF.MODULES, "lacks", types.SimpleNamespace(
        ARGUMENT_SPEC={}, run=lambda module: module.exit_json(**found)))
    monkeypatch.setitem(PF.MODULES, "has", types.SimpleNamespace(
        ARGUMENT_SPEC={}, run=lambda module: module.exit_json(**dict(found, missing_packages=[]))))
    answers = PF.check_all(object(), [{"role": r, "module": r, "args": {}} for r in ("lacks", "has")])
    assert (answers["lacks"]["run"], answers["lacks"]["change"]) == (True, True)
    assert (answers["has"]["run"], answers["has"]["change"]) == (False, False)


def test_a_file_rdma_core_cannot_write_is_a_clear_failure_not_a_traceback(tmp_path, monkeypatch):
    """`chattr +i` on the limits file: the module fails naming it, and says what is live."""
    R = load_module_utils("rdma_core", "rdma_core_node_run")

    def immutable(changes):
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(R, "apply_changes", immutable)
    params = dict({k: v.get("default") for k, v in R.ARGUMENT_SPEC.items()},
                  limits_file=str(tmp_path / "90-rocetune-memlock.conf"))
    module = FakeModule(params)
    module.get_bin_path = lambda name, required=False, opt_dirs=None: None
    module.run_command = lambda argv: (1, "", "")
    with pytest.raises(Failed) as failed:
        R.run(module)
    message = failed.value.args[0]
    assert message == f"cannot write {tmp_path / '90-rocetune-memlock.conf'}: Operation not permitted; nothing was changed"
