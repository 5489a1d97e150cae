import pytest

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources import rdma
from tests.unit.treekit import Link, make

PORT = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/infiniband/mlx5_0/ports/1"
V4 = "0000:0000:0000:0000:0000:ffff:0a00:0001"
LL = "fe80:0000:0000:0000:ba3f:d2ff:fe00:0001"


def base_tree(**extra):
    tree = {
        "sys/class/infiniband/mlx5_0": Link("../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/infiniband/mlx5_0"),
        "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/infiniband/mlx5_0/device": Link("../../../0000:01:00.0"),
        "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/infiniband/mlx5_0/node_type": "1: CA\n",
        f"{PORT}/state": "4: ACTIVE\n",
        f"{PORT}/phys_state": "5: LinkUp\n",
        f"{PORT}/link_layer": "Ethernet\n",
        f"{PORT}/rate": "400 Gb/sec (4X NDR)\n",
        f"{PORT}/gids/0": LL + "\n", f"{PORT}/gid_attrs/types/0": "IB/RoCE v1\n",
        f"{PORT}/gids/1": LL + "\n", f"{PORT}/gid_attrs/types/1": "RoCE v2\n",
        f"{PORT}/gids/2": V4 + "\n", f"{PORT}/gid_attrs/types/2": "IB/RoCE v1\n",
        f"{PORT}/gids/3": V4 + "\n", f"{PORT}/gid_attrs/types/3": "RoCE v2\n",
        f"{PORT}/gids/4": "0000:0000:0000:0000:0000:0000:0000:0000\n",
    }
    for i in range(4):
        tree[f"{PORT}/gid_attrs/ndevs/{i}"] = "ens1f0np0\n"
    tree.update(extra)
    return tree


def run(root, net=None):
    ctx = ProbeContext(HostRoot(root))
    data = rdma.probe(ctx, net or {"interfaces": [{"name": "ens1f0np0", "mtu": 9000, "pci": "0000:01:00.0"}]})
    return data, ctx.status


def test_gid_table_gives_lowest_ipv4_roce_v2_index(tmp_path):
    data, status = run(make(tmp_path, base_tree()))
    port = data["devices"][0]["ports"][0]
    assert data["devices"][0]["pci"] == "0000:01:00.0"
    assert port["state"] == "ACTIVE" and port["phys_state"] == "LinkUp"
    assert port["roce_v2_ipv4_gids"] == [3]
    assert port["netdev"] == "ens1f0np0" and port["roce_mtu"] == 4096
    assert port["rate_gbps"] == 400
    assert [g["index"] for g in port["gids"]] == [0, 1, 2, 3]  # the all-zero entry is not a GID
    assert port["gids"][3]["ipv4"] == "10.0.0.1"
    assert status.warnings == []


def test_junk_gid_and_unreadable_types_warn_but_keep_the_rest(tmp_path):
    tree = base_tree(**{f"{PORT}/gids/5": "not-a-gid\n", f"{PORT}/gids/6": V4 + "\n"})
    tree[f"{PORT}/gid_attrs/types/3"] = b"\x00garbage"
    data, status = run(make(tmp_path, tree))
    port = data["devices"][0]["ports"][0]
    assert port["roce_v2_ipv4_gids"] == []
    assert any("GID 5" in w for w in status.warnings)
    assert any("unreadable" in w for w in status.warnings)


@pytest.mark.parametrize("mtu,expected", [(9000, 4096), (4200, 4096), (4191, 2048), (1500, 1024),
                                          (1280, 1024), (300, None), (None, None)])
def test_roce_mtu_follows_the_kernel(mtu, expected):
    assert rdma.roce_mtu(mtu) == expected


def test_no_devices_is_not_an_error(tmp_path):
    ctx = ProbeContext(HostRoot(make(tmp_path, {"sys/class/net/x": ""})))
    assert rdma.probe(ctx, None) == {"devices": []}
    assert ctx.status.ok and "no RDMA devices" in ctx.status.reason


