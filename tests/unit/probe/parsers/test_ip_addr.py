"""ip -j addr show parser."""

from __future__ import annotations

import json

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers.ip_addr import parse_ip_addr

RECORDED = "ip-addr-debian12-build-host/ip-j-addr-show.json"


def test_recorded_debian12_host(corpus):
    text = corpus(RECORDED)
    warnings = []
    addrs = parse_ip_addr(text, warnings)
    assert warnings == []
    raw = json.loads(text)
    assert list(addrs) == [e["ifname"] for e in raw], "every interface, in order"
    for entry in raw:
        want = [{"family": a["family"], "address": a["local"], "prefixlen": a["prefixlen"]}
                for a in entry.get("addr_info", []) if a.get("family") in ("inet", "inet6")]
        assert addrs[entry["ifname"]] == want
    assert {"family": "inet", "address": "127.0.0.1", "prefixlen": 8} in addrs["lo"]


def test_iproute2_empty_objects_and_missing_addr_info():
    text = json.dumps([{}, {"ifindex": 3, "ifname": "ib0"}, {},
                       {"ifname": "eth0",
                        "addr_info": [{}, {"family": "inet", "local": "10.1.2.3", "prefixlen": 16}]}])
    assert parse_ip_addr(text) == {
        "ib0": [], "eth0": [{"family": "inet", "address": "10.1.2.3", "prefixlen": 16}]}


def test_malformed_entries_are_skipped_with_warnings():
    text = json.dumps([
        "eth9", {"addr_info": []},
        {"ifname": "eth0", "addr_info": [
            {"family": "inet", "local": "10.0.0.1", "prefixlen": True},
            {"family": "inet", "local": "not-an-ip", "prefixlen": 24},
            {"family": "inet", "local": "fe80::1", "prefixlen": 64},
            {"family": "inet6", "local": "FE80::1", "prefixlen": 64},
            {"family": "inet6", "local": "fe80::2", "prefixlen": 129},
            {"family": "link", "local": "aa:bb", "prefixlen": 0},
        ]},
        {"ifname": "eth1", "addr_info": "oops"},
    ])
    warnings = []
    assert parse_ip_addr(text, warnings) == {
        "eth0": [{"family": "inet6", "address": "fe80::1", "prefixlen": 64}], "eth1": []}
    assert len(warnings) == 7


@pytest.mark.parametrize("text", ["", "   ", "not json", "{}", '{"ifname": "eth0"}', "42", "null",
                                  "[" * 100000, '[{"ifname": "eth0"', "\x00\xff", "1e999999999999999"])
def test_garbage_raises_parse_error(text, assert_not_bug):
    with pytest.raises(ParseError) as info:
        parse_ip_addr(text)
    assert_not_bug(info.value)


def test_huge_integer_is_a_parse_error(assert_not_bug):
    with pytest.raises(ParseError) as info:
        parse_ip_addr("[" + "9" * 5000 + "]")
    assert_not_bug(info.value)
