"""ibstat / ibstatus parsers on recorded outputs and on damaged ones."""

from __future__ import annotations

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers.ibstat import parse_ibstat, parse_ibstatus

H20_IBSTAT = "h20-8gpu-cx6lx-2port-only/ibstat.txt"


def test_h20_cx6lx_ports_are_down_ethernet(corpus):
    warnings = []
    cas = parse_ibstat(corpus(H20_IBSTAT), warnings)
    assert warnings == []
    assert [c["name"] for c in cas] == ["mlx5_0", "mlx5_1"]
    for ca in cas:
        assert ca["ca_type"] == "MT4127"
        assert ca["fw_ver"] is None and ca["node_guid"] is None, "not in the author's excerpt"
        assert ca["ports"] == [{"port": 1, "state": "Down", "phys_state": "Disabled", "rate": "40",
                                "rate_gbps": 40, "link_layer": "Ethernet"}]


def test_ibstat_full_block_with_firmware_and_guid(corpus):
    # The h20 block with the lines a complete ibstat prints in between (inserted for this test).
    text = corpus(H20_IBSTAT).replace(
        "        Number of ports: 1\n",
        "        Number of ports: 1\n        Firmware version: 26.36.1010\n        Hardware version: 0\n"
        "        Node GUID: 0x1070fd0300aa5c2e\n        System image GUID: 0x1070fd0300aa5c2e\n", 1)
    ca = parse_ibstat(text)[0]
    assert (ca["fw_ver"], ca["node_guid"]) == ("26.36.1010", "0x1070fd0300aa5c2e")


def test_ibstat_cut_off_after_port_count(corpus):
    text = corpus(H20_IBSTAT)
    cut = text[: text.index("Number of ports", text.index("mlx5_1")) + len("Number of ports: 1")]
    warnings = []
    cas = parse_ibstat(cut, warnings)
    assert [c["name"] for c in cas] == ["mlx5_0", "mlx5_1"]
    assert cas[1]["ports"] == []
    assert warnings == ["mlx5_1: 1 port(s) declared, 0 listed (cut off?)"]


def test_ibstat_junk_lines_are_warnings(corpus):
    warnings = []
    cas = parse_ibstat("ibwarn: [123] something odd\n" + corpus(H20_IBSTAT), warnings)
    assert len(cas) == 2
    assert warnings == ["ignored line 'ibwarn: [123] something odd'"]


def test_ibstatus_partial_hgx(corpus):
    warnings = []
    cas = parse_ibstatus(corpus("hgx-h100-ib-mlx5ib-naming/ibstatus-partial.txt"), warnings)
    assert warnings == []
    assert [(c["name"], c["ca_type"]) for c in cas] == [("mlx5_eth4", None), ("mlx5_ib0", None)]
    eth, ib = cas[0]["ports"][0], cas[1]["ports"][0]
    assert (eth["port"], eth["rate"], eth["rate_gbps"], eth["link_layer"]) == (
        1, "25 Gb/sec (1X EDR)", 25, "Ethernet")
    assert (ib["rate_gbps"], ib["link_layer"]) == (400, "InfiniBand")
    assert eth["state"] is None and eth["phys_state"] is None, "the author's excerpt has no state lines"


def test_ibstatus_full_two_port_cx3(corpus):
    cas = parse_ibstatus(corpus("ibstatus-cx3-fdr-2port/ibstatus.txt"))
    assert len(cas) == 1 and cas[0]["name"] == "mlx4_0"
    assert cas[0]["ports"] == [
        {"port": p, "state": "ACTIVE", "phys_state": "LinkUp", "rate": "56 Gb/sec (4X FDR)", "rate_gbps": 56,
         "link_layer": "InfiniBand"} for p in (1, 2)]


def test_ibstatus_duplicate_port(corpus):
    text = corpus("ibstatus-cx3-fdr-2port/ibstatus.txt")
    warnings = []
    cas = parse_ibstatus(text + "\n" + text, warnings)
    assert len(cas[0]["ports"]) == 2
    assert warnings == ["mlx4_0: port 1 listed twice; kept the first",
                        "mlx4_0: port 2 listed twice; kept the first"]


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibstatus])
@pytest.mark.parametrize("text", [
    "", "\n\n", "random words\nmore words\n", "\x00\x01binary\xff",
    "ibpanic: [4242] main: stat of IB device 'mlx5_0' failed: No such file or directory"])
def test_nothing_usable_raises(parser, text, assert_not_bug):
    with pytest.raises(ParseError) as info:
        parser(text)
    assert_not_bug(info.value)


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibstatus])
def test_no_devices_message_is_an_empty_list(parser):
    warnings = []
    assert parser("No IB devices found\n", warnings) == []
    assert warnings and "No IB devices found" in warnings[-1]


def test_each_parser_rejects_the_other_format(corpus):
    with pytest.raises(ParseError):
        parse_ibstat(corpus("ibstatus-cx3-fdr-2port/ibstatus.txt"))
    with pytest.raises(ParseError):
        parse_ibstatus(corpus(H20_IBSTAT))


def test_ibstat_repeated_output_is_read_once(corpus):
    text = corpus(H20_IBSTAT)
    warnings = []
    assert parse_ibstat(text + text, warnings) == parse_ibstat(text)
    assert warnings == ["CA mlx5_0 listed twice; kept the first", "CA mlx5_1 listed twice; kept the first"]