def test_no_sysfs_is_not_no_rdma(tmp_path):
    """A root of pasted outputs with no sysfs: unknown, not 'no RDMA devices'."""
    ctx = ProbeContext(HostRoot(make(tmp_path, {"commands/nvidia-smi_topo_-m.txt": "x"})))
    assert rdma.probe(ctx, None) == {"devices": []}
    assert not ctx.status.ok and "cannot tell" in ctx.status.reason


def _ipaddress_fields(text):
    import ipaddress

    addr = ipaddress.IPv6Address(text.strip())
    v4 = addr.ipv4_mapped
    return (int(addr), str(addr), str(v4) if v4 is not None else None,
            str(addr) if v4 is None and not addr.is_link_local else None)


@pytest.mark.parametrize("text", [
    LL, V4, LL.upper() + "\n", "fd00:0000:0000:0001:0000:0000:0000:0001",  # first of two equal runs
    "2001:0db8:0000:0000:0001:0000:0000:0000",  # the longer run wins, at the end
    "0000:0000:0000:0000:0000:0000:0000:0001", "fe80:0000:0000:0000:0000:0000:0000:0000",
    "febf:ffff:0000:0000:0000:0000:0000:0001", "fec0:0000:0000:0000:0000:0000:0000:0001",
    "2001:0db8:0001:0000:0001:0000:0001:0001",  # a single zero hextet is not compressed
    "2001:db8::1", "::ffff:10.0.0.1",  # not the sysfs form: ipaddress reads them
])
def test_gid_fields_match_ipaddress(text):
    assert rdma.gid_fields(text) == _ipaddress_fields(text)


@pytest.mark.parametrize("text", ["0x00:0000:0000:0000:0000:0000:0000:0001", "1_00:0000:0000:0000:0000:0000:0000:0001",
                                  "zzzz:0000:0000:0000:0000:0000:0000:0001", "fe80::1::2", ""])
def test_gid_fields_refuse_what_is_not_a_gid(text):
    assert rdma.gid_fields(text) is None


def test_numa_node_of_the_pci_source_is_reused(tmp_path):
    bdf = "0000:01:00.0"
    make(tmp_path, base_tree(**{
        f"sys/bus/pci/devices/{bdf}": Link("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
        "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/numa_node": "1\n",
    }))
    read, _ = run(str(tmp_path))
    assert read["devices"][0]["numa_node"] == 1
    ctx = ProbeContext(HostRoot(str(tmp_path)))
    net = {"interfaces": [{"name": "ens1f0np0", "mtu": 9000, "pci": bdf}]}
    # what the PCI source read stands: the file is not read again (0 here, to tell them apart)
    assert rdma.probe(ctx, net, {"devices": [{"bdf": bdf, "numa_node": 0}]})["devices"][0]["numa_node"] == 0
    # a PCI source without a node for it (missing, -1, unreadable): read here as before
    assert rdma.probe(ctx, net, {"devices": [{"bdf": bdf, "numa_node": None}]})["devices"][0]["numa_node"] == 1


def test_no_sysfs_and_a_topo_legend_gives_device_names_without_ports(tmp_path):
    ctx = ProbeContext(HostRoot(make(tmp_path, {"commands/nvidia-smi_topo_-m.txt": "x"})))
    gpu = {"matrix": {"nics": [{"index": 0, "name": "mlx5_10"}, {"index": 1, "name": "mlx5_2"},
                               {"index": 2, "name": None}]}}
    data = rdma.probe(ctx, None, None, gpu)
    assert data["from_tools"] == "nvidia-smi topo -m"
    assert [(d["name"], d["ports"], d["ports_known"]) for d in data["devices"]] == [
        ("mlx5_2", [], False), ("mlx5_10", [], False)]
    assert ctx.status.ok and any("NIC legend" in w and "unknown" in w for w in ctx.status.warnings)
