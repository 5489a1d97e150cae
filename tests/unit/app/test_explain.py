"""rocetune explain: every planned line traced to its rule and evidence; what NCCL really uses."""

from __future__ import annotations

import json

import pytest

import rocetune.cli.verbs as verbs
from rocetune.cli.main import main
from rocetune.envfiles.write import render
from rocetune.hostfs.root import HostRoot
from rocetune.model.qos import load_text
from rocetune.nccl.conf import conf_values, effective
from rocetune.nccl.conf import layers as effective_layers
from rocetune.planner import build_plan
from tests.unit.rules.featurekit import rail_host

QOS_TEXT = "data:\n  dscp: 26\n  priority: 3\n"


@pytest.fixture(autouse=True)
def _verbs(monkeypatch):
    missing = tuple(v for v in ("explain", "lint") if v not in verbs.NAMES)
    monkeypatch.setattr(verbs, "NAMES", tuple(verbs.NAMES) + missing)


@pytest.fixture
def setup(tmp_path):
    root = tmp_path / "root"
    (root / "etc" / "rocetune").mkdir(parents=True)
    (root / "etc" / "rocetune" / "qos.yml").write_text(QOS_TEXT)  # the fabric's explicit QoS plan
    f = rail_host().build()
    ff = tmp_path / "features.json"
    ff.write_text(json.dumps(f))
    return root, str(ff), f


