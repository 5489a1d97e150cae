"""SONiC's counter shows (`show pfc counters`, `show queue counters`, `show queue wredcounters`),
kept verbatim from sonic-utilities' own tests, read per port and held to the plan beside the
switch's CONFIG_DB: drops on the queue a lossless priority leaves by are a finding."""

from __future__ import annotations

import json
import os

import pytest

from rocetune.app.qos import QosCheckRequest, check
from rocetune.errors import ParseError, RocetuneError
from rocetune.model.qos import default_plan
from rocetune.model.switch_qos import SwitchIntent
from rocetune.switchos import sonic, sonic_counters

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures", "switch")
PORTS = ["Ethernet0", "Ethernet4", "Ethernet8"]


def _read(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        return fh.read()


def test_pfc_counters_are_read_per_port_and_priority_both_ways():
    c = sonic_counters.parse(_read("sonic-utilities-show-pfc-counters.txt"), "t")
    assert sorted(c) == PORTS
    assert c["Ethernet0"]["rx_pause_p0"] == 1200 and c["Ethernet0"]["rx_pause_p3"] == 203
    assert c["Ethernet8"]["tx_pause_p7"] == 817 and c["Ethernet4"]["tx_pause_p0"] == 1410
    assert len(c["Ethernet4"]) == 16


def test_queue_and_wred_counters_read_unicast_queues_only():
    text = _read("sonic-utilities-show-queue-counters.txt") + _read("sonic-utilities-show-queue-wredcounters.txt")
    c = sonic_counters.parse(text, "t")
    assert (c["Ethernet0"]["drop_pkts_q3"], c["Ethernet4"]["drop_pkts_q3"], c["Ethernet8"]["drop_pkts_q3"]) == (
        19,
        48,
        63,
    )
    assert c["Ethernet4"]["ecn_marked_pkts_q3"] == 48 and c["Ethernet8"]["wred_drop_pkts_q9"] == 80
    assert not any(k.endswith(("_q10", "_q20")) for counts in c.values() for k in counts)  # MC10, ALL20: not RoCE's
    assert "drop_pkts_q9" in c["Ethernet0"]


def test_n_a_is_unread_and_a_text_without_tables_is_one_line():
    c = sonic_counters.parse(
        "\n".join(
            _read("sonic-utilities-show-queue-counters.txt").splitlines()[1:3]
            + ["Ethernet0  ALL20             N/A              N/A          N/A           N/A"]
        ),
        "t",
    )
    assert c == {}
    with pytest.raises(ParseError, match="no table of SONiC counters"):
        sonic_counters.parse("Port  Rx\nnothing here\n", "t")


def _render(tmp_path):
    path = tmp_path / "sonic.json"
    path.write_text(sonic.OS.render(SwitchIntent.from_plan(default_plan()), PORTS, {}).text)
    return str(path)


def _check(tmp_path, counters_text):
    counters = tmp_path / "counters.txt"
    counters.write_text(counters_text)
    plan = tmp_path / "qos.yml"
    plan.write_text("version: 1\n")
    return check(QosCheckRequest(_render(tmp_path), qos_path=str(plan), counters=str(counters)))


def test_drops_on_the_lossless_queue_are_found_per_port_with_pauses_and_ecn_marks(tmp_path):
    done = _check(
        tmp_path,
        _read("sonic-utilities-show-pfc-counters.txt")
        + _read("sonic-utilities-show-queue-counters.txt")
        + _read("sonic-utilities-show-queue-wredcounters.txt"),
    )
    found = [f for f in done.findings if f.id == "switch-lossless-discards"]
    assert [(f.subject, f.severity) for f in found] == [(p, "warning") for p in PORTS]
    assert found[0].message.startswith(
        "19 packets dropped and 52 packets WRED-dropped on queue 3, which lossless "
        "priority 3 leaves by (counts since the counters were last cleared; PFC "
        "pauses on priority 3 received 203, sent 213; ECN-marked on queue 3 19)"
    )
    assert done.switch.counters["Ethernet0"]["rx_pause_p3"] == 203


def test_cleared_counters_are_clean_and_a_planted_drop_names_its_port(tmp_path):
    cleared = _read("sonic-utilities-show-queue-counters-cleared-ethernet0.txt")
    assert not [f for f in _check(tmp_path, cleared).findings if f.id == "switch-lossless-discards"]
    lines = cleared.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("Ethernet0    UC3 "))
    lines[row] = lines[row][: -len("0             0\n")] + "7             0\n"  # Drop/pkts 0 -> 7, same width
    found = [f for f in _check(tmp_path, "".join(lines)).findings if f.id == "switch-lossless-discards"]
    assert [(f.subject, f.message.split(" on queue")[0]) for f in found] == [("Ethernet0", "7 packets dropped")]
    # a drop on a lossy queue is not this check's
    lines = cleared.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("Ethernet0    UC1 "))
    lines[row] = lines[row][: -len("0             0\n")] + "7             0\n"
    assert not [f for f in _check(tmp_path, "".join(lines)).findings if f.id == "switch-lossless-discards"]


def test_a_counters_file_for_another_os_or_without_tables_is_a_clear_input_error(tmp_path):
    counters = tmp_path / "counters.txt"
    counters.write_text(_read("sonic-utilities-show-pfc-counters.txt"))
    eos_file = os.path.join(FIXTURES, "eos-gaudi-7060dx4-l2.cfg")
    with pytest.raises(RocetuneError, match="read for SONiC switches only"):
        check(QosCheckRequest(eos_file, counters=str(counters)))
    counters.write_text(json.dumps({"not": "a show"}))
    with pytest.raises(ParseError, match="no table of SONiC counters"):
        check(QosCheckRequest(_render(tmp_path), counters=str(counters)))
