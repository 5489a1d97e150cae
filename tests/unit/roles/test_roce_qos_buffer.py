"""roce_qos and the plan's lossless buffers (`buffer:`): the NIC's buffers read from recorded real
outputs of mlnx_qos and dcb (tests/fixtures/qos/PROVENANCE.md), only the commands that change
something, each backend's form of them, and what the NIC cannot take reported, never failed on."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.unit.roles import QOS_FIXTURES, REPO, load_module_utils

Q = load_module_utils("roce_qos", "roce_qos_state")
B = load_module_utils("roce_qos", "roce_qos_buffer")
T = load_module_utils("roce_qos", "rocetune_qos_tools")  # the readers (tests/unit/probe/parsers/test_qos_tools.py)

CX_PCP = "mlnx_qos-i-eth2-buffers-mlnx-tools-commit.txt"      # max_buffer_size, all priorities in buffer 1
CX_DSCP = "mlnx_qos-dscp-buffers-mlnx-tools-commit.txt"       # older form: sizes end with a comma
OFED_42 = "mlnx_qos-i-eth2-community.txt"                     # no buffer lines (MLNX_OFED 4.2)
NETARBITER = REPO / "tests" / "fixtures" / "corpus" / "mlnx_qos-cx-dscp-trust-pfc3" / "mlnx_qos_-i_eth4.txt"


def fx(name):
    return (QOS_FIXTURES / name).read_text()


def want(buffer_yaml, extra=""):
    return Q.desired(Q.parse_plan(extra + "buffer: " + buffer_yaml + "\n", yaml.safe_load, "qos.yml"))


def fake_runner(outputs):
    calls = []

    def run(argv):
        calls.append(argv)
        return outputs.get(tuple(argv), (127, "", "%s: not installed" % argv[0]))
    run.calls = calls
    return run


FULL = "{cable_length: 30, prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0], buffer_size: [32768, 229120, 0, 0, 0, 0, 0, 0]}"
# Within the 221072 bytes of the port dcb's published output shows.
SMALL = "{cable_length: 30, prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0], buffer_size: [65536, 131072, 0, 0, 0, 0, 0, 0]}"


# The JSON form of the `dcb buf show dev eni1np1` output published in iproute2 commit 2e36f910
# (values as printed there; dcb_buffer.c's JSON printer gives these keys).
DCB_JSON = json.dumps({"prio_buffer": [0, 0, 0, 3, 0, 0, 6, 0],
                       "buffer_size": [10000, 0, 0, 70000, 0, 0, 10000, 0], "total_size": 221072})


# ---------------------------------------------------------------------------------------------
# Planned commands, each backend


def test_mlnx_qos_commands_from_the_published_state():
    run = fake_runner({("mlnx_qos", "-i", "eth2"): (0, fx(CX_PCP), "")})
    step = Q.interface_plan("eth2", "mlx5_core", "mlnx_qos", want(FULL, "trust: pcp\n"), run, {}.get, False)
    # The QoS commands first (PFC on 3), then the buffers.
    assert step["commands"][-4:] == [
        ["mlnx_qos", "-i", "eth2", "--pfc", "0,0,0,1,0,0,0,0"],
        # --cable_len carries the planned PFC: older mlnx_qos reset PFC when it came alone.
        ["mlnx_qos", "-i", "eth2", "--pfc", "0,0,0,1,0,0,0,0", "--cable_len", "30"],
        ["mlnx_qos", "-i", "eth2", "--buffer_size", "32768,229120,0,0,0,0,0,0"],
        ["mlnx_qos", "-i", "eth2", "--prio2buffer", "0,0,0,1,0,0,0,0"],
    ]
    assert step["buffer"]["before"] == ("cable_length: 7\nprio_buffer: 1 1 1 1 1 1 1 1\n"
                                        "buffer_size: 0 187200 0 0 0 0 0 0\n")
    assert step["buffer"]["after"] == ("cable_length: 30\nprio_buffer: 0 0 0 1 0 0 0 0\n"
                                       "buffer_size: 32768 229120 0 0 0 0 0 0\n")
    assert step["buffer"]["not_supported"] == [] and run.calls == [["mlnx_qos", "-i", "eth2"]]


def dcb_outputs(ifname, pfc_text, buffer_json):
    return {("dcb", "-N", "pfc", "show", "dev", ifname): (0, pfc_text, ""),
            ("dcb", "-N", "app", "show", "dev", ifname): (0, "dscp-prio 26:3 48:6\n", ""),
            ("dcb", "-N", "ets", "show", "dev", ifname): (0, fx("dcb-ets-show-manpage.txt"), ""),
            ("dcb", "-j", "buffer", "show", "dev", ifname): (0, buffer_json, "")}


def test_dcb_commands_set_the_delay_then_the_buffer_object_in_one_call():
    pfc = "pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
    run = fake_runner(dcb_outputs("ens1", pfc, DCB_JSON))
    step = Q.interface_plan("ens1", "mlx5_core", "dcb", want(SMALL), run, {}.get, False)
    assert step["commands"] == [
        ["dcb", "pfc", "set", "dev", "ens1", "delay", "30"],
        ["dcb", "buffer", "set", "dev", "ens1", "prio-buffer", "0:0", "1:0", "2:0", "3:1", "4:0", "5:0", "6:0", "7:0",
         "buffer-size", "0:65536", "1:131072", "2:0", "3:0", "4:0", "5:0", "6:0", "7:0"],
    ]
    assert step["buffer"]["before"].startswith("cable_length: 7\nprio_buffer: 0 0 0 3 0 0 6 0\n")
    assert all(c[:2] == ["dcb", "-N"] or c[:2] == ["dcb", "-j"] for c in run.calls)  # read only


def test_only_what_differs_is_set_and_the_nics_rounding_is_no_difference():
    # The published state as the plan, sizes as a user writes them before the driver rounds them
    # to its cell: nothing to run.
    same = want("{cable_length: 7, prio_buffer: [0, 1, 1, 1, 1, 1, 0, 0], buffer_size: [32800, 229200, 0, 0, 0, 0, 0, 0]}",
                "lossless_priorities: [1, 2, 3, 4, 5]\ndata: {dscp: 26, priority: 3}\n")
    assert B.changes(same["buffer"], T.parse_mlnx_qos_buffers(fx(CX_DSCP)), True) == {}
    run = fake_runner({("mlnx_qos", "-i", "eth0"): (0, fx(CX_DSCP), "")})
    step = Q.interface_plan("eth0", "mlx5_core", "mlnx_qos", same, run, {}.get, False)
    assert step["buffer"]["commands"] == [] and not any("--cable_len" in c for c in step["commands"])
    # One size off by more than a cell: only the sizes.
    bigger = dict(same["buffer"], buffer_size=[32768, 262144, 0, 0, 0, 0, 0, 0])
    assert B.changes(bigger, T.parse_mlnx_qos_buffers(fx(CX_DSCP)), True) == {"buffer_size": [32768, 262144, 0, 0, 0, 0, 0, 0]}


# ---------------------------------------------------------------------------------------------
# What the NIC cannot take: reported, not failed on; what it would refuse: refused first


def test_a_virtio_nic_reports_buffers_not_supported_and_gets_no_buffer_command():
    err = fx("dcb-j-buffer-show-virtio-not-supported.txt")
    outputs = dcb_outputs("eth0", "pfc-cap 8 macsec-bypass off delay 0\nprio-pfc 3:on\n", "")
    outputs[("dcb", "-j", "buffer", "show", "dev", "eth0")] = (1, "\n", err)
    step = Q.interface_plan("eth0", "virtio_net", "dcb", want(FULL), fake_runner(outputs), {}.get, False)
    assert step["buffer"]["not_supported"] == [
        "eth0 (driver virtio_net): the NIC has no PFC buffer settings (dcb buffer show: Operation not supported): "
        "buffer.cable_length, buffer.prio_buffer, buffer.buffer_size not applied"]
    assert step["buffer"]["commands"] == [] and not any("delay" in c or "buffer" in c for c in step["commands"])


def test_an_mlnx_qos_without_buffer_lines_is_not_supported_either():
    run = fake_runner({("mlnx_qos", "-i", "eth4"): (0, NETARBITER.read_text(), "")})
    step = Q.interface_plan("eth4", "mlx5_core", "mlnx_qos", want("{cable_length: 30}"), run, {}.get, False)
    assert step["buffer"]["not_supported"] == [
        "eth4 (driver mlx5_core): the NIC has no PFC buffer settings (mlnx_qos -i eth4 prints no receive buffers): "
        "buffer.cable_length not applied"]
    assert step["commands"] == []  # DSCP trust and PFC on 3 are already as planned


def test_a_cable_length_on_a_driver_other_than_mlx5_is_reported_and_the_buffers_still_set():
    run = fake_runner(dcb_outputs("swp1", fx("dcb-pfc-show-manpage.txt"), DCB_JSON))
    step = Q.interface_plan("swp1", "mlxsw_spectrum", "dcb", want(SMALL), run, {}.get, False)
    assert step["buffer"]["not_supported"] == [
        "swp1 (driver mlxsw_spectrum): buffer.cable_length not applied: the PFC delay is a cable length in "
        "metres only on mlx5_core"]
    assert [c[:3] for c in step["buffer"]["commands"]] == [["dcb", "buffer", "set"]]


def test_more_than_the_ports_buffer_memory_is_refused_before_any_change():
    run = fake_runner({("mlnx_qos", "-i", "eth2"): (0, fx(CX_PCP), "")})
    too_big = want("{prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0], buffer_size: [1048576, 1048576, 0, 0, 0, 0, 0, 0]}")
    with pytest.raises(Q.QosError, match="eth2: buffer.buffer_size totals 2097152 bytes, more than the port's 2044224"):
        Q.interface_plan("eth2", "mlx5_core", "mlnx_qos", too_big, run, {}.get, False)


def test_a_pfc_priority_moved_into_an_empty_buffer_is_refused():
    # The NIC's buffer 0 has 0 bytes (published state); the plan maps priority 3 there, sizes unstated.
    run = fake_runner({("mlnx_qos", "-i", "eth2"): (0, fx(CX_PCP), "")})
    with pytest.raises(Q.QosError, match=r"eth2: lossless priority 3 would be in buffer 0 of 0 bytes \(the NIC's size\)"):
        Q.interface_plan("eth2", "mlx5_core", "mlnx_qos", want("{prio_buffer: [1, 1, 1, 0, 1, 1, 1, 1]}"),
                         run, {}.get, False)


def test_a_dcb_buffer_read_that_fails_otherwise_is_an_error():
    outputs = dcb_outputs("ens1", fx("dcb-pfc-show-manpage.txt"), "")
    outputs[("dcb", "-j", "buffer", "show", "dev", "ens1")] = (255, "", "Object \"buffer\" is unknown, try \"dcb help\".\n")
    with pytest.raises(Q.QosError, match="dcb -j buffer show dev ens1: Object \"buffer\" is unknown"):
        Q.interface_plan("ens1", "mlx5_core", "dcb", want(FULL), fake_runner(outputs), {}.get, False)


def test_a_plan_without_buffers_reads_no_buffer_state():
    run = fake_runner(dcb_outputs("ens1", fx("dcb-pfc-show-manpage.txt"), DCB_JSON))
    step = Q.interface_plan("ens1", "mlx5_core", "dcb", Q.desired(Q.load_plan(None, yaml.safe_load)), run, {}.get, False)
    assert step["buffer"] is None and not any(c[:2] == ["dcb", "-j"] for c in run.calls)


# ---------------------------------------------------------------------------------------------
# The boot-time re-apply: the same code path, the same report


def boot(tmp_path, monkeypatch, outputs, driver, required):
    plan = tmp_path / "qos.yml"
    plan.write_text("buffer: " + FULL + "\n")
    settings = tmp_path / "roce_qos.json"
    settings.write_text(json.dumps({"interfaces": ["eth2"], "plan_file": str(plan), "backend": "mlnx_qos",
                                    "pause_off": False, "rdma_cm": False, "required": required}))
    queries = fake_runner(outputs)

    def run(argv):  # the query replays a recorded output; every set succeeds
        answer = queries(argv)
        return answer if argv[-2:] == ["-i", "eth2"] else (0, "", "")
    monkeypatch.setattr(Q, "_run", run)
    monkeypatch.setattr(Q, "driver_of", lambda ifname: driver)
    monkeypatch.setattr(Q, "_which", lambda name: "/usr/sbin/" + name)
    monkeypatch.setattr(Q, "_read", lambda path: None)
    import sys
    return Q.reapply([str(settings)], sys.stdout, sys.stderr), queries.calls


def test_the_boot_script_reapplies_the_buffers(tmp_path, monkeypatch, capsys):
    rc, calls = boot(tmp_path, monkeypatch, {("mlnx_qos", "-i", "eth2"): (0, fx(CX_PCP), "")}, "mlx5_core", True)
    assert rc == 0, capsys.readouterr()
    assert ["mlnx_qos", "-i", "eth2", "--pfc", "0,0,0,1,0,0,0,0", "--cable_len", "30"] in calls
    assert calls[-2:] == [["mlnx_qos", "-i", "eth2", "--buffer_size", "32768,229120,0,0,0,0,0,0"],
                          ["mlnx_qos", "-i", "eth2", "--prio2buffer", "0,0,0,1,0,0,0,0"]]


@pytest.mark.parametrize("required, status", [(False, 0), (True, 1)])
def test_the_boot_script_reports_buffers_a_nic_cannot_take(tmp_path, monkeypatch, capsys, required, status):
    rc, calls = boot(tmp_path, monkeypatch, {("mlnx_qos", "-i", "eth2"): (0, fx(OFED_42), "")}, "mlx5_core", required)
    assert rc == status
    assert ("rocetune-qos: eth2 (driver mlx5_core): the NIC has no PFC buffer settings (mlnx_qos -i eth2 prints no "
            "receive buffers): buffer.cable_length, buffer.prio_buffer, buffer.buffer_size not applied") \
        in capsys.readouterr().out
    assert not any("--cable_len" in c or "--buffer_size" in c for c in calls)
