"""`ethtool -S` parsing, on real mlx5 outputs (tests/fixtures/nic_counters/SOURCES.md)."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocetune.errors import ParseError
from rocetune.probe.parsers._common import BUG_PREFIX
from rocetune.probe.parsers.ethtool_stats import parse_ethtool_stats

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nic_counters"


def real(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def test_real_mlx5_output_gives_every_counter_with_its_value():
    text = real("ethtool-S_mlx5_xdp_linux-5.15.txt")
    parsed = parse_ethtool_stats(text)
    assert parsed["warnings"] == []
    counters = parsed["counters"]
    assert len(counters) == len(text.splitlines()) - 1  # every line but the header
    assert counters["tx_pause_ctrl_phy"] == 5745055
    assert counters["rx_discards_phy"] == 58591428329
    assert counters["tx_global_pause_duration"] == 771103810
    assert counters["rx_prio0_discards"] == 58591314012
    assert counters["rx_bytes_phy"] == 6211329423080


def test_later_kernel_output_has_counters_the_earlier_lacks():
    old = parse_ethtool_stats(real("ethtool-S_mlx5_xdp_linux-5.15.txt"))["counters"]
    new = parse_ethtool_stats(real("ethtool-S_mlx5_xdp_linux-6.5.txt"))["counters"]
    assert "rx_buffer_passed_thres_phy" in new and "rx_buffer_passed_thres_phy" not in old
    assert new["tx_pause_ctrl_phy"] == 44414017
    # zero counters were left out by the poster: absent, not zero
    assert "rx_symbol_err_phy" not in new and "link_down_events_phy" not in new


def test_names_with_queue_prefixes_keep_everything_before_the_value():
    parsed = parse_ethtool_stats("NIC statistics:\n     [0]: rx_bytes: 209487403324\n"
                                 "     rxq0: rx_pkts: 388869057759\n")
    assert parsed["counters"] == {"[0]: rx_bytes": 209487403324, "rxq0: rx_pkts": 388869057759}


def test_lines_that_are_not_counters_are_warned_and_skipped():
    parsed = parse_ethtool_stats("NIC statistics:\n     rx_errors: 1  <--- error\n     tx_errors: 0\n")
    assert parsed["counters"] == {"tx_errors": 0}
    assert len(parsed["warnings"]) == 1 and "rx_errors: 1  <--- error" in parsed["warnings"][0]


def test_a_driver_without_statistics_gives_no_counters_and_says_so():
    parsed = parse_ethtool_stats("no stats available\n")
    assert parsed["counters"] == {}
    assert parsed["warnings"] == ["ethtool -S: the driver reports no statistics"]


def test_empty_output_is_a_parse_error():
    with pytest.raises(ParseError, match="empty output"):
        parse_ethtool_stats("  \n")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.integers(min_value=0, max_value=3000))
def test_any_input_parses_or_raises_parse_error(noise, cut):
    text = real("ethtool-S_mlx5_xdp_linux-6.5.txt")[:cut] + noise
    try:
        parsed = parse_ethtool_stats(text)
    except ParseError as exc:
        assert BUG_PREFIX not in str(exc)
        return
    assert all(isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in parsed["counters"].items())
