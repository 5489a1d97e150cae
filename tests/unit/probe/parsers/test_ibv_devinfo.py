"""ibv_devinfo parser on published outputs (RoCE and InfiniBand, plain and -v) and error texts."""

from __future__ import annotations

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers.ibv_devinfo import parse_ibv_devinfo

CX3_ROCE = "ibv_devinfo-cx3-roce-2port/ibv_devinfo.txt"
CX3_IB = "ibv_devinfo-cx3-ib-2dev/ibv_devinfo.txt"


def port_view(port):
    return {k: port[k] for k in ("port", "state", "active_mtu", "max_mtu", "link_layer")}


def test_connectx3_roce_two_ethernet_ports(corpus):
    devices, warnings = parse_ibv_devinfo(corpus(CX3_ROCE))
    assert warnings == []
    assert len(devices) == 1
    dev = devices[0]
    assert {k: dev[k] for k in ("name", "transport", "fw_ver", "node_guid", "board_id")} == {
        "name": "mlx4_0", "transport": "InfiniBand (0)", "fw_ver": "2.40.7000",
        "node_guid": "248a:0703:00f6:3370", "board_id": "MT_1090110023"}
    assert [port_view(p) for p in dev["ports"]] == [
        {"port": p, "state": "PORT_ACTIVE", "active_mtu": 1024, "max_mtu": 4096, "link_layer": "Ethernet"}
        for p in (1, 2)]
    assert {p["phys_state"] for p in dev["ports"]} == {None}, "only -v prints phys_state"


def test_connectx3_infiniband_two_devices(corpus):
    devices, warnings = parse_ibv_devinfo(corpus(CX3_IB))
    assert warnings == []
    assert [d["name"] for d in devices] == ["mlx4_1", "mlx4_0"], "order as printed"
    assert [(p["port"], p["state"], p["link_layer"]) for p in devices[1]["ports"]] == [
        (1, "PORT_ACTIVE", "InfiniBand"), (2, "PORT_DOWN", "InfiniBand")]
    assert devices[1]["node_guid"] == "e41d:2d03:00e0:c740"


def test_connectx3_verbose_single_port(corpus):
    devices, warnings = parse_ibv_devinfo(corpus("ibv_devinfo-cx3-ib-2dev/ibv_devinfo-d-i2-v.txt"))
    assert len(devices) == 1 and devices[0]["name"] == "mlx4_1"
    port = devices[0]["ports"]
    assert [(p["port"], p["state"], p["phys_state"], p["active_mtu"]) for p in port] == [
        (2, "PORT_DOWN", "POLLING", 4096)]
    assert port[0]["gids"] == [{"index": 0, "gid": "fe80:0000:0000:0000:7cfe:9003:00a5:95c2", "type": None}]
    assert warnings == ["mlx4_1: phys_port_cnt 2, 1 port(s) listed (-i used, or output cut off)"]


def test_softroce_verbose_space_padded(corpus):
    devices, warnings = parse_ibv_devinfo(corpus("ibv_devinfo-softroce-rxe-verbose/ibv_devinfo-v.txt"))
    assert warnings == []
    (dev,) = devices
    assert (dev["name"], dev["board_id"]) == ("rxe0", None)
    (port,) = dev["ports"]
    assert port_view(port) == {"port": 1, "state": "PORT_ACTIVE", "active_mtu": 1024, "max_mtu": 4096,
                               "link_layer": "Ethernet"}
    assert port["phys_state"] == "LINK_UP"
    assert [g["index"] for g in port["gids"]] == [0, 1]
    assert port["gids"][1]["gid"] == "0000:0000:0000:0000:0000:ffff:0a0b:0bfb"


def test_device_list_output(corpus):
    devices, warnings = parse_ibv_devinfo(corpus("ibv_devinfo-cx3-ib-2dev/ibv_devinfo-l.txt"))
    assert [(d["name"], d["ports"]) for d in devices] == [("mlx4_1", []), ("mlx4_0", [])]
    assert warnings == ["device list (-l) only: no port details"]


