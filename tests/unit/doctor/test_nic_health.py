"""Judging NIC health from two readings. The first reading is real (see nicsnap); each test
states the arithmetic that makes the second one."""

import json
import re
from pathlib import Path

import pytest

from rocetune.checks.nic_counters import CHECKS, REGISTRY, RESET_ID
from rocetune.doctor.nic_health import effective_thresholds, judge
from rocetune.errors import RocetuneError
from tests.unit.doctor.nicsnap import NETDEV, PORT, later, real_snapshot

DOCS = Path(__file__).resolve().parents[3] / "docs" / "health.md"


def ids(results, subject=None):
    return [(r.id, r.severity) for r in results if subject is None or r.subject == subject]


def only(results, cid):
    found = [r for r in results if r.id == cid]
    assert len(found) == 1, [r.to_dict() for r in results]
    return found[0]


BASE = real_snapshot()


def test_flat_counters_an_hour_later_give_nothing():
    # the same port an hour later, 500 GB more each way and no counter but the bytes moved
    assert judge(BASE, later(BASE, rx_gb=500, tx_gb=500)) == []


# --- nic-link-flaps ----------------------------------------------------------------------------

def test_one_link_down_in_an_hour_is_a_warning_three_an_error():
    # the same port an hour later with 1, then 3, more link_downed
    assert ids(judge(BASE, later(BASE, port={"link_downed": 1}))) == [("nic-link-flaps", "warning")]
    r = only(judge(BASE, later(BASE, port={"link_downed": 3})), "nic-link-flaps")
    assert r.severity == "error" and r.subject == PORT
    assert r.evidence["counters"]["rdma:link_downed"] == {"old": 1, "new": 4, "delta": 3}
    assert r.evidence["interval_s"] == 3600


def test_netdev_flap_counts_carrier_downs_and_not_the_ups():
    # eth03 an hour later after one flap: carrier_changes +2 (down, up), carrier_down_count +1
    r = only(judge(BASE, later(BASE, sysfs={"carrier_changes": 2, "carrier_down_count": 1})), "nic-link-flaps")
    assert (r.subject, r.severity, r.evidence["rate"]) == (NETDEV, "warning", 1.0)


def test_without_carrier_down_count_half_the_carrier_changes_are_flaps():
    base = real_snapshot()
    del base["netdevs"][NETDEV]["sysfs"]["carrier_down_count"]  # a kernel before 4.16
    # three flaps: carrier_changes +6
    r = only(judge(base, later(base, sysfs={"carrier_changes": 6})), "nic-link-flaps")
    assert (r.severity, r.evidence["rate"]) == ("error", 3.0)


# --- nic-symbol-errors -------------------------------------------------------------------------

def test_symbol_errors_warn_above_ten_an_hour_and_error_above_the_ber_of_the_link():
    base = real_snapshot(rate_gbps=25)  # error above 25 Gb/s * 3.6 = 90 an hour
    assert judge(base, later(base, port={"symbol_error": 10})) == []
    assert ids(judge(base, later(base, port={"symbol_error": 11}))) == [("nic-symbol-errors", "warning")]
    r = only(judge(base, later(base, port={"symbol_error": 91})), "nic-symbol-errors")
    assert r.severity == "error" and r.evidence["error"] == pytest.approx(90.0)
    fast = real_snapshot(rate_gbps=400)  # 1,440 an hour at 400 Gb/s
    assert ids(judge(fast, later(fast, port={"symbol_error": 91}))) == [("nic-symbol-errors", "warning")]


def test_a_few_symbol_errors_in_a_short_interval_are_not_blown_up_to_an_hourly_rate():
    # one minute later with 5 more symbol errors: judged as 5, not 300 an hour
    assert judge(BASE, later(BASE, hours=1 / 60, port={"symbol_error": 5})) == []


