"""Verbs source against a labelled stand-in for pyverbs device objects, and the sysfs cross-check."""

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources import verbs


class StandInDevice:
    """Stand-in for a pyverbs device-list entry (only `.name`); not a real library object."""

    def __init__(self, name):
        self.name = name.encode()


class StandInContext:
    """Stand-in for pyverbs.device.Context with canned query results; labelled as such."""

    PORTS = {"mlx5_0": [(4, 2, 5, 5)], "mlx5_1": [(1, 2, 3, 5)]}  # state, link layer, active, max MTU enum

    def __init__(self, name):
        self.name = name
        if name == "broken":
            raise OSError("Failed to open device")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def query_device(self):
        return type("Attr", (), {"phys_port_cnt": len(self.PORTS[self.name])})()

    def query_port(self, port):
        state, ll, active, mx = self.PORTS[self.name][port - 1]
        return type("PortAttr", (), {"state": state, "link_layer": ll, "active_mtu": active, "max_mtu": mx})()


def test_port_facts_from_verbs_objects(tmp_path):
    ctx = ProbeContext(HostRoot(str(tmp_path)))
    devs = verbs.devices_from_verbs(ctx, [StandInDevice("mlx5_0"), StandInDevice("mlx5_1"), StandInDevice("broken")],
                                    StandInContext)
    assert devs == [
        {"name": "mlx5_0", "ports": [{"port": 1, "state": "PORT_ACTIVE", "link_layer": "Ethernet",
                                      "active_mtu": 4096, "max_mtu": 4096}]},
        {"name": "mlx5_1", "ports": [{"port": 1, "state": "PORT_DOWN", "link_layer": "Ethernet",
                                      "active_mtu": 1024, "max_mtu": 4096}]},
    ]
    assert any("cannot query broken" in w for w in ctx.status.warnings)


def test_disagreements_with_sysfs_are_listed():
    sysfs = {"devices": [
        {"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "Ethernet", "roce_mtu": 4096,
                                      "netdev": "eth2", "netdev_mtu": 9000}]},
        {"name": "mlx5_1", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "Ethernet", "roce_mtu": 4096,
                                      "netdev": "eth3", "netdev_mtu": 9000}]},
        {"name": "mlx5_2", "ports": []},
    ]}
    seen = [
        {"name": "mlx5_0", "ports": [{"port": 1, "state": "PORT_ACTIVE", "link_layer": "Ethernet", "active_mtu": 4096}]},
        {"name": "mlx5_1", "ports": [{"port": 1, "state": "PORT_DOWN", "link_layer": "Ethernet", "active_mtu": 1024}]},
        {"name": "mlx5_9", "ports": []},
    ]
    problems = verbs.compare(seen, sysfs)
    assert problems == [
        "mlx5_1:1: state PORT_DOWN (verbs) vs ACTIVE (sysfs)",
        "mlx5_1:1: active MTU 1024 (verbs) vs 4096 derived from eth3 MTU 9000",
        "mlx5_9: seen by verbs but not in /sys/class/infiniband",
        "mlx5_2: in sysfs but not seen by verbs",
    ]


def test_recorded_ibv_devinfo_failure_on_a_host_without_rdma_is_quiet(tmp_path):
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "ibv_devinfo.txt").write_text("")
    (tmp_path / "commands" / "ibv_devinfo.err").write_text(
        "Failed to get IB devices list: Function not implemented\n")
    (tmp_path / "commands" / "ibv_devinfo.rc").write_text("255\n")
    ctx = ProbeContext(HostRoot(str(tmp_path)))
    data = verbs.probe(ctx, {"devices": []})
    assert data["devices"] == [] and ctx.status.ok and ctx.status.warnings == []
