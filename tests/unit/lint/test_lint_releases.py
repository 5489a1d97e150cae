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
    assert "added in NCCL 2.30.7, newer than the host's NCCL 2.21.5" in msg
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


# The names 2.31.2 added (v2.31.2-1 at 889806836: net_ib/common.cc, gin/gin_host.cc, env.rst, the RAS and
# diagnostics pages) and 2.32.3's (its release notes, NVIDIA/nccl#2419)
NEWER_2_31 = ("NCCL_RUN_RAS_DIAGNOSTICS=1\nNCCL_RUN_DIAGNOSTICS=1\nNCCL_IB_EVENT_BASED_LB=1\n"
              "NCCL_IB_PKEY_VALUE=0x8111\nNCCL_GIN_PROXY_NTHREADS=2\n")


def test_the_names_2_31_2_added_are_no_typos():
    found = ids(NEWER_2_31)
    assert not {i for i in found if i[0] in ("unknown-name", "misspelled-name")}, found


def test_a_name_newer_than_the_host_is_said_to_be_so():
    _, got = lint_text(NEWER_2_31, "job.env", "sh", host=host("2.30.7"))
    newer = {f.key: f.message for f in got if f.id == "var-not-in-release"}
    assert set(newer) == {"NCCL_RUN_RAS_DIAGNOSTICS", "NCCL_RUN_DIAGNOSTICS", "NCCL_IB_EVENT_BASED_LB",
                          "NCCL_IB_PKEY_VALUE", "NCCL_GIN_PROXY_NTHREADS"}
    assert newer["NCCL_RUN_DIAGNOSTICS"].startswith(
        "NCCL_RUN_DIAGNOSTICS was added in NCCL 2.31.2, newer than the host's NCCL 2.30.7")
    assert not {i for i in ids(NEWER_2_31, host=host("2.31.2")) if i[0] == "var-not-in-release"}
    _, got = lint_text("NCCL_WIN_REGISTER_GIN=1\n", "job.env", "sh", host=host("2.31.2"))
    assert [f.message for f in got if f.id == "var-not-in-release"] == [
        "NCCL_WIN_REGISTER_GIN was added in NCCL 2.32.3, newer than the host's NCCL 2.31.2: NCCL ignores it"]


def test_an_unknown_name_says_how_far_the_catalog_reaches():
    _, got = lint_text("NCCL_NOT_A_THING_AT_ALL=1\n", "job.env", "sh")
    (f,) = [f for f in got if f.id == "unknown-name"]
    assert "not read by NCCL up to 2.32.3" in f.message


def test_a_traffic_class_the_hosts_nics_carry_without_pfc_is_warned_without_a_qos_plan():
    """dgx-h100-rails-dmabuf records real `mlnx_qos` output (DSCP trust, PFC on priority 3, DSCP 26 on it):
    NCCL_IB_TC=26 is DSCP 6, priority 0, no PFC; 106 is DSCP 26. No QoS plan is given."""
    from rocetune.probe import collect_features
    from tests.fixtures.roots import root_of

    h = HostNames.from_features(collect_features(root_of("dgx-h100-rails-dmabuf")))
    _, got = lint_text("NCCL_IB_TC=26\n", "job.env", "sh", host=h)
    (f,) = [f for f in got if f.id == "tc-lossy-on-nics"]
    assert f.severity == "warning" and "DSCP 6" in f.message and "PFC is on [3]" in f.message
    assert not [f for f in lint_text("NCCL_IB_TC=106\n", "job.env", "sh", host=h)[1] if f.id == "tc-lossy-on-nics"]
    # with a QoS plan the plan decides (tc-contradicts-qos), not the NICs' state
    planned = ids("NCCL_IB_TC=26\n", host=h, qos=default_plan())
    assert not {i for i in planned if i[0] == "tc-lossy-on-nics"} and ("tc-contradicts-qos", "error", "NCCL_IB_TC") in planned


def test_an_empty_port_in_ib_hca_drops_the_device_before_2_30_7():
    def found(version):
        h = HostNames(ib={"mlx5_0": [1], "mlx5_1": [1]}, nccl=version)
        return [f for f in lint_text("NCCL_IB_HCA==mlx5_0::0,mlx5_1:1:0\n", "job.env", "sh", host=h)[1]
                if f.id == "hca-port-not-found"]

    (old,) = found((2, 30, 4))
    assert old.severity == "error" and "reads it as port 0" in old.message and "mlx5_0:1:0" in old.fix
    assert not found((2, 30, 7))
    (unknown,) = found(None)
    assert unknown.severity == "warning"


def test_nccl_debug_attn_is_a_level():
    # NCCL_DEBUG's options in a 2.32-era src/debug.cc: VERSION, WARN, ATTN, INFO, ABORT, TRACE
    assert not [i for i in ids("NCCL_DEBUG=ATTN\n") if i[0] == "bad-value"]
    assert ("bad-value", "error", "NCCL_DEBUG") in ids("NCCL_DEBUG=LOUD\n")