def test_symbol_errors_on_the_netdev_use_the_port_speed():
    base = real_snapshot(rate_gbps=25)
    base["netdevs"][NETDEV]["ethtool"]["rx_symbol_err_phy"] = 0  # zero: the poster left zeros out
    r = only(judge(base, later(base, ethtool={"rx_symbol_err_phy": 100})), "nic-symbol-errors")
    assert (r.subject, r.severity) == (NETDEV, "error")


# --- nic-rcv-errors: per GB ------------------------------------------------------------------

def test_receive_errors_are_normalised_per_gb_received():
    # 20 more port_rcv_errors an hour later: over 1,000 GB received a warning, over 10 GB an error
    busy = only(judge(BASE, later(BASE, rx_gb=1000, port={"port_rcv_errors": 20})), "nic-rcv-errors")
    assert busy.severity == "warning" and busy.evidence["rate"] == pytest.approx(0.02)
    assert busy.evidence["gb"]["rx"] == pytest.approx(1000, rel=1e-6)
    quiet = only(judge(BASE, later(BASE, rx_gb=10, port={"port_rcv_errors": 20})), "nic-rcv-errors")
    assert quiet.severity == "error" and quiet.evidence["rate"] == pytest.approx(2.0)
    assert "per GB received" in quiet.message


def test_fewer_receive_errors_than_the_minimum_are_noise():
    assert judge(BASE, later(BASE, rx_gb=1, port={"port_rcv_errors": 9})) == []


# --- nic-rx-discards / nic-xmit-discards ---------------------------------------------------------

def test_the_real_slow_receiver_keeps_dropping():
    # the real XDP host an hour later with 1,000 more rx_discards_phy over 100 GB received
    r = only(judge(BASE, later(BASE, rx_gb=100, ethtool={"rx_discards_phy": 1000})), "nic-rx-discards")
    assert (r.subject, r.severity, r.evidence["rate"]) == (NETDEV, "error", 10.0)
    assert r.evidence["counters"]["ethtool:rx_discards_phy"]["old"] == 441063206498


def test_out_of_buffer_on_the_rdma_port_is_a_discard():
    # 50 more out_of_buffer (receive queues without WQEs) over 100 GB
    r = only(judge(BASE, later(BASE, rx_gb=100, port={"out_of_buffer": 50})), "nic-rx-discards")
    assert (r.subject, r.severity) == (PORT, "warning")


def test_a_counter_only_the_later_reading_has_is_not_judged():
    # tx_discards_phy was left out of the real output (zero); it appears later with 500
    assert judge(BASE, later(BASE, tx_gb=10, ethtool={"tx_discards_phy": 500})) == []


def test_transmit_discards_per_gb_sent():
    # 200 more port_xmit_discards over 1,000 GB sent
    r = only(judge(BASE, later(BASE, tx_gb=1000, port={"port_xmit_discards": 200})), "nic-xmit-discards")
    assert r.severity == "warning" and "per GB sent" in r.message


# --- pause -------------------------------------------------------------------------------------

def test_pause_sent_is_judged_by_the_share_of_time_paused():
    # an hour later with 60 s (1.7%), then 400 s (11%), more tx_global_pause_duration (us)
    r = only(judge(BASE, later(BASE, ethtool={"tx_global_pause_duration": 60_000_000})), "nic-pause-storm")
    assert r.severity == "warning" and r.evidence["rate"] == pytest.approx(60 / 3600, rel=1e-4)
    r = only(judge(BASE, later(BASE, ethtool={"tx_global_pause_duration": 400_000_000})), "nic-pause-storm")
    assert r.severity == "error" and "of the time paused" in r.message


def test_pause_frames_without_durations_count_134_us_each():
    base = real_snapshot()
    del base["netdevs"][NETDEV]["ethtool"]["tx_global_pause_duration"]  # a driver without durations
    # an hour later with 300,000 more tx_pause_ctrl_phy: 300000 * 134 us = 40 s = 1.1%
    r = only(judge(base, later(base, ethtool={"tx_pause_ctrl_phy": 300_000})), "nic-pause-storm")
    assert r.severity == "warning" and r.evidence["rate"] == pytest.approx(300_000 * 134e-6 / 3600, rel=1e-4)