def explain(capsys, root, *argv):
    code = main(["--root", str(root), "explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def explain_json(capsys, root, *argv):
    code = main(["--root", str(root), "--json", "explain", *argv])
    return code, json.loads(capsys.readouterr()[0])


def test_one_variable_value_rule_reason_evidence(setup, capsys):
    root, ff, _ = setup
    code, out, _ = explain(capsys, root, "NCCL_IB_HCA", "--features", ff)
    assert code == 0
    assert out.startswith("NCCL_IB_HCA='=mlx5_0:1,")  # as a shell line sets it: never NCCL_IB_HCA==
    assert "rule:   nccl-ib-hca  (docs/rules/nccl-ib-hca.md)" in out
    assert "why:" in out and "evidence:" in out and "port=\"mlx5_3:1\"" in out
    assert "NCCL:" in out


def test_every_planned_variable_is_explained(setup, capsys):
    root, ff, f = setup
    for d in build_plan(f, local_rank=0).decisions:
        code, data = explain_json(capsys, root, d.key, "--features", ff, "--local-rank", "0")
        assert code == 0 and data["data"]["planned"] and data["data"]["rule_id"] == d.rule_id
        assert data["data"]["reason"] and data["data"]["evidence"]


def test_all_variables_table(setup, capsys):
    root, ff, f = setup
    code, out, _ = explain(capsys, root, "--features", ff)
    assert code == 0 and out.splitlines()[0].split()[:4] == ["VARIABLE", "VALUE", "RULE", "WHY"]
    for d in build_plan(f).decisions:
        assert d.key in out


def test_variable_not_planned_and_folklore(setup, capsys):
    root, ff, _ = setup
    code, out, _ = explain(capsys, root, "NCCL_IB_TIMEOUT", "--features", ff)
    assert code == 0 and "not set by rocetune" in out and "default in NCCL 2.23.4: 20" in out
    code, out, _ = explain(capsys, root, "NCCL_TOPOLOGY_AWARE", "--features", ff)
    assert "not an NCCL variable" in out and "NCCL_TOPO_FILE" in out


def features_file(tmp_path, nccl):
    ff = tmp_path / f"features-{nccl}.json"
    ff.write_text(json.dumps(rail_host(nccl=nccl).build()))
    return str(ff)


def nccl_line(out):
    return next(line for line in out.splitlines() if line.startswith("  NCCL:"))


def test_defaults_are_those_of_the_release_planned_for(setup, capsys, tmp_path):
    root, _, _ = setup
    code, out, _ = explain(capsys, root, "NCCL_IB_TIMEOUT", "--features", features_file(tmp_path, "2.18.5"))
    line = nccl_line(out)
    assert code == 0 and out.startswith("NCCL_IB_TIMEOUT='20'") and "NCCL 2.18.5 defaults to 18" in out
    assert "default in NCCL 2.18.5: 18 (v2.14.3 src/transport/net_ib.cc:75)" in line
    assert "20 from 2.23.4" in line and "default 20" not in line
    code, data = explain_json(capsys, root, "NCCL_IB_TIMEOUT", "--features", features_file(tmp_path, "2.18.5"))
    assert data["data"]["nccl"]["release_default"]["value"] == 18


def test_gid_index_minus_one_means_nccl_scans_from_2_21_5(setup, capsys, tmp_path):
    root, _, _ = setup
    _, out, _ = explain(capsys, root, "NCCL_IB_GID_INDEX", "--features", features_file(tmp_path, "2.23.4"))
    line = nccl_line(out)
    assert "default in NCCL 2.23.4: -1 = NCCL scans the port's GID table itself" in line
    assert "ncclIbGetGidIndex" in line and "0 before 2.21.5, -1 from 2.21.5" in line
    _, out, _ = explain(capsys, root, "NCCL_IB_GID_INDEX", "--features", features_file(tmp_path, "2.20.5"))
    assert "default in NCCL 2.20.5: 0 = GID index 0 on every port" in nccl_line(out)


def test_unknown_release_and_untracked_variables_say_so(setup, capsys, tmp_path):
    root, _, _ = setup
    ff = tmp_path / "unknown.json"
    ff.write_text(json.dumps(rail_host(nccl=None).build()))
    _, out, _ = explain(capsys, root, "NCCL_IB_TIMEOUT", "--features", str(ff))
    assert "NCCL release unknown: default 20 in the newest release tracked; 14 before 2.14.3" in nccl_line(out)
    _, out, _ = explain(capsys, root, "NCCL_NET_GDR_LEVEL", "--features", str(ff))
    assert "in NCCL 2.30.7 (rocetune's catalog; not tracked per release)" in nccl_line(out)


def test_traffic_class_says_the_switch_side_was_not_checked(setup, capsys):
    root, ff, _ = setup
    _, out, _ = explain(capsys, root, "NCCL_IB_TC", "--features", ff)
    assert "switches' DSCP-to-queue map and PFC were not checked" in out and "switch_side:" in out


def test_override_and_unset_are_explained(setup, capsys):
    root, ff, _ = setup
    code, data = explain_json(capsys, root, "NCCL_IB_TC", "--features", ff, "--set", "NCCL_IB_TC=104")
    assert data["data"]["rule_id"] == "override" and data["data"]["evidence"]["replaces"]["value"] == "106"
    code, out, _ = explain(capsys, root, "NCCL_IB_HCA", "--features", ff, "--unset", "NCCL_IB_HCA")
    assert "removed by --unset" in out and "nccl-ib-hca" in out


@pytest.mark.parametrize("fmt", ["sh", "nccl-conf", "systemd", "docker", "k8s"])
def test_explain_a_generated_env_file(setup, capsys, tmp_path, fmt):
    root, _, f = setup
    plan = build_plan(f, qos=load_text(QOS_TEXT, "qos.yml"))
    path = tmp_path / f"env.{fmt}"
    path.write_text(render(plan, fmt, f))
    code, data = explain_json(capsys, root, "--env", str(path))
    rows = {r["key"]: (r["value"], r["rule_id"]) for r in data["data"]["variables"]}
    assert code == 0 and rows == {d.key: (d.value, d.rule_id) for d in plan.decisions
                                  if fmt != "nccl-conf" or d.key.startswith("NCCL_")}
    code, out, _ = explain(capsys, root, "NCCL_IB_TC", "--env", str(path))
    assert "traffic-class" in out


def test_env_file_without_rule_comments_is_refused(setup, capsys, tmp_path):
    root, _, _ = setup
    p = tmp_path / "hand.sh"
    p.write_text("export NCCL_DEBUG=WARN\n")
    code, _, err = explain(capsys, root, "--env", str(p))
    assert code == 3 and "rule" in err


def test_effective_reads_nccls_config_files_through_the_root(setup, capsys):
    root, ff, _ = setup
    (root / "etc" / "nccl.conf").write_text("NCCL_IB_HCA=mlx5\nNCCL_IB_TC=106\nNCCL_IB_HCA=mlx5_0\n")
    code, data = explain_json(capsys, root, "NCCL_IB_HCA", "--features", ff, "--effective")
    eff = data["data"]["effective"]
    assert eff == {"value": "mlx5", "from": "/etc/nccl.conf", "status": "differs from the plan",
                   "layers": ["/etc/nccl.conf"]}
    code, data = explain_json(capsys, root, "NCCL_IB_TC", "--features", ff, "--effective")
    assert data["data"]["effective"]["status"] == "matches the plan"
    code, data = explain_json(capsys, root, "NCCL_SOCKET_IFNAME", "--features", ff, "--effective")
    assert data["data"]["effective"]["status"] == "not set where NCCL looks"


def test_precedence_process_env_then_user_file_then_etc(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "nccl.conf").write_text("NCCL_A=etc\nNCCL_B=etc\nNCCL_C=etc\nUCX_X=etc\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".nccl.conf").write_text("NCCL_B=home\nNCCL_C=home\n")
    (tmp_path / "site.conf").write_text("NCCL_C=site\n")
    root = HostRoot(str(tmp_path))
    layers = effective_layers(root, {"NCCL_A": "env"}, "/home")
    assert [effective(k, layers) for k in ("NCCL_A", "NCCL_B", "NCCL_C")] == \
        [("env", "process environment"), ("home", "/home/.nccl.conf"), ("home", "/home/.nccl.conf")]
    assert effective("UCX_X", layers) == (None, None), "NCCL's files only set what NCCL reads"
    layers = effective_layers(root, {"NCCL_CONF_FILE": "/site.conf"}, "/home")
    assert effective("NCCL_C", layers) == ("site", "NCCL_CONF_FILE=/site.conf")
    assert effective("NCCL_B", layers) == ("etc", "/etc/nccl.conf"), "~/.nccl.conf is skipped then"


def test_conf_first_occurrence_wins():
    assert conf_values("NCCL_X=1\nNCCL_X=2\n# NCCL_Y=3\n") == {"NCCL_X": "1"}


def test_one_variable_shows_the_findings_about_it_with_fix_and_page(tmp_path, capsys):
    ff = tmp_path / "features.json"
    ff.write_text(json.dumps(rail_host(4).declare(NCCL_IB_HCA="mlx5_0,mlx5_1").build()))
    code, out, _ = explain(capsys, tmp_path, "NCCL_IB_HCA", "--features", str(ff))
    assert code == 0
    block = out[out.index("WARN  declared-contradicted"):].splitlines()
    assert block[1].strip().startswith("NCCL_IB_HCA=mlx5_0,mlx5_1 declared in /etc/nccl.conf")
    assert block[2].strip().startswith("fix: ") and block[3].strip() == "page: docs/checks/declared-contradicted.md"
    code, env = explain_json(capsys, tmp_path, "NCCL_IB_HCA", "--features", str(ff))
    (f,) = env["data"]["findings"]
    assert (f["id"], f["rule"], f["kind"]) == ("declared-contradicted", "nccl-ib-hca", "rule")
    # A variable no finding is about shows none.
    code, env = explain_json(capsys, tmp_path, "NCCL_SOCKET_IFNAME", "--features", str(ff))
    assert "findings" not in env["data"]


def test_explain_cites_the_release_table(setup, capsys):
    root, ff, _ = setup  # rail_host plans for NCCL 2.23.4
    code, out, _ = explain(capsys, root, "NCCL_IB_SUBNET_AWARE_ROUTING", "--features", ff)
    assert code == 0
    assert "releases: read by NCCL 2.30.7 and later; NOT read by the release planned for" in out
    assert "release fact ib-subnet-aware-routing (2.30.7 and later)" in out
    code, data = explain_json(capsys, root, "NCCL_IB_ECE_ENABLE", "--features", ff)
    nccl = data["data"]["nccl"]
    assert nccl["releases"] == {"since": "2.23.4", "last": None} and nccl["read_by_planned_release"] is True
    assert [f["id"] for f in nccl["release_facts"]] == ["ece-roce-slowdown"]


def test_explain_a_name_a_later_release_added(setup, capsys):
    root, ff, _ = setup
    code, out, _ = explain(capsys, root, "NCCL_RUN_DIAGNOSTICS", "--features", ff)
    assert code == 0
    assert "default 0 from NCCL 2.31.2 (v2.31.2-1 (889806836) docs/userguide/source/troubleshooting/" in out
    assert "read by NCCL 2.31.2 and later" in out