def test_gid_type_suffix_and_old_ib_link_layer(corpus):
    text = corpus("ibv_devinfo-cx3-ib-2dev/ibv_devinfo-d-i2-v.txt")
    text = text.replace("95c2\n", "95c2, IB/RoCE v1\n")
    text = text.replace("link_layer:\t\tInfiniBand", "link_layer:\t\tIB")
    port = parse_ibv_devinfo(text)[0][0]["ports"][0]
    assert port["gids"][0]["type"] == "IB/RoCE v1"
    assert port["link_layer"] == "InfiniBand"


@pytest.mark.parametrize("message", [
    "Failed to get IB devices list: Function not implemented",
    "No IB devices found",
    "Failed to get IB devices list: Unknown error -38",
])
def test_error_texts_give_no_devices_and_a_warning(message):
    devices, warnings = parse_ibv_devinfo(message + "\n")
    assert devices == [] and warnings == [message]


def test_error_line_next_to_devices(corpus):
    devices, warnings = parse_ibv_devinfo(corpus(CX3_ROCE) + "Failed to query port 3 props\n")
    assert len(devices) == 1
    assert warnings == ["Failed to query port 3 props"]


def test_cut_off_output(corpus):
    text = corpus(CX3_IB)
    devices, warnings = parse_ibv_devinfo(text[: text.index("\t\t\tstate", text.index("mlx4_0"))])
    assert [len(d["ports"]) for d in devices] == [2, 1]
    assert devices[1]["ports"][0]["state"] is None
    assert any("mlx4_0 port 1: no state" in w for w in warnings)


def test_port_without_link_layer_line():
    # libibverbs before link_layer existed (and Soft-RoCE in 2016) printed no link_layer line
    text = ("hca_id:\trxe0\n\ttransport:\t\t\tInfiniBand (0)\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n"
            "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t1024 (3)\n")
    devices, warnings = parse_ibv_devinfo(text)
    assert devices[0]["ports"][0]["link_layer"] is None
    assert warnings == ["rxe0 port 1: no link_layer (old libibverbs, or output cut off)"]


def test_duplicate_device_and_prompt_line(corpus):
    text = corpus(CX3_ROCE)
    devices, warnings = parse_ibv_devinfo("$ ibv_devinfo\n" + text + "\n" + text)
    assert len(devices) == 1
    assert warnings == ["ignored line '$ ibv_devinfo'", "mlx4_0 listed twice; kept the first"]


@pytest.mark.parametrize("text", ["", " \n", "hello world\n", "\x00\xff" * 10,
                                  "port:\t1\nstate: PORT_ACTIVE\n"])
def test_nothing_usable_raises(text, assert_not_bug):
    with pytest.raises(ParseError) as info:
        parse_ibv_devinfo(text)
    assert_not_bug(info.value)


def test_key_value_lines_that_are_something_else_inside_a_device():
    """hca_id/port lines, ibv_devinfo's own messages and listings keep their meaning mid-device."""
    text = ("hca_id:\tmlx5_0\n\tfw_ver:\t\t1.0\n\tIBV_DEVINFO: cannot query port 2\n\t\tport:\t1\n"
            "\t\t\tstate:\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\tEthernet\n\tPort:\t9\n"
            "hca_id:\tmlx5_0\n\tfw_ver:\t\t2.0\n1 HCA found:\n\tmlx5_1\n")
    devices, warnings = parse_ibv_devinfo(text)
    assert [d["name"] for d in devices] == ["mlx5_0", "mlx5_1"]
    assert devices[0]["fw_ver"] == "1.0" and [p["port"] for p in devices[0]["ports"]] == [1]
    assert "IBV_DEVINFO: cannot query port 2" in warnings
    assert any("mlx5_0 listed twice" in w for w in warnings)
