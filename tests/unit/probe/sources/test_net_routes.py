"""The net source's routing table: /proc/net/route read through the root, as Features net.routes."""

from __future__ import annotations

from pathlib import Path

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources.net import ipv4_routes
from tests.unit.treekit import make

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "hosts" / "dgx-h100-roce"


def test_routes_of_a_recorded_host_keep_gateways_only_where_flagged():
    routes = ipv4_routes(ProbeContext(HostRoot(str(FIXTURE))))
    assert {"interface": "bond0", "dest": "0.0.0.0", "prefixlen": 0, "gateway": "10.20.0.1"} in routes
    assert {"interface": "enp24s0np0", "dest": "10.100.0.0", "prefixlen": 24, "gateway": None} in routes
    assert [r["interface"] for r in routes] == sorted(r["interface"] for r in routes)


def test_a_routed_rail_and_odd_lines(tmp_path):
    text = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
            "ens1np0\t0000A8C0\t0100A8C0\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
            "ens1np0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
            "short line\n"
            "ens2np0\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FF00FF\t0\t0\t0\n")
    routes = ipv4_routes(ProbeContext(HostRoot(make(tmp_path, {"proc/net/route": text}))))
    assert routes == [{"interface": "ens1np0", "dest": "192.168.0.0", "prefixlen": 16, "gateway": "192.168.0.1"},
                      {"interface": "ens1np0", "dest": "192.168.1.0", "prefixlen": 24, "gateway": None}]


def test_no_route_file_means_unknown(tmp_path):
    assert ipv4_routes(ProbeContext(HostRoot(make(tmp_path, {"etc/hostname": "x\n"})))) is None
