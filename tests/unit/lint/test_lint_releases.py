"""lint against the host's NCCL release: variables it does not read, rail ids it skips, nccl.conf
CRLF that 2.30.3+ drops, and NCCL_GIN_IB_TC against the QoS plan like NCCL_IB_TC."""

from __future__ import annotations

from rocetune.lint.checks import lint_text
from rocetune.lint.host import HostNames
from rocetune.model.qos import default_plan


def ids(text, name="job.env", fmt="sh", **kw):
    _, found = lint_text(text, name, fmt, **kw)
    return {(f.id, f.severity, f.key) for f in found}


def host(version):
    return HostNames.from_features({"kernel": {"nccl": {"version": version, "path": None}}})


NEW = "NCCL_IB_RESILIENCY_PORT_FAILOVER=1\nNCCL_IB_SUBNET_AWARE_ROUTING=1\n"


def test_variables_of_newer_releases_are_flagged_against_an_older_host():
    found = ids(NEW, host=host("2.21.5"))
    assert ("var-not-in-release", "warning", "NCCL_IB_RESILIENCY_PORT_FAILOVER") in found
    assert ("var-not-in-release", "warning", "NCCL_IB_SUBNET_AWARE_ROUTING") in found
    _, got = lint_text(NEW, "job.env", "sh", host=host("2.21.5"))
    msg = [f.message for f in got if f.key == "NCCL_IB_SUBNET_AWARE_ROUTING"][0]
    assert "read by NCCL 2.30.7 and later" in msg
    assert not {i for i in ids(NEW, host=host("2.30.7")) if i[0] == "var-not-in-release"}
    # 2.29.7 reads the port failover, not subnet-aware routing
    assert {i[2] for i in ids(NEW, host=host("2.29.7")) if i[0] == "var-not-in-release"} == {
        "NCCL_IB_SUBNET_AWARE_ROUTING"}


def test_without_a_known_release_nothing_is_flagged():
    assert not {i for i in ids(NEW) if i[0] == "var-not-in-release"}
    assert not {i for i in ids(NEW, host=HostNames(ib={"mlx5_0": [1]})) if i[0] == "var-not-in-release"}


def test_rail_ids_skipped_before_2_30_7():
    line = "NCCL_IB_HCA==mlx5_0:1:0,mlx5_1:1:1\n"
    assert ("hca-rail-ids-ignored", "info", "NCCL_IB_HCA") in ids(line, host=host("2.28.9"))
    assert not {i for i in ids(line, host=host("2.30.7")) if i[0] in ("hca-rail-ids-ignored", "bad-value")}


def test_crlf_in_nccl_conf_is_a_note_from_2_30_3():
    conf = "NCCL_SOCKET_IFNAME=bond0\r\nNCCL_IB_TC=106\r\n"
    assert ("crlf-line-endings", "error", None) in ids(conf, "nccl.conf", "nccl-conf", host=host("2.29.7"))
    assert ("crlf-line-endings", "info", None) in ids(conf, "nccl.conf", "nccl-conf", host=host("2.30.3"))
    assert ("crlf-line-endings", "error", None) in ids(conf, "nccl.conf", "nccl-conf")  # release unknown
    # bash keeps the CR whatever NCCL does
    assert ("crlf-line-endings", "error", None) in ids("export NCCL_IB_TC=106\r\n", host=host("2.30.7"))


def test_gin_traffic_class_is_held_to_the_qos_plan():
    qos = default_plan()  # RoCE data on DSCP 26
    assert ("tc-contradicts-qos", "error", "NCCL_GIN_IB_TC") in ids("NCCL_GIN_IB_TC=41\n", qos=qos)
    assert not {i for i in ids(f"NCCL_GIN_IB_TC={qos.traffic_class}\n", qos=qos) if i[0].startswith("tc-")}
    assert not {i for i in ids("NCCL_GIN_IB_TC=-1\n", qos=qos) if i[0].startswith("tc-")}
