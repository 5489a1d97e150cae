"""roce_qos's decisions on recorded real outputs of dcb and mlnx_qos (tests/fixtures/qos/PROVENANCE.md):
only the commands that change something, and a clear "not supported" on a NIC without DCB."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.unit.roles import QOS_FIXTURES, load_module_utils

Q = load_module_utils("roce_qos", "roce_qos_state")
T = load_module_utils("roce_qos", "rocetune_qos_tools")  # the readers (tests/unit/probe/parsers/test_qos_tools.py)


def fx(name):
    return (QOS_FIXTURES / name).read_text()


PLAN = Q.load_plan(None, yaml.safe_load)
WANT = Q.desired(PLAN)


def test_the_built_in_plan_is_docs_qos_md():
    assert PLAN["source"] == "built-in defaults"
    assert WANT["dscp_prio"] == {26: 3, 48: 6}
    assert WANT["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert WANT["tos"] == 106  # 26 << 2 | ECT(0)


def test_a_plan_file_is_read_with_pyyaml_and_checked(tmp_path):
    plan = tmp_path / "qos.yml"
    plan.write_text("version: 1\ndata:\n  dscp: 24\n  priority: 4\nlossless_priorities: [4]\necn: ect1\n")
    p = Q.load_plan(str(plan), yaml.safe_load)
    assert p["source"] == str(plan)
    assert Q.desired(p)["dscp_prio"] == {24: 4, 48: 6} and Q.traffic_class(p) == 97
    plan.write_text("data:\n  dscp: 48\n")
    with pytest.raises(Q.QosError, match="data.dscp and cnp.dscp are both 48"):
        Q.load_plan(str(plan), yaml.safe_load)
    plan.write_text("data:\n  dscp: 64\n")
    with pytest.raises(Q.QosError, match="0..63"):
        Q.load_plan(str(plan), yaml.safe_load)


def test_dcb_commands_from_the_man_page_state():
    cmds = Q.dcb_commands("eth0", WANT, fx("dcb-pfc-show-manpage.txt"), fx("dcb-app-show-N-manpage.txt"),
                          fx("dcb-ets-show-manpage.txt"))
    # 48->6 is already there; 26 is missing; PFC is on 6 and 7 instead of 3 only; ETS left alone.
    assert cmds == [["dcb", "app", "replace", "dev", "eth0", "dscp-prio", "26:3"],
                    ["dcb", "pfc", "set", "dev", "eth0", "prio-pfc",
                     "0:off", "1:off", "2:off", "3:on", "4:off", "5:off", "6:off", "7:off"]]


def test_dcb_state_already_as_planned_needs_no_command():
    pfc = "pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
    app = "dscp-prio 0:0 26:3 48:6\n"
    assert Q.dcb_commands("eth0", WANT, pfc, app, fx("dcb-ets-show-manpage.txt")) == []


def test_a_stale_dscp_mapping_is_replaced_and_ets_set_only_where_it_differs():
    app = fx("dcb-app-show-N-after-replace-manpage.txt")  # 24:4 48:6
    want = Q.desired(Q.load_plan(None, yaml.safe_load),
                     ets={"prio_tc": list(range(8)), "tc_bw": [50, 0, 0, 50, 0, 0, 0, 0]})
    cmds = Q.dcb_commands("eth0", want, "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n", app,
                          fx("dcb-ets-show-manpage.txt"))
    assert cmds[0] == ["dcb", "app", "replace", "dev", "eth0", "dscp-prio", "26:3"]
    assert cmds[1] == ["dcb", "ets", "set", "dev", "eth0", "tc-bw",
                       "0:50", "1:0", "2:0", "3:50", "4:0", "5:0", "6:0", "7:0"]  # prio-tc already 1:1


def test_mlnx_qos_reader_and_commands_from_nvidias_published_output():
    state = T.parse_mlnx_qos(fx("mlnx_qos-i-eth2-community.txt"))
    assert state["trust"] == "dscp"
    assert state["dscp_prio"][26] == 3 and state["dscp_prio"][48] == 6 and len(state["dscp_prio"]) == 64
    assert state["pfc"] == [1, 0, 1, 0, 0, 0, 1, 1]
    assert state["tc_tsa"][6] == "strict" and state["tc_bw"][7] == 40
    assert state["prio_tc"][:2] == [1, 0]  # priority 1 in tc 0, priority 0 in tc 1
    cmds = Q.mlnx_qos_commands("eth2", WANT, fx("mlnx_qos-i-eth2-community.txt"))
    assert cmds == [["mlnx_qos", "-i", "eth2", "--pfc", "0,0,0,1,0,0,0,0"]]


def test_mlnx_qos_in_pcp_trust_gets_trust_first():
    text = fx("mlnx_qos-i-eth2-community.txt").replace("Priority trust state: dscp", "Priority trust state: pcp")
    cmds = Q.mlnx_qos_commands("eth2", WANT, text)
    assert cmds[0] == ["mlnx_qos", "-i", "eth2", "--trust", "dscp"]


def fake_runner(outputs):
    def run(argv):
        return outputs.get(tuple(argv), (127, "", "%s: not installed" % argv[0]))
    return run


def test_a_nic_without_dcb_is_not_supported_naming_interface_and_driver():
    err = fx("dcb-show-veth-not-supported.txt")
    run = fake_runner({("dcb", "-N", "pfc", "show", "dev", "rtf0"): (1, "", err)})
    with pytest.raises(Q.NotSupported, match=r"not supported on rtf0 \(driver veth\)"):
        Q.interface_plan("rtf0", "veth", "dcb", WANT, run, lambda p: None)


def test_interface_plan_adds_pause_off_and_the_ecn_writes_the_driver_exposes():
    run = fake_runner({
        ("dcb", "-N", "pfc", "show", "dev", "ens1"): (0, fx("dcb-pfc-show-manpage.txt"), ""),
        ("dcb", "-N", "app", "show", "dev", "ens1"): (0, "dscp-prio 26:3 48:6\n", ""),
        ("dcb", "-N", "ets", "show", "dev", "ens1"): (0, fx("dcb-ets-show-manpage.txt"), ""),
        ("ethtool", "-a", "ens1"): (0, "Pause parameters for ens1:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\ton\n", ""),
    })
    files = {"/sys/class/net/ens1/ecn/roce_np/enable/3": "0\n", "/sys/class/net/ens1/ecn/roce_rp/enable/3": "1\n",
             "/sys/class/net/ens1/ecn/roce_np/cnp_dscp": "48\n"}
    step = Q.interface_plan("ens1", "mlx5_core", "dcb", WANT, run, files.get)
    assert step["commands"][-1] == ["ethtool", "-A", "ens1", "rx", "off", "tx", "off"]
    assert step["writes"] == [("/sys/class/net/ens1/ecn/roce_np/enable/3", "1")]  # cnp_802p_prio absent: skipped
    off = Q.desired(PLAN, dcqcn=False)
    assert ("/sys/class/net/ens1/ecn/roce_rp/enable/3", "0") in Q.ecn_writes("ens1", off, files.get)
    assert step["ecn_unexposed"] is None


def test_an_inbox_driver_without_ecn_sysfs_is_reported_not_silently_skipped():
    message = Q.ecn_unexposed("ens1", WANT, {}.get)
    assert message.startswith("ens1: the driver exposes no ECN (DCQCN) settings (/sys/class/net/ens1/ecn)")
    assert "firmware's defaults apply" in message


def test_rdma_cm_defaults_written_only_where_they_differ():
    have = {"/cfg/mlx5_0/ports/1/default_roce_mode": "RoCE v2\n", "/cfg/mlx5_0/ports/1/default_roce_tos": "0\n"}
    assert Q.rdma_cm_writes([("mlx5_0", 1)], 106, have.get, "/cfg") == [("/cfg/mlx5_0/ports/1/default_roce_tos", "106")]


def test_backend_auto_picks_mlnx_qos_only_for_mlx5_with_the_tool():
    assert Q.pick_backend("auto", "mlx5_core", True) == "mlnx_qos"
    assert Q.pick_backend("auto", "mlx5_core", False) == "dcb"
    assert Q.pick_backend("auto", "bnxt_en", True) == "dcb"
    assert Q.pick_backend("dcb", "mlx5_core", True) == "dcb"


@pytest.mark.parametrize("text, message", [
    ("lossless_priorities: [8]\n", "lossless_priorities[0]: 8 is out of range 0..7"),
    ("data: {dscp: af31}\n", "data.dscp: expected an integer 0..63, got 'af31'"),
    ("data: {dscp: 99}\n", "data.dscp: 99 is out of range 0..63"),
    ("version: 2\n", "version 2 is not supported"),
    ("lossles_priorities: [3]\n", "unknown key(s) lossles_priorities"),
    ("data: {dscp: 26, prio: 3}\n", "data: unknown key(s) prio"),
    ("data: 26\n", "data: expected a mapping with dscp and priority"),
    ("- 1\n", "must be a mapping"),
    ("fabric: {tiers: 1, ecmp: true}\n", "fabric: tiers 1 with ecmp true"),
])
def test_a_plan_the_agent_refuses_is_refused_here_naming_the_field(text, message):
    with pytest.raises(Q.QosError, match=re.escape(message)):
        Q.parse_plan(text, yaml.safe_load, "qos.yml")


def test_a_plan_the_agent_warns_about_is_warned_about_here():
    plan = Q.parse_plan("lossless_priorities: [4]\n", yaml.safe_load, "qos.yml")
    assert plan["warnings"] == ["data priority 3 is not in lossless_priorities [4]: RoCE data would travel "
                                "in a lossy queue"]
    assert Q.parse_plan("", yaml.safe_load, "x")["source"] == "x"


def test_pcp_trust_on_the_dcb_backend_deletes_every_dscp_entry():
    want = Q.desired(Q.parse_plan("trust: pcp\n", yaml.safe_load, "qos.yml"))
    pfc = "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
    cmds = Q.dcb_commands("eth0", want, pfc, fx("dcb-app-show-N-manpage.txt"), fx("dcb-ets-show-manpage.txt"))
    have = T.dcb_app_dscp(fx("dcb-app-show-N-manpage.txt"))
    assert cmds == [["dcb", "app", "del", "dev", "eth0", "dscp-prio"]
                    + ["%d:%d" % (d, p) for d in sorted(have) for p in sorted(have[d])]]
    # Nothing left to delete: PCP trust already, nothing to run.
    assert Q.dcb_commands("eth0", want, pfc, "", fx("dcb-ets-show-manpage.txt")) == []


def test_no_plan_file_on_the_node_is_the_defaults_without_a_yaml_reader(tmp_path, monkeypatch):
    import builtins

    apply_run = load_module_utils("roce_qos", "roce_qos_apply_run")
    imported, real = [], builtins.__import__

    def watch(name, *args, **kwargs):
        imported.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", watch)
    params = {"plan_doc": None, "plan_content": "", "plan_file": str(tmp_path / "roce_qos_plan.yml"),
              "plan_src": ""}
    plan, text = apply_run.read_plan(None, params)
    assert text is None and plan == Q.load_plan(None, None) and "yaml" not in imported
    (tmp_path / "roce_qos_plan.yml").write_text("\n")
    plan, text = apply_run.read_plan(None, params)
    assert text is None and plan["source"] == params["plan_file"] and "yaml" not in imported
    (tmp_path / "roce_qos_plan.yml").write_text("{}\n")
    plan, text = apply_run.read_plan(None, params)  # a plan there is read with PyYAML, as before
    assert "yaml" in imported and text is None and plan == Q.load_plan(params["plan_file"], yaml.safe_load)


def test_a_boot_library_without_its_source_fails_the_call_before_anything_changes(tmp_path, monkeypatch):
    import types

    apply_run = load_module_utils("roce_qos", "roce_qos_apply_run")
    sourceless = types.ModuleType("ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_buffer")
    monkeypatch.setattr(apply_run, "BOOT_LIBS", apply_run.BOOT_LIBS[:1] + (sourceless,))
    boot = {"lib_dir": str(tmp_path), "script": {"path": str(tmp_path / "r.py"), "content": "x\n"},
            "settings": {"path": str(tmp_path / "s.json"), "data": {}},
            "unit": {"path": str(tmp_path / "q.service"), "content": "[Unit]\n"}}
    problems, dummy, wanted = apply_run._checked_input({"interfaces": [], "ets": {}, "boot": boot})
    assert problems == ["the boot script's library roce_qos_buffer has no source in this module's payload"]
    assert wanted == ([], [], []) and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(apply_run, "BOOT_LIBS", apply_run.BOOT_LIBS[:1])
    problems, dummy, (files, links, absent) = apply_run._checked_input({"interfaces": [], "ets": {}, "boot": boot})
    assert problems == [] and [f["path"] for f in files][1] == str(tmp_path / "roce_qos_state.py")


def test_a_boot_unit_without_its_parts_is_a_clear_refusal_not_a_traceback():
    apply_run = load_module_utils("roce_qos", "roce_qos_apply_run")
    for boot in ({"script": {"path": "/x"}}, {"unit": "q.service", "script": {}, "settings": {}}, {"unit": None}):
        problems, dummy, wanted = apply_run._checked_input({"interfaces": [], "ets": {}, "boot": boot})
        assert len(problems) == 1 and problems[0].startswith("boot: the re-apply unit needs script, settings and unit")
        assert wanted == ([], [], [])
