"""The Plan: decisions with rule ids, conflicts refused, user overrides win and are recorded."""

from __future__ import annotations

import json
import types

import pytest

from rocetune.errors import ExitCode, RocetuneError
from rocetune.model.plan import Decision, Overrides
from rocetune.model.qos import load_text
from rocetune.planner import build_plan

from .rules.featurekit import Host, rail_host


def fake_rule(rule_id, key, value):
    def rule(features, ctx):
        return [ctx.decision(key, value, "because")]
    return types.SimpleNamespace(ID=rule_id, rule=rule)


def test_every_decision_names_its_rule_and_reason():
    plan = build_plan(rail_host().build())
    assert plan.decisions and all(d.rule_id and d.reason for d in plan.decisions)
    assert [d.key for d in plan.decisions] == sorted(d.key for d in plan.decisions)


def test_two_rules_setting_one_key_is_an_error_naming_both(monkeypatch):
    import rocetune.planner as rules

    monkeypatch.setattr(rules, "RULES", (fake_rule("rule-a", "NCCL_IB_TC", "106"),
                                         fake_rule("rule-b", "NCCL_IB_TC", "104")))
    with pytest.raises(RocetuneError) as e:
        build_plan(rail_host().build())
    assert "rule-a" in e.value.message and "rule-b" in e.value.message
    assert e.value.code == ExitCode.INTERNAL


def test_a_rule_emitting_a_name_nccl_does_not_read_is_a_bug(monkeypatch):
    import rocetune.planner as rules

    monkeypatch.setattr(rules, "RULES", (fake_rule("folklore", "NCCL_TOPOLOGY_AWARE", "1"),))
    with pytest.raises(RocetuneError) as e:
        build_plan(rail_host().build())
    assert "NCCL_TOPOLOGY_AWARE" in e.value.message


@pytest.mark.parametrize("host", ["rail", "ib", "nonic", "flat"])
def test_no_folklore_in_any_plan(host):
    from rocetune.nccl.catalog import load_catalog

    h = {"rail": rail_host(), "nonic": Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=100).gpu(0)}.get(host)
    if host == "ib":
        h = Host().iface("eth0", "10.0.0.5/24", default=True).gpu(0)
        h.rdma("mlx5_ib0", link_layer="InfiniBand", netdev="ib0", paths={0: "PIX"})
    if host == "flat":
        h = rail_host(2).flattened()
    plan = build_plan(h.build(), local_rank=0)
    cat = load_catalog()
    for d in plan.decisions:
        assert d.key not in ("NCCL_TOPOLOGY_AWARE", "NCCL_ALGO", "NCCL_PROTO", "CUDA_VISIBLE_DEVICES")
        if d.key.startswith("NCCL_"):
            assert cat.known(d.key), d.key


def test_set_wins_and_is_recorded_with_what_it_replaced():
    ov = Overrides.from_args(["NCCL_IB_TC=104", "NCCL_DEBUG=WARN"], [])
    plan = build_plan(rail_host().build(), ov, qos=load_text("data:\n  dscp: 26\n", "qos.yml"))
    tc = plan.get("NCCL_IB_TC")
    assert (tc.value, tc.rule_id) == ("104", "override")
    assert tc.evidence["origin"] == "--set"
    assert tc.evidence["replaces"]["rule_id"] == "traffic-class" and tc.evidence["replaces"]["value"] == "106"
    assert plan.get("NCCL_DEBUG").rule_id == "override"


def test_unset_removes_and_is_recorded():
    plan = build_plan(rail_host(2).build(), Overrides.from_args([], ["NCCL_IB_HCA"]))
    assert plan.get("NCCL_IB_HCA") is None
    assert plan.unset == [{"key": "NCCL_IB_HCA", "origin": "--unset", "rule_id": "nccl-ib-hca",
                           "value": "=mlx5_0:1,mlx5_1:1"}]


def test_unsetting_the_topology_file_drops_the_xml_too():
    plan = build_plan(rail_host(2).flattened().build(), Overrides.from_args([], ["NCCL_TOPO_FILE"]),
                      topo_path="/x/nccl-topo.xml")
    assert plan.get("NCCL_TOPO_FILE") is None and plan.files == []


def test_config_file_format_and_command_line_precedence(tmp_path):
    cfg = tmp_path / "overrides.conf"
    cfg.write_text("# site choices\nNCCL_IB_QPS_PER_CONNECTION=4   # measured on our fabric\n"
                   "NCCL_IB_TIMEOUT = 22\nunset UCX_NET_DEVICES\n\nNCCL_DEBUG=INFO\n")
    ov = Overrides.from_file(str(cfg)).merged(Overrides.from_args(["NCCL_DEBUG=WARN"], []))
    plan = build_plan(rail_host().build(), ov)
    e = plan.env
    assert e["NCCL_IB_QPS_PER_CONNECTION"] == "4" and e["NCCL_IB_TIMEOUT"] == "22"
    assert e["NCCL_DEBUG"] == "WARN" and "UCX_NET_DEVICES" not in e
    assert plan.get("NCCL_IB_QPS_PER_CONNECTION").evidence["origin"] == f"{cfg}:2"


@pytest.mark.parametrize("bad", ["NCCL IB TC=1", "1NCCL=2", "X;rm -rf /=1", "=1", "novalue"])
def test_bad_override_names_are_refused(bad):
    with pytest.raises(RocetuneError) as e:
        Overrides.from_args([bad], [])
    assert e.value.code == ExitCode.USAGE


def test_bad_config_line_names_the_line(tmp_path):
    cfg = tmp_path / "o.conf"
    cfg.write_text("NCCL_DEBUG=WARN\nthis is not an assignment\n")
    with pytest.raises(RocetuneError) as e:
        Overrides.from_file(str(cfg))
    assert f"{cfg}:2" in e.value.message and e.value.code == ExitCode.INPUT


def test_override_with_an_unknown_nccl_name_is_kept_but_warned():
    plan = build_plan(rail_host().build(), Overrides.from_args(["NCCL_IB_RETRY_COUNT=7"], []))
    assert plan.env["NCCL_IB_RETRY_COUNT"] == "7"
    assert any("NCCL_IB_RETRY_CNT" in str(w) for w in plan.warnings)


def test_unset_of_an_unplanned_key_is_a_note():
    plan = build_plan(rail_host().build(), Overrides.from_args([], ["NCCL_ALGO"]))
    assert any("nothing to unset" in str(n) for n in plan.notes)


def test_plan_dict_is_json_and_deterministic():
    f = rail_host().build()
    qos = load_text("data:\n  dscp: 26\n", "qos.yml")
    a = json.dumps(build_plan(f, qos=qos).to_dict(), sort_keys=True)
    b = json.dumps(build_plan(json.loads(json.dumps(f)), qos=qos).to_dict(), sort_keys=True)
    assert a == b
    d = json.loads(a)
    assert d["env"]["NCCL_IB_TC"] == "106" and d["qos"]["traffic_class"] == 106
    assert set(d) >= {"env", "decisions", "warnings", "notes", "findings", "ranks", "files", "unset", "reports"}


def test_decision_refuses_bad_names_and_non_strings():
    with pytest.raises(ValueError):
        Decision("BAD NAME", "1", "r")
    with pytest.raises(TypeError):
        Decision("NCCL_IB_TC", 106, "r")
