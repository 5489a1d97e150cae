"""declared-settings and the probe's declared/qos sources: what the owner ships stays."""

from __future__ import annotations

import os

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources import declared, qos

from .featurekit import plan_of, rail_host

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")


def probe_root(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return declared.probe(ProbeContext(HostRoot(str(tmp_path))))


def test_nccl_conf_is_read_as_nccl_reads_it(tmp_path):
    d = probe_root(tmp_path, {"/etc/nccl.conf": "# site\nNCCL_IB_TC=41\nNCCL_IB_HCA==mlx5_0\nNCCL_IB_TC=0\n"
                                                 "NCCL_DEBUG= WARN\n"})
    (f,) = d["files"]
    assert f["values"] == {"NCCL_DEBUG": " WARN", "NCCL_IB_HCA": "=mlx5_0", "NCCL_IB_TC": "41"}


def test_rocetunes_own_nccl_conf_is_not_a_declaration(tmp_path):
    d = probe_root(tmp_path, {"/etc/nccl.conf": "# rocetune 0.1.0 format: nccl-conf\nNCCL_IB_TC=106\n"})
    assert d["files"] == []
    f = rail_host(1).build()
    f["declared"] = d
    assert "NCCL_IB_TC" not in plan_of(f).env


def test_the_owners_file_kept_by_the_role_stays_the_declaration(tmp_path):
    """Before and after rocetune replaced /etc/nccl.conf the Features are the same: the rerun
    plans exactly what the first run did (idempotence), and the owner's values survive."""
    vendor = "NCCL_IB_TC=41\nNCCL_IB_SL=0\n"
    before = probe_root(tmp_path / "a", {"/etc/nccl.conf": vendor})
    after = probe_root(tmp_path / "b", {"/etc/nccl.conf": "# rocetune 0.1.0 format: nccl-conf\nNCCL_IB_TC=41\n",
                                        "/etc/nccl.conf.rocetune-orig": vendor})
    assert before == after and after["files"][0]["values"] == {"NCCL_IB_SL": "0", "NCCL_IB_TC": "41"}


def test_gib_env_script_beats_nccl_conf_and_plugin_names_are_left_out(tmp_path):
    d = probe_root(tmp_path, {
        "/usr/local/gib/scripts/set_nccl_env.sh": "#!/bin/bash\nexport NCCL_NET=gIB\nexport NCCL_IB_TC=52\n"
        "export NCCL_CROSS_NIC=0\nexport NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a3u.txtpb\n"
        "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/gib/lib64\n",
        "/etc/nccl.conf": "NCCL_IB_TC=41\n"})
    assert [f["kind"] for f in d["files"]] == ["gcp-gib", "nccl-conf"]
    assert "LD_LIBRARY_PATH" not in d["files"][0]["values"]
    f = rail_host(2).build()
    f["declared"] = d
    plan = plan_of(f)
    assert plan.env["NCCL_IB_TC"] == "52" and plan.env["NCCL_NET"] == "gIB" and plan.env["NCCL_CROSS_NIC"] == "0"
    assert "NCCL_TUNER_CONFIG_PATH" not in plan.env
    assert any("NCCL_TUNER_CONFIG_PATH" in str(w) for w in plan.warnings)


def test_azure_topology_file_is_found_and_a_missing_declared_one_is_a_finding(tmp_path):
    d = probe_root(tmp_path, {"/opt/microsoft/ndv5/topo.xml": "<system/>",
                              "/etc/nccl.conf": "NCCL_TOPO_FILE=/opt/microsoft/ndv4/topo.xml\n"})
    paths = {t["path"]: t for t in d["topology_files"]}
    assert paths["/opt/microsoft/ndv5/topo.xml"]["exists"] and not paths["/opt/microsoft/ndv4/topo.xml"]["exists"]
    f = rail_host(1).build()
    f["declared"] = d
    plan = plan_of(f)
    assert plan.env["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv4/topo.xml"
    assert [x.id for x in plan.findings if x.id == "declared-topo-missing"]


def test_vendor_topology_file_without_declaration_is_used_on_a_flattened_host():
    h = rail_host(2).flattened()
    h.topology_files.append({"path": "/opt/microsoft/ndv4/topo.xml", "vendor": "azure", "exists": True,
                             "declared_by": None})
    plan = plan_of(h.build())
    d = plan.get("NCCL_TOPO_FILE")
    assert d.value == "/opt/microsoft/ndv4/topo.xml" and d.rule_id == "nccl-topo-file" and not plan.files


def test_declared_hca_missing_compute_ports_is_a_contradiction_with_evidence():
    plan = plan_of(rail_host(4).declare(NCCL_IB_HCA="mlx5_0,mlx5_1").build())
    assert plan.env["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
    (f,) = [f for f in plan.findings if f.id == "declared-contradicted"]
    assert "mlx5_2:1, mlx5_3:1" in f.message and f.subject == "NCCL_IB_HCA"
    assert (f.rule, f.kind, f.evidence["file"], f.evidence["value"]) == \
        ("nccl-ib-hca", "rule", "/etc/nccl.conf", "mlx5_0,mlx5_1")
    assert f.fix and "param.cc" in f.source


def test_declared_gid_index_that_is_not_v2_is_a_contradiction():
    plan = plan_of(rail_host(2, nccl="2.18.5").declare(NCCL_IB_GID_INDEX="2").build())
    assert plan.env["NCCL_IB_GID_INDEX"] == "2"
    (f,) = [f for f in plan.findings if f.id == "declared-contradicted"]
    assert "not a routable RoCE v2 GID" in f.message


def test_declared_value_on_an_auto_selecting_nccl_is_still_checked():
    plan = plan_of(rail_host(2, nccl="2.23.4").declare(NCCL_IB_GID_INDEX="1").build())
    assert plan.env["NCCL_IB_GID_INDEX"] == "1"
    assert [f for f in plan.findings if f.id == "declared-contradicted"]


def test_mlnx_qos_and_dcb_parsers_agree_with_the_recorded_outputs():
    with open(os.path.join(FIXTURES, "hosts", "dgx-h100-rails-dmabuf", "commands",
                           "mlnx_qos_-i_enp24s0np0.txt")) as fh:
        m = qos.mlnx_qos_state(fh.read())
    assert m["trust"] == "dscp" and m["pfc_enabled"] == [3] and m["dscp_prio"][26] == 3
    with open(os.path.join(FIXTURES, "qos", "mlnx_qos-i-eth2-community.txt")) as fh:
        assert qos.mlnx_qos_state(fh.read())["trust"] in ("pcp", "dscp")
    with open(os.path.join(FIXTURES, "qos", "dcb-app-show-N-manpage.txt")) as fh:
        app = fh.read()
    with open(os.path.join(FIXTURES, "qos", "dcb-pfc-show-manpage.txt")) as fh:
        pfc = fh.read()
    d = qos.dcb_state(app, pfc)
    assert d == {"trust": "dscp", "dscp_prio": {0: 0, 24: 2, 48: 6}, "pfc_enabled": [6, 7]}