def test_a_pause_storm_event_is_an_error_whatever_the_time_paused():
    base = real_snapshot()
    base["netdevs"][NETDEV]["ethtool"]["tx_pause_storm_error_events"] = 0
    r = only(judge(base, later(base, ethtool={"tx_pause_storm_error_events": 1})), "nic-pause-storm")
    assert r.severity == "error" and "tx_pause_storm_error_events increased" in r.message


def test_pause_received_on_the_roce_priority():
    base = real_snapshot()
    base["netdevs"][NETDEV]["ethtool"]["rx_prio3_pause_duration"] = 0
    # an hour later with 720 s paused on priority 3 (20%)
    r = only(judge(base, later(base, ethtool={"rx_prio3_pause_duration": 720_000_000})), "nic-pause-received")
    assert r.severity == "error" and "rx_prio3_pause_duration +720000000" in r.message


# --- RDMA transport ----------------------------------------------------------------------------

def test_cnp_rate_per_gb():
    # the real port's ECN marks an hour later: +300,000 over 100 GB received (3,000 a GB), then +3,000,000
    r = only(judge(BASE, later(BASE, rx_gb=100, port={"np_ecn_marked_roce_packets": 300_000})), "nic-cnp-rate")
    assert r.severity == "warning"
    r = only(judge(BASE, later(BASE, rx_gb=100, port={"np_ecn_marked_roce_packets": 3_000_000})), "nic-cnp-rate")
    assert r.severity == "error"
    # the same CNPs over ten times the traffic are fine
    assert judge(BASE, later(BASE, rx_gb=1000, port={"np_ecn_marked_roce_packets": 300_000})) == []


def test_out_of_sequence_packets_mean_retransmissions():
    # 50 more out_of_sequence over 10 GB
    r = only(judge(BASE, later(BASE, rx_gb=10, port={"out_of_sequence": 50})), "nic-seq-errors")
    assert (r.severity, r.evidence["rate"]) == ("warning", 5.0)


def test_rnr_naks_per_hour():
    r = only(judge(BASE, later(BASE, port={"rnr_nak_retry_err": 20})), "nic-rnr-naks")
    assert r.severity == "warning"


def test_soft_roce_retries_exceeded_is_an_error():
    base = real_snapshot()
    base["ports"][PORT]["counters"]["retry_exceeded_err"] = 0
    r = only(judge(base, later(base, port={"retry_exceeded_err": 1})), "nic-retries-exceeded")
    assert r.severity == "error"


# --- resets, boots, no baseline ----------------------------------------------------------------

def test_a_counter_that_went_down_is_a_reset_never_a_negative_rate():
    # an hour later the driver was reloaded: out_of_sequence back to 12, link_downed 0
    cur = later(BASE, port={"out_of_sequence": 12 - 1811101, "link_downed": -1})
    results = judge(BASE, cur)
    assert ids(results) == [(RESET_ID, "info")]
    assert results[0].evidence["counters"]["rdma:out_of_sequence"] == {"old": 1811101, "new": 12}


def test_another_boot_is_one_reset_and_lifetime_infos():
    cur = later(BASE, port={"symbol_error": 500})
    cur["boot_id"] = "0b5e-another-boot"
    cur["taken_at"]["uptime_s"] = 600.0
    results = judge(BASE, cur)
    assert results[0].id == RESET_ID and results[0].subject == "host"
    assert all(r.severity == "info" for r in results)
    sym = only(results, "nic-symbol-errors")
    assert sym.evidence["lifetime"] is True and "no baseline" in sym.message


