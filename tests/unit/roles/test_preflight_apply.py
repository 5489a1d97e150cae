"""The site's converge step (rocetune.fabric.preflight with apply): the roles that will change a
node applied in one call, each module's body as its role runs it, in order; the first failure
stops the roles after it; a file the controller sends reaches the module as a private temporary
file; check and diff mode are the task's own."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

from tests.unit.roles import REPO

pytest.importorskip("ansible", reason="the preflight's module runs inside ansible-core")
sys.path.insert(0, str(REPO / "collections"))
from ansible_collections.rocetune.fabric.plugins.module_utils import rocetune_preflight as PF  # noqa: E402

PREFLIGHT = importlib.import_module("ansible_collections.rocetune.fabric.plugins.modules.preflight")


class Node:
    """What the bodies need of the real AnsibleModule; exit and fail end the call."""

    def __init__(self, check_mode=False, diff=False, params=None):
        self.check_mode, self._diff, self.params, self.warnings = check_mode, diff, params or {}, []

    def run_command(self, argv):
        raise AssertionError("no command expected: %r" % (argv,))

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return None

    def warn(self, warning):
        self.warnings.append(warning)

    def exit_json(self, **result):
        raise SystemExit(("exit", result))

    def fail_json(self, msg, **result):
        raise SystemExit(("fail", dict(result, msg=msg)))


def _sysctl_args(tmp_path):
    proc = tmp_path / "proc"
    (proc / "net" / "ipv4").mkdir(parents=True)
    (proc / "net" / "ipv4" / "tcp_mtu_probing").write_text("0\n")
    return {
        "sysctls": {"net.ipv4.tcp_mtu_probing": 1},
        "file": str(tmp_path / "t.conf"),
        "proc_sys": str(proc),
        "config_root": str(tmp_path / "none"),
    }


def _body(run):
    return types.SimpleNamespace(ARGUMENT_SPEC={"src": {"type": "path"}}, run=run)


def test_the_converge_step_applies_each_role_for_real_in_order_and_stops_at_the_first_failure(tmp_path, monkeypatch):
    args = _sysctl_args(tmp_path)
    ran = []
    monkeypatch.setitem(
        PF.MODULES, "fails", _body(lambda m: (ran.append("fails"), m.fail_json(msg="no", changed=False)))
    )
    monkeypatch.setitem(PF.MODULES, "after", _body(lambda m: (ran.append("after"), m.exit_json(changed=True))))
    answers = PF.apply_all(
        Node(),
        [
            {"role": "host_tuning", "module": "host_tuning_sysctl", "args": args},
            {"role": "broken", "module": "fails", "args": {}},
            {"role": "later", "module": "after", "args": {}},
        ],
        {},
    )
    assert list(answers) == ["host_tuning", "broken"] and ran == ["fails"]
    assert answers["host_tuning"]["changed"] and not answers["host_tuning"]["failed"]
    assert answers["broken"]["failed"] and answers["broken"]["msg"] == "no"
    assert all(a["seconds"] >= 0 for a in answers.values())
    # Applied for real, unlike the preflight's check: the kernel value and the persisted file.
    assert (tmp_path / "proc" / "net" / "ipv4" / "tcp_mtu_probing").read_text().strip() == "1"
    assert "net.ipv4.tcp_mtu_probing = 1" in Path(args["file"]).read_text()


def test_in_check_mode_the_converge_step_changes_nothing_and_diffs_only_in_diff_mode(tmp_path):
    args = _sysctl_args(tmp_path)
    quiet = PF.apply_all(
        Node(check_mode=True), [{"role": "host_tuning", "module": "host_tuning_sysctl", "args": args}], {}
    )
    assert quiet["host_tuning"]["changed"] and "diff" not in quiet["host_tuning"]["result"]
    shown = PF.apply_all(
        Node(check_mode=True, diff=True), [{"role": "host_tuning", "module": "host_tuning_sysctl", "args": args}], {}
    )
    assert shown["host_tuning"]["result"]["diff"]
    assert (tmp_path / "proc" / "net" / "ipv4" / "tcp_mtu_probing").read_text() == "0\n"
    assert not Path(args["file"]).exists()


def test_a_file_the_controller_sent_reaches_the_module_as_its_option(monkeypatch, tmp_path):
    sent = tmp_path / "agent-src"
    sent.write_bytes(b"PK\x03\x04zip")
    seen = {}

    def run(module):
        seen.update(path=module.params["src"], data=Path(module.params["src"]).read_bytes())
        module.exit_json(changed=True)

    monkeypatch.setitem(PF.MODULES, "takes_a_file", _body(run))
    answers = PF.apply_all(
        Node(), [{"role": "agent", "module": "takes_a_file", "args": {}}], {"agent": {"src": str(sent)}}
    )
    assert answers["agent"]["changed"] and seen == {"path": str(sent), "data": b"PK\x03\x04zip"}


def test_a_file_that_did_not_arrive_fails_its_role_clearly_and_stops_the_roles_after_it(monkeypatch, tmp_path):
    ran = []
    monkeypatch.setitem(PF.MODULES, "takes_a_file", _body(lambda m: (ran.append("file"), m.exit_json(changed=True))))
    monkeypatch.setitem(PF.MODULES, "after", _body(lambda m: (ran.append("after"), m.exit_json(changed=True))))
    (tmp_path / "elsewhere").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    for sent in (str(tmp_path / "absent"), str(tmp_path / "link"), str(tmp_path)):
        answers = PF.apply_all(
            Node(),
            [{"role": "agent", "module": "takes_a_file", "args": {}}, {"role": "later", "module": "after", "args": {}}],
            {"agent": {"src": sent}},
        )
        assert list(answers) == ["agent"] and ran == []
        assert answers["agent"]["failed"] and not answers["agent"]["changed"]
        assert answers["agent"]["msg"] == f"the file the controller sent for agent is not on the node ({sent}); it was not applied"


def test_the_module_names_the_failed_role_what_was_applied_before_it_and_what_did_not_run(monkeypatch):
    monkeypatch.setitem(
        PF.MODULES,
        "ok",
        _body(lambda m: (m.warn("a note"), m.exit_json(changed=True, diff={"before": "a\n", "after": "b\n"}))),
    )
    monkeypatch.setitem(PF.MODULES, "fails", _body(lambda m: m.fail_json(msg="cannot write /etc/x")))
    checks = [
        {"role": "one", "module": "ok", "args": {}},
        {"role": "two", "module": "fails", "args": {}},
        {"role": "three", "module": "ok", "args": {}},
    ]
    node = Node(diff=True, params={"checks": checks, "files": {}})
    with pytest.raises(SystemExit) as ended:
        PREFLIGHT.converge(node)
    how, result = ended.value.args[0]
    assert how == "fail"
    assert result["msg"] == ("two: cannot write /etc/x; applied before it: one (changed: one); not run after it: three")
    assert result["applied"] == ["one", "two"] and result["diff"] == [{"before": "a\n", "after": "b\n"}]
    assert node.warnings == ["one: a note"]


def test_the_module_returns_every_roles_diff_as_one_list_and_none_outside_diff_mode(monkeypatch):
    monkeypatch.setitem(
        PF.MODULES, "ok", _body(lambda m: m.exit_json(changed=True, diff=[{"before": "", "after": "x"}]))
    )
    checks = [{"role": "one", "module": "ok", "args": {}}, {"role": "two", "module": "ok", "args": {}}]
    for diff, want in ((True, [{"before": "", "after": "x"}] * 2), (False, None)):
        with pytest.raises(SystemExit) as ended:
            PREFLIGHT.converge(Node(diff=diff, params={"checks": checks, "files": {}}))
        how, result = ended.value.args[0]
        assert how == "exit" and result["changed"] and result["change"] == ["one", "two"]
        assert result.get("diff") == want


def test_a_role_waiting_for_packages_stops_the_roles_after_it_without_failing(monkeypatch):
    ran = []
    monkeypatch.setitem(
        PF.MODULES,
        "waits",
        _body(lambda m: (ran.append("waits"), m.exit_json(changed=False, pending=True, missing_packages=["iproute2"]))),
    )
    monkeypatch.setitem(PF.MODULES, "after", _body(lambda m: (ran.append("after"), m.exit_json(changed=True))))
    answers = PF.apply_all(
        Node(),
        [{"role": "roce_qos", "module": "waits", "args": {}}, {"role": "rocetune_env", "module": "after", "args": {}}],
        {},
    )
    assert list(answers) == ["roce_qos"] and ran == ["waits"] and not answers["roce_qos"]["failed"]


def test_the_directory_the_controller_sent_files_into_is_removed_after_the_call_even_on_a_failure(monkeypatch, tmp_path):
    sent_dir = tmp_path / "ansible-tmp-1"
    sent_dir.mkdir()
    (sent_dir / "agent-src").write_bytes(b"PK\x03\x04zip")
    monkeypatch.setitem(PF.MODULES, "fails", _body(lambda m: m.fail_json(msg="cannot write /etc/x")))
    checks = [{"role": "agent", "module": "fails", "args": {}}]
    node = Node(params={"checks": checks, "files": {"agent": {"src": str(sent_dir / "agent-src")}},
                        "files_dir": str(sent_dir) + "/"})  # as Ansible names it
    with pytest.raises(SystemExit) as ended:
        PREFLIGHT.converge(node)
    how, result = ended.value.args[0]
    assert how == "fail" and result["files_dir_removed"] and not sent_dir.exists()


def test_only_a_real_directory_holding_every_file_sent_is_removed(tmp_path):
    held = tmp_path / "held"
    held.mkdir()
    (held / "f").write_bytes(b"x")
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "link").symlink_to(held)
    files = {"agent": {"src": str(held / "f")}}
    assert not PF.remove_files_dir(str(other), files) and other.is_dir()  # it does not hold the file
    assert not PF.remove_files_dir(str(tmp_path / "link"), {"agent": {"src": str(tmp_path / "link" / "f")}})
    assert not PF.remove_files_dir("held", files) and not PF.remove_files_dir(None, files)
    assert held.is_dir() and (tmp_path / "link").is_symlink()
    assert PF.remove_files_dir(str(held), files) and not held.exists()


def test_the_answer_echoes_each_role_and_module_not_the_arguments_the_controller_holds(monkeypatch):
    monkeypatch.setitem(PF.MODULES, "ok", _body(lambda m: m.exit_json(changed=True)))
    big = {"src": "/" + "x" * 65536}
    checks = [{"role": "one", "module": "ok", "args": big}, {"role": "two", "module": "ok", "args": {}}]
    with pytest.raises(SystemExit) as ended:
        PREFLIGHT.converge(Node(params={"checks": checks, "files": {}, "apply": True}))
    how, result = ended.value.args[0]
    assert how == "exit"
    assert result["invocation"] == {"module_args": {"checks": [{"role": "one", "module": "ok"},
                                                               {"role": "two", "module": "ok"}],
                                                    "files": {}, "apply": True}}
    assert checks[0]["args"] is big  # the call's own arguments are left as they are
    # each role's wall and CPU seconds (this process and the commands it ran), for bench/
    assert all(isinstance(result["roles"][r][k], float) for r in ("one", "two") for k in ("seconds", "cpu_seconds"))
