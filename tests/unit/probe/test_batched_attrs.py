"""The pci and net sources read each device's attributes in one batch (ProbeContext.attrs): what
they give, and what they warn of, is what one read at a time gave."""

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources import net, pci
from tests.unit.treekit import Dir, Link, make

BDF = "0000:18:00.0"
DEV = f"sys/devices/pci0000:17/{BDF}"


def host(tmp_path, **over):
    tree = {
        f"{DEV}/vendor": "0x15b3\n", f"{DEV}/class": "0x020000\n", f"{DEV}/device": "0x1021\n",
        f"{DEV}/numa_node": "1\n", f"{DEV}/current_link_speed": "16.0 GT/s PCIe\n",
        f"{DEV}/max_link_speed": "32.0 GT/s PCIe\n", f"{DEV}/current_link_width": "16\n",
        f"{DEV}/max_link_width": "16\n", f"{DEV}/sriov_totalvfs": "8\n", f"{DEV}/sriov_numvfs": "0\n",
        f"sys/bus/pci/devices/{BDF}": Link(f"../../../devices/pci0000:17/{BDF}"),
        "sys/devices/virtual/net/eth0/type": "1\n", "sys/devices/virtual/net/eth0/operstate": "down\n",
        "sys/devices/virtual/net/eth0/mtu": "9000\n", "sys/devices/virtual/net/eth0/carrier": "0\n",
        "sys/devices/virtual/net/eth0/speed": "-1\n",
        "sys/class/net/eth0": Link("../../devices/virtual/net/eth0"),
    }
    tree.update(over)
    return ProbeContext(HostRoot(make(tmp_path, tree)))


def test_a_devices_attributes_and_what_is_unreadable_of_them(tmp_path):
    ctx = host(tmp_path, **{f"{DEV}/max_link_width": Dir("x"), f"{DEV}/numa_node": "one\n"})
    (d,) = pci.probe(ctx)["devices"]
    assert (d["vendor"], d["class"], d["device"], d["kind"]) == ("0x15b3", "0x020000", "0x1021", "nic")
    assert d["link"] == {"speed": "16.0 GT/s PCIe", "width": 16, "max_speed": "32.0 GT/s PCIe", "max_width": None,
                         "degraded": True}
    assert d["numa_node"] is None and d["sriov"] == {"total_vfs": 8, "num_vfs": 0, "physfn": None}
    assert sorted(ctx.status.warnings) == [
        f"/sys/bus/pci/devices/{BDF}/numa_node: expected a number, got 'one'",
        f"cannot read /sys/bus/pci/devices/{BDF}/max_link_width: is a directory"]


def test_a_down_links_speed_and_carrier_are_unknown_without_a_warning(tmp_path):
    ctx = host(tmp_path, **{"sys/devices/virtual/net/eth0/speed": Dir("x"),
                            "sys/devices/virtual/net/eth0/carrier": Dir("x"),
                            "sys/devices/virtual/net/eth0/mtu": Dir("x")})
    (i,) = net.probe(ctx)["interfaces"]
    assert (i["name"], i["operstate"], i["speed_mbps"], i["carrier"], i["mtu"]) == ("eth0", "down", None, None, None)
    assert [w for w in ctx.status.warnings if "/sys/" in w] == ["cannot read /sys/class/net/eth0/mtu: is a directory"]
    ctx = host(tmp_path / "up")
    (i,) = net.probe(ctx)["interfaces"]
    assert (i["speed_mbps"], i["carrier"], i["mtu"], i["kind"]) == (None, False, 9000, "virtual")
    assert [w for w in ctx.status.warnings if "/sys/" in w] == []