def test_without_a_baseline_only_info_is_given():
    results = judge(None, BASE)
    assert results and all(r.severity == "info" for r in results)
    flaps = [r for r in results if r.id == "nic-link-flaps"]
    # link_downed is 1 on the port; the VM's carrier shows only the down at creation: no flap there
    assert [(r.subject, r.evidence["counters"]) for r in flaps] == [(PORT, {"rdma:link_downed": 1})]
    assert "since boot" in flaps[0].message
    cnp = only(results, "nic-cnp-rate")
    assert cnp.evidence["counters"]["rdma:np_ecn_marked_roce_packets"] == 21278189006


def test_a_new_port_without_baseline_gets_lifetime_infos_others_rates():
    cur = later(BASE, port={"symbol_error": 20})
    cur["ports"]["mlx5_1/1"] = {"device": "mlx5_1", "port": 1, "netdev": None, "link_layer": "Ethernet",
                                "rate_gbps": 25, "counters": {"link_downed": 2}}
    assert ids(judge(BASE, cur)) == [("nic-symbol-errors", "warning"), ("nic-link-flaps", "info")]


def test_uptime_not_the_wall_clock_measures_the_interval():
    cur = later(BASE, port={"link_downed": 3})
    cur["taken_at"]["epoch_s"] = BASE["taken_at"]["epoch_s"] - 7200  # the clock was stepped back
    assert only(judge(BASE, cur), "nic-link-flaps").evidence["interval_s"] == 3600


def test_a_baseline_from_the_future_gives_no_rates():
    cur = later(BASE, hours=-1, port={"link_downed": 3})
    results = judge(BASE, cur)
    assert results[0].id == RESET_ID and all(r.severity == "info" for r in results)


# --- thresholds, output, registry --------------------------------------------------------------

def test_thresholds_can_be_overridden():
    cur = later(BASE, port={"symbol_error": 11})
    assert judge(BASE, cur, {"nic-symbol-errors": {"warn": 50}}) == []
    assert ids(judge(BASE, cur, {"nic-symbol-errors": {"error": 5}})) == [("nic-symbol-errors", "error")]


@pytest.mark.parametrize("bad, text", [
    ({"nic-nope": {"warn": 1}}, "unknown NIC check 'nic-nope'"),
    ({"nic-link-flaps": {"wran": 1}}, "unknown field 'wran'"),
    ({"nic-link-flaps": {"warn": -1}}, "expected a number >= 0"),
    ({"nic-link-flaps": {"warn": "1"}}, "expected a number >= 0"),
    ({"nic-link-flaps": 3}, "expected a mapping"),
])
def test_bad_thresholds_name_what_is_wrong(bad, text):
    with pytest.raises(RocetuneError, match=re.escape(text)):
        effective_thresholds(bad)


def test_a_foreign_document_is_refused():
    with pytest.raises(RocetuneError, match="version 2"):
        judge(dict(BASE, version=2), BASE)
    with pytest.raises(RocetuneError, match="not a rocetune-nic-counters document"):
        judge(None, {"ports": {}})


def test_results_are_json_and_findings():
    r = only(judge(BASE, later(BASE, rx_gb=10, port={"port_rcv_errors": 20})), "nic-rcv-errors")
    assert json.loads(json.dumps(r.to_dict()))["evidence"]["counters"]["rdma:port_rcv_errors"]["delta"] == 20
    f = r.to_finding()
    assert (f.id, f.severity, f.subject, f.fix) == ("nic-rcv-errors", "error", PORT, r.fix)


def test_registry_documents_every_check_and_the_docs_page_names_each():
    docs = DOCS.read_text()
    for cid, entry in REGISTRY.items():
        assert re.fullmatch(r"nic-[a-z]+(?:-[a-z]+)*", cid)
        assert entry["doc"] and entry["why"] and entry["fix"] and entry["source"]
        assert f"`{cid}`" in docs, f"docs/health.md does not describe {cid}"
    assert set(REGISTRY) == {c.id for c in CHECKS} | {RESET_ID}
