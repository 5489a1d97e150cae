"""compare_with_plan: one case per difference id, on the real logs of tests/fixtures/nccl-logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rocetune.nccl.log import read_log
from rocetune.nccl.log_compare import DIFFERENCES, PlanFacts, compare_with_plan

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"
PLUGIN_JOB = ("nccl-tests-321-2.26.5-plugin-4ranks-a-init.log", "nccl-tests-321-2.26.5-plugin-4ranks-b-graph.log",
              "nccl-tests-321-2.26.5-plugin-4ranks-c-env.log")
# what the rxe logs' own runs set (SOURCES.md)
RXE_ENV = {"NCCL_IB_HCA": "rxe0", "NCCL_IB_GID_INDEX": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_ALGO": "Ring",
           "NCCL_PROTO": "Simple", "NCCL_MAX_NCHANNELS": "1", "NCCL_DEBUG": "INFO"}
# gdr line from graph/paths.cc v2.21.5-1 :414 ("GPU Direct RDMA Disabled for GPU %lx / HCA %lx (distance %d > %d)"),
# built from the format: no real log at hand shows it
GDR_PATH_OFF = ("gpu-a:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
                "gpu-a:10:11 [0] NCCL INFO Using network IB\n"
                "gpu-a:10:11 [0] NCCL INFO GPU Direct RDMA Disabled for GPU %x / HCA %x (distance %d > %d)\n"
                % (0x1b000, 0x1c000, 7, 5))
# misc/param.cc v2.28.9-1 :86 ("Invalid value %s for %s, using default %lld."), built from the format
INVALID = ("gpu-a:10:11 [0] NCCL INFO Using network IB\n"
           "gpu-a:10:11 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 20.\n"
           "gpu-a:10:11 [0] NCCL INFO Invalid value %s for %s, using default %d.\n"
           % ("8k", "NCCL_IB_QPS_PER_CONNECTION", 1))


# init.cc v2.30.7-1 :1328-1337 ("Rank %d has %d local Net devices (max %d).", then "Detected mixed local Net
# device counts across ranks (min %d, max %d). Ignoring due to NCCL_IGNORE_NET_MISMATCH."), built from the format
MISMATCH = ("gpu-a:10:11 [0] NCCL INFO Using network IB\n"
            "gpu-a:10:11 [0] NCCL INFO Rank %d has %d local Net devices (max %d).\n"
            "gpu-a:10:11 [0] NCCL INFO Detected mixed local Net device counts across ranks (min %d, max %d). Ignoring "
            "due to NCCL_IGNORE_NET_MISMATCH.\n" % (3, 7, 8, 7, 8))
# plugin/env.cc v2.30.7-1 :63 ("Successfully loaded external env plugin %s"), built from the format
ENV_PLUGIN = ("gpu-a:10:11 [0] NCCL INFO Successfully loaded external env plugin %s\n"
              "gpu-a:10:11 [0] NCCL INFO Using network IB\n" % "libnccl-env-site.so")

# Port events, built from NCCL's formats: transport/net_ib/common.cc at v2.30.7-1 (:153 "NET/IB : %s:%d GID
# table changed", :179 "... Got non-fatal async event: %s(%d)", :123 "... async fatal event: %s") and at
# v2.31.2-1 (889806836: ncclIbEventGidChange, ncclIbUpdateDeviceSpeed, ncclIbAsyncThreadMain); the version
# line is init.cc's "NCCL version %s" INFO (2.22.3+). No real log of these events was found published.
def _v(version: str) -> str:
    return f"gpu-a:10:11 [0] NCCL INFO NCCL version {version}+cuda12.9\n" \
           "gpu-a:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"


def _warn(message: str) -> str:
    return f"\ngpu-a:10:11 [0] transport/net_ib/common.cc:153 NCCL WARN {message}\n"


RECOVERY_ON = "gpu-a:10:11 [0] NCCL INFO NCCL_IB_RESILIENCY_PORT_RECOVERY set by environment to 1.\n"
PORT_ERROR = _warn("NET/IB : mlx5_0:1 Got non-fatal async event: port error(10)")
GID_CHANGED = _v("2.30.7") + _warn("NET/IB : mlx5_0:1 GID table changed")
GID_REFRESHED = (_v("2.31.2") + "gpu-a:10:11 [0] NCCL INFO NET/IB: ncclIbEventGidChange: GID table changed on mlx5_0:1\n"
                 "gpu-a:10:11 [0] NCCL INFO NET/IB : mlx5_0:1 GID refreshed: idx 3 -> 5, gid ::ffff:10.0.0.1 -> "
                 "::ffff:10.0.0.9\n")
GID_REFRESH_FAILED = _v("2.31.2") + _warn("NET/IB : mlx5_0:1 marking device with fatal error after GID-change "
                                          "event handler failed")
SPEED = _v("2.31.2") + "gpu-a:10:11 [0] NCCL INFO NET/IB : mlx5_0:1 speed change detected: 400000 -> 200000 Mbps\n"
FATAL = _v("2.30.7") + _warn("NET/IB : mlx5_0:1 async fatal event: local catastrophic error")
# a 2.32-era src/debug.cc ncclDebugLogV: "[%d] %s:%d (%s) NCCL ATTN %s" after the WARN's leading newline
ATTN = _v("2.32.3") + "\ngpu-a:10:11 [0] init.cc:1500 (ncclCommInitRankFunc) NCCL ATTN a notice\n"


def log(*names: str) -> str:
    return "".join((LOGS / n).read_text() for n in names)


def diffs(text: str, plan: dict, facts: PlanFacts = None):
    return compare_with_plan(read_log(text), plan, facts)


def by_id(ds, diff_id):
    return [d for d in ds if d.id == diff_id]


# (id, log text, plan, what the one difference of that id must say)
CASES = [
    ("nccl-log-socket-fallback", log("nccl-1267-2.19.3-ib-no-device-socket.log"),
     {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_GID_INDEX": "3"}, "NCCL used Socket after 'NET/IB : No device found'"),
    ("nccl-log-network-differs", log(*PLUGIN_JOB), {"NCCL_NET": "IB"},
     "NCCL used network 'NCCL RDMA Plugin v6'; the plan sets NCCL_NET=IB"),
    ("nccl-log-network-unseen", log("nccl-676-2.11.4-socket-two-hosts.log"), {"NCCL_NET": "Socket"},
     "no 'Using network' line"),
    ("nccl-log-device-excluded", log("rxe-2.20.5-ring2_node0.log"), {"NCCL_IB_HCA": "=rxe0:2"},
     "NCCL used rxe0 port 1 (RoCE), which NCCL_IB_HCA==rxe0:2 does not select"),
    ("nccl-log-device-unused", log("nccl-tests-350-2.16.5-roce-ib-gdr.log"), {"NCCL_IB_HCA": "=mlx5_0,mlx5_2,mlx5_3"},
     "NCCL_IB_HCA==mlx5_0,mlx5_2,mlx5_3 names mlx5_3, but NCCL used only mlx5_0:1, mlx5_2:1"),
    ("nccl-log-gdr-disabled", log("nccl-1537-roce-gdr-disabled.log"), {"NCCL_NET_GDR_LEVEL": "SYS"},
     "GPU Direct RDMA is disabled for mlx5_0; the plan sets NCCL_NET_GDR_LEVEL=SYS"),
    ("nccl-log-gdr-path-disabled", GDR_PATH_OFF, {"NCCL_NET_GDR_LEVEL": "PHB"},
     "GPU Direct RDMA is off for GPU 1b000 and HCA 1c000: distance 7 is above level 5"),
    ("nccl-log-gid-index-differs", log("rxe-2.20.5-ring2_node0.log"), {"NCCL_IB_GID_INDEX": "3"},
     "rxe0's queue pairs use GID index 1; the plan sets NCCL_IB_GID_INDEX=3"),
    ("nccl-log-var-differs", log("rxe-2.20.5-nccl_node0.log"), dict(RXE_ENV, NCCL_IB_GID_INDEX="3"),
     "NCCL read NCCL_IB_GID_INDEX=1; the plan sets NCCL_IB_GID_INDEX=3"),
    ("nccl-log-var-invalid", INVALID, {"NCCL_IB_QPS_PER_CONNECTION": "8k"},
     "NCCL could not read NCCL_IB_QPS_PER_CONNECTION=8k and used 1"),
    ("nccl-log-var-not-read", log("rxe-2.20.5-nccl_node0.log"), dict(RXE_ENV, NCCL_IB_TC="106"),
     "the plan sets NCCL_IB_TC=106; NCCL logged other variables but never said it read this one"),
    ("nccl-log-env-not-logged", log("rxe-2.20.5-ring2_node0.log"), dict(RXE_ENV, NCCL_IB_TC="106"),
     "no 'set by environment' line"),
    ("nccl-log-var-not-echoed", log("rxe-2.20.5-nccl_node0.log"), RXE_ENV,
     "a log cannot confirm them: NCCL_DEBUG"),
    ("nccl-log-var-unplanned", log("rxe-2.20.5-nccl_node0.log"), {"NCCL_IB_HCA": "rxe0"},
     "NCCL read NCCL_ALGO=Ring, which the plan does not set"),
    ("nccl-log-warn", log("rxe-2.20.5-nccl_node0.log"), RXE_ENV,
     "NCCL WARN at transport/net_ib.cc:115: Could not find real path of rxe0 (/sys/class/infiniband/rxe0/device)"),
    ("nccl-log-version-mixed", log("nccl-tests-350-2.16.5-roce-ib-gdr.log", "rxe-2.20.5-nccl_node0.log"), {},
     "the log shows NCCL 2.16.5+cuda11.8, 2.20.5+cuda12.4"),
    ("nccl-log-version-differs", log("nccl-1646-2.25.1-version-info.log"), {},
     "the job ran NCCL 2.25.1+cuda12.2; the plan was made for 2.21.5 (the host's libnccl.so.2.21.5)"),
    ("nccl-log-gdr-off", log("nccl-1412-ib-connections-no-gdrdma.log"), {},
     "GPUDirect RDMA was off for the network: 4 of 4 NET connection(s) without '/GDRDMA': GPU 4 / NET 3 (2 of 2), "
     "GPU 5 / NET 3 (2 of 2); the plan expects it (8 GPU-NIC pairs at PIX/PXB, nvidia_peermem)"),
    ("nccl-log-net-mismatch", MISMATCH, {}, "ranks saw between 7 and 8 network devices (rank 3 has 7 of 8); "
     "NCCL went on (NCCL_IGNORE_NET_MISMATCH=1, the default from 2.30.3)"),
    ("nccl-log-env-plugin", ENV_PLUGIN, {}, "NCCL loaded the env plugin 'libnccl-env-site.so'"),
    ("nccl-log-net-plugin", log(*PLUGIN_JOB), {"NCCL_IB_HCA": "=mlx5_bond_6,mlx5_bond_7"},
     "the net plugin 'NCCL RDMA Plugin v6' carried the network traffic"),
    ("nccl-log-gid-changed", GID_CHANGED, {}, "the GID table of mlx5_0:1 changed during the job; NCCL 2.30.7 keeps "
     "the GID it cached"),
    ("nccl-log-gid-refreshed", GID_REFRESHED, {}, "NCCL refreshed its GID (idx 3 -> 5, gid ::ffff:10.0.0.1 -> "
     "::ffff:10.0.0.9)"),
    ("nccl-log-gid-refresh-failed", GID_REFRESH_FAILED, {}, "it marked the device fatal"),
    ("nccl-log-port-down", _v("2.30.7") + RECOVERY_ON + PORT_ERROR, {}, "mlx5_0:1 went down during the job; "
     "NCCL_IB_RESILIENCY_PORT_RECOVERY=1 on RoCE with NCCL 2.30.7"),
    ("nccl-log-speed-change", SPEED, {}, "mlx5_0:1 changed link speed during the job: 400000 -> 200000 Mbps"),
    ("nccl-log-device-fatal", FATAL, {}, "mlx5_0:1 reported a fatal event: local catastrophic error"),
    ("nccl-log-diag", log("nccl-docs-2.31.2-ras-diagnostics-mismatch.log"), {},
     "NCCL DIAG: NCCL environment: mismatch across 8 ranks in comm 0x1234 for NCCL_DEBUG"),
    ("nccl-log-attn", ATTN, {}, "NCCL ATTN at init.cc:1500 (ncclCommInitRankFunc): a notice"),
]
# what each case's plan knew beyond its env (the others: nothing)
FACTS = {
    "nccl-log-version-differs": PlanFacts(nccl_version="2.21.5", nccl_from="the host's libnccl.so.2.21.5"),
    "nccl-log-gdr-off": PlanFacts(gdr_expected=True, gdr_why="8 GPU-NIC pairs at PIX/PXB, nvidia_peermem"),
}


@pytest.mark.parametrize("diff_id,text,plan,message", CASES, ids=[c[0] for c in CASES])
def test_each_difference(diff_id, text, plan, message):
    found = by_id(diffs(text, plan, FACTS.get(diff_id)), diff_id)
    assert found, f"no {diff_id}"
    assert any(message in d.message for d in found), [d.message for d in found]
    for d in found:
        assert d.severity in ("error", "warning", "info") and d.fix == DIFFERENCES[diff_id].fix


def test_every_registered_id_has_a_case_and_a_doc():
    assert {c[0] for c in CASES} == set(DIFFERENCES)
    for diff_id, kind in DIFFERENCES.items():
        assert re.fullmatch(r"nccl-log(-[a-z0-9]+)+", diff_id)
        assert kind.severity in ("error", "warning", "info") and kind.doc and kind.fix
        assert "\n" not in kind.doc


def test_the_run_as_planned_shows_only_its_warn():
    ds = diffs(log("rxe-2.20.5-nccl_node0.log"), RXE_ENV)
    assert [(d.id, d.severity, d.subject) for d in ds] == [
        ("nccl-log-warn", "warning", "transport/net_ib.cc:115"),
        ("nccl-log-gdr-off", "info", "connections"),  # Soft-RoCE: no GPUDirect RDMA, and no facts said so
        ("nccl-log-var-not-echoed", "info", "variables")]
    facts = PlanFacts(gdr_expected=False, gdr_why="rxe0 is a software RDMA device")
    assert not by_id(compare_with_plan(read_log(log("rxe-2.20.5-nccl_node0.log")), RXE_ENV, facts),
                     "nccl-log-gdr-off")


def test_socket_fallback_evidence_and_no_noise_about_ib_variables():
    ds = diffs(log("nccl-1267-2.19.3-ib-no-device-socket.log"), {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_TC": "106"})
    (d,) = by_id(ds, "nccl-log-socket-fallback")
    assert d.severity == "error" and d.subject == "network"
    assert d.evidence == ("line 9: instance-8g-96c-4:101707:101889 [0] NCCL INFO Using network Socket",
                          "line 6: instance-8g-96c-4:101707:101889 [0] NCCL INFO NET/IB : No device found.",
                          "line 7: instance-8g-96c-4:101707:101889 [0] NCCL INFO NET/Socket : Using "
                          "[0]ens7:10.128.0.33<0>")
    assert not by_id(ds, "nccl-log-var-not-read") and not by_id(ds, "nccl-log-device-unused")


def test_sockets_as_planned_are_no_fallback():
    ds = diffs(log("nccl-676-2.11.4-socket-two-hosts.log"), {"NCCL_NET": "Socket", "NCCL_SOCKET_IFNAME": "en"})
    # gpu02's lines stop before its network line; NCCL never logs NCCL_NET (the network line shows it)
    assert [d.id for d in ds] == ["nccl-log-network-unseen", "nccl-log-var-not-echoed"]
    assert ds[0].processes == ("gpu02:20868",) and ds[1].message.endswith(": NCCL_NET")
    assert not by_id(diffs(log("nccl-1267-2.19.3-ib-no-device-socket.log"), {"NCCL_IB_DISABLE": "1",
                                                                            "NCCL_IB_HCA": "mlx5"}),
                     "nccl-log-socket-fallback")


def test_hca_syntax_decides_what_is_excluded():
    text = log("nccl-tests-350-2.16.5-roce-ib-gdr.log")  # used mlx5_0:1 (RoCE) and mlx5_2:1 (IB)
    excluded = {hca: sorted(d.subject for d in by_id(diffs(text, {"NCCL_IB_HCA": hca}), "nccl-log-device-excluded"))
                for hca in ("mlx5", "=mlx5_0", "^mlx5_2", "mlx5_0:1,mlx5_2:2", "=mlx5_0:1,mlx5_2:1", "^=mlx5_0")}
    assert excluded == {"mlx5": [], "=mlx5_0": ["mlx5_2:1"], "^mlx5_2": ["mlx5_2:1"],
                        "mlx5_0:1,mlx5_2:2": ["mlx5_2:1"], "=mlx5_0:1,mlx5_2:1": [], "^=mlx5_0": ["mlx5_0:1"]}


def test_gdr_disabled_is_an_error_only_when_the_plan_asks_for_gdr():
    text = log("nccl-1537-roce-gdr-disabled.log")
    asked = by_id(diffs(text, {"NCCL_NET_GDR_LEVEL": "SYS"}), "nccl-log-gdr-disabled")
    unasked = by_id(diffs(text, {"NCCL_IB_HCA": "mlx5"}), "nccl-log-gdr-disabled")
    assert [(d.subject, d.severity) for d in asked] == [("mlx5_0", "error"), ("mlx5_1", "error")]
    assert [(d.subject, d.severity) for d in unasked] == [("mlx5_0", "warning"), ("mlx5_1", "warning")]
    assert asked[0].evidence == ("line 5: hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled "
                                 "for HCA 0 'mlx5_0'",)


def test_gdr_disabled_on_a_host_without_a_gpu_does_not_ask_for_nvidia_peermem():
    text = log("nccl-1537-roce-gdr-disabled.log")
    with_gpus = by_id(diffs(text, {}, PlanFacts(gpus=8)), "nccl-log-gdr-disabled")
    no_gpu = by_id(diffs(text, {}, PlanFacts(gpus=0)), "nccl-log-gdr-disabled")
    assert all("nvidia_peermem" in d.fix for d in with_gpus) and with_gpus
    assert no_gpu and all("nvidia_peermem" not in d.fix and "no GPU" in d.fix for d in no_gpu)


def test_values_compare_as_nccl_reads_them():
    text = log(*PLUGIN_JOB)
    same = {"NCCL_NET_GDR_LEVEL": "1", "NCCL_P2P_LEVEL": "NVL", "NCCL_IB_TC": "0xa0", "NCCL_IB_GID_INDEX": "3",
            "NCCL_SOCKET_IFNAME": "bond0", "NCCL_IB_TIMEOUT": "21", "NCCL_IB_QPS_PER_CONNECTION": "4",
            "NCCL_PXN_DISABLE": "0"}
    assert not by_id(diffs(text, same), "nccl-log-var-differs")
    (d,) = by_id(diffs(text, dict(same, NCCL_NET_GDR_LEVEL="2")), "nccl-log-var-differs")
    assert d.subject == "NCCL_NET_GDR_LEVEL" and d.message.startswith(
        "NCCL read NCCL_NET_GDR_LEVEL=PIX; the plan sets NCCL_NET_GDR_LEVEL=2 (in 4 of 4 processes")
    assert d.processes == ("vm-host38:33957", "vm-host38:33958", "vm-host40:34001", "vm-host40:34002")
    assert len(d.evidence) == 3  # the first few lines, not one per process


def test_ib_variables_a_plugin_does_not_log_are_info_only():
    ds = diffs(log(*PLUGIN_JOB), {"NCCL_IB_HCA": "mlx5_bond_6,mlx5_bond_7", "NCCL_COLLNET_ENABLE": "0"})
    assert [(d.subject, d.severity) for d in by_id(ds, "nccl-log-var-not-read")] == [
        ("NCCL_COLLNET_ENABLE", "warning"), ("NCCL_IB_HCA", "info")]


def test_one_warn_seen_by_three_processes_is_one_difference():
    names = ["rxe-2.20.5-nccl_node0.log", "rxe-2.20.5-nccl_node1.log", "rxe-2.20.5-nccl_node2.log"]
    (d,) = by_id(diffs(log(*names), RXE_ENV), "nccl-log-warn")
    assert d.processes == ("node0:4222", "node1:4119", "node2:4174")
    assert "(in 3 of 3 processes" in d.message


def test_result_is_sorted_json_and_repeatable():
    text, plan = log(*PLUGIN_JOB), {"NCCL_NET": "IB", "NCCL_IB_TC": "106", "NCCL_DEBUG": "INFO"}
    a, b = diffs(text, plan), diffs(text, dict(reversed(list(plan.items()))))
    assert a == b
    order = {"error": 0, "warning": 1, "info": 2}
    assert [(order[d.severity], d.id, d.subject) for d in a] == sorted((order[d.severity], d.id, d.subject) for d in a)
    json.dumps([d.to_dict() for d in a])


def test_the_doc_page_lists_every_id():
    page = (Path(__file__).resolve().parents[3] / "docs" / "nccl-log.md").read_text()
    for diff_id, kind in DIFFERENCES.items():
        assert f"| `{diff_id}` | {kind.severity} | {kind.doc} |" in page


@pytest.mark.parametrize("version,severity", [("2.30.3", "error"), ("2.30.7", "error"), ("2.31.2", "warning")])
def test_port_down_with_recovery_on_roce_is_graded_by_release(version, severity):
    (d,) = by_id(diffs(_v(version) + RECOVERY_ON + PORT_ERROR, {}), "nccl-log-port-down")
    assert d.severity == severity
    if version == "2.31.2":
        assert "refreshes its GID" in d.message


def test_port_down_without_recovery_is_a_warning_naming_the_port():
    (d,) = by_id(diffs(_v("2.30.7") + PORT_ERROR, {}), "nccl-log-port-down")
    assert (d.severity, d.subject) == ("warning", "mlx5_0:1")


def test_a_gid_change_before_2_28_3_is_event_18_and_2_31_2_no_longer_keeps_the_cached_gid():
    old = _v("2.25.1") + _warn("NET/IB : mlx5_0:1 unknown event type (18)")
    assert by_id(diffs(old, {}), "nccl-log-gid-changed")
    assert not by_id(diffs(_v("2.25.1") + _warn("NET/IB : mlx5_0:1 unknown event type (19)"), {}),
                     "nccl-log-gid-changed")
    # 2.31.2's INFO "GID table changed on" is followed by its refresh: no gid-changed error
    assert not by_id(diffs(GID_REFRESHED, {}), "nccl-log-gid-changed")


def test_diag_ok_lines_raise_nothing_and_are_kept():
    r = read_log(log("nccl-docs-2.31.2-ras-diagnostics.log") + log("nccl-docs-2.31.2-diagnostics.log"))
    assert [d.tag for d, _ in r.diag] == [None, "OK", "OK", "OK", "OK", "OK", None, None, "OK", None]
    assert [d.check for d, _ in r.diag if d.tag] == ["GPU inventory", "CUDA driver version", "ECC", "NVLink",
                                                     "NCCL environment", "p2p"]
    assert not by_id(compare_with_plan(r, {}), "nccl-log-diag")


def test_an_empty_log_says_a_log_sink_may_have_taken_the_lines():
    from rocetune.errors import RocetuneError

    with pytest.raises(RocetuneError) as e:
        read_log("")
    assert "NCCL_LOG_PLUGIN" in (e.value.hint or "")


# graph/paths.cc v2.28.9-1 :473-483 ("GPU Direct RDMA %s for GPU %lx / HCA %lx (distance %d %s %d), read %d mode %s")
# and topo.cc ("NET/%s : GPU Direct RDMA %s for HCA %d '%s'"), transport/net.cc's connection line, built
# from the formats: both HCAs say Enabled, the pair is off by distance (the N5 case of the 2.28.9 log)
GDR_BY_DISTANCE = (
    "gpu-a:10:11 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
    "gpu-a:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
    "gpu-a:10:11 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
    "gpu-a:10:11 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'\n"
    "gpu-a:10:11 [0] NCCL INFO GPU Direct RDMA Disabled for GPU %x / HCA %x (distance %d > %d), read %d mode %s\n"
    "gpu-a:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n" % (0x1b000, 0, 9, 6, 0, "Default"))


def test_gdr_off_by_distance_with_peer_memory_loaded_is_not_a_module_problem():
    ds = diffs(GDR_BY_DISTANCE, {}, PlanFacts(gdr_expected=True, gdr_why="pairs at PIX"))
    (off,) = by_id(ds, "nccl-log-gdr-off")
    assert "every HCA has GPU Direct RDMA enabled" in off.message and "(distance 9 > 6 (SYS beyond P2C))" in off.message
    assert "nvidia_peermem" not in off.fix.split("rather")[0] and "NCCL_TOPO_DUMP_FILE" in off.fix
    (pair,) = by_id(ds, "nccl-log-gdr-path-disabled")
    assert "(SYS beyond P2C in NCCL 2.28.9)" in pair.message
    assert "raise NCCL_NET_GDR_LEVEL" not in pair.fix


def test_the_same_distance_is_another_path_in_another_release():
    from rocetune.nccl.topo_paths import path_name

    assert [path_name(4, v) for v in ((2, 25, 1), (2, 26, 2))] == ["PXB", "PIX"]
    assert [path_name(6, v) for v in ((2, 27, 3), (2, 27, 5))] == ["PXN", "P2C"]
    assert path_name(5, None) is None


def test_a_port_that_came_back_is_said_to_have_flapped():
    up = _warn("NET/IB : mlx5_0:1 Got non-fatal async event: port active(9)")
    (d,) = by_id(diffs(_v("2.31.2") + PORT_ERROR + up, {}), "nccl-log-port-down")
    assert "went down during the job and came back up" in d.message and len(d.evidence) == 2
