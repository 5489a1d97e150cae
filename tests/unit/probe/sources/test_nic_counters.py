"""The NIC counters source, over host roots built in tmp_path from real outputs.

The mlx5 tree models the ConnectX-4 Lx host of tests/fixtures/nic_counters/show_counters_*.txt:
its hw_counters files are that real listing (name: value -> one file each), its ethtool output
is the real mlx5 `ethtool -S` (Linux 6.5), its netdev files the real virtio capture. The
ports/1/counters names are the kernel's (Documentation/ABI/stable/sysfs-class-infiniband), with
values stated here. The rxe tree uses the names of drivers/infiniband/sw/rxe/rxe_hw_counters.c.
"""

import shutil
from pathlib import Path

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.recorder import Recorder
from rocetune.hostfs.root import HostRoot
from rocetune.hostfs.runners import RecordedRunner
from rocetune.model.nic_counters import HW_COUNTERS, SNAPSHOT_KIND, validate_snapshot
from rocetune.probe.sources import nic_counters
from tests.unit.treekit import Dir, make

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nic_counters"
IB = "sys/class/infiniband"
VIRTIO = FIXTURES / "virtio-vm-eth0"


def listing(name):
    """`show_counters` output -> {counter: text of its sysfs file}."""
    out = {}
    for line in (FIXTURES / name).read_text().splitlines()[1:]:
        key, _, value = line.partition(": ")
        out[key] = value + "\n"
    return out


PMA = {"port_rcv_data": "2402134794\n", "port_xmit_data": "1200000000\n", "port_rcv_packets": "9\n",
       "symbol_error": "0\n", "link_downed": "1\n", "link_error_recovery": "0\n", "port_rcv_errors": "0\n",
       "excessive_buffer_overrun_errors": "0\n", "port_xmit_discards": "0\n", "VL15_dropped": "0\n"}


def mlx5_tree(ifname="eth03", hw="show_counters_mlx5_bond_0.txt"):
    base = f"{IB}/mlx5_bond_0/ports/1"
    tree = {f"{base}/link_layer": "Ethernet\n", f"{base}/rate": "25 Gb/sec (1X EDR)\n",
            f"{base}/gid_attrs/ndevs/0": f"{ifname}\n"}
    tree.update({f"{base}/hw_counters/{k}": v for k, v in listing(hw).items()})
    tree.update({f"{base}/counters/{k}": v for k, v in PMA.items()})
    net = f"sys/class/net/{ifname}"
    for f in sorted(VIRTIO.joinpath("sys/class/net/eth0").rglob("*")):
        if f.is_file():
            tree[f"{net}/{f.relative_to(VIRTIO / 'sys/class/net/eth0')}"] = f.read_text()
    tree[f"commands/ethtool_-S_{ifname}.txt"] = (FIXTURES / "ethtool-S_mlx5_xdp_linux-6.5.txt").read_text()
    tree["proc/uptime"] = (VIRTIO / "proc/uptime").read_text()
    tree["proc/sys/kernel/random/boot_id"] = (VIRTIO / "proc/sys/kernel/random/boot_id").read_text()
    return tree


def snap(root, **kw):
    return nic_counters.take_snapshot(str(root), clock=lambda: 1795624200.0, **kw)


def test_mlx5_port_reads_the_judged_counters_of_the_real_listing(tmp_path):
    s = snap(make(tmp_path, mlx5_tree()))
    assert s["warnings"] == []
    port = s["ports"]["mlx5_bond_0/1"]
    assert port["netdev"] == "eth03" and port["rate_gbps"] == 25 and port["link_layer"] == "Ethernet"
    c = port["counters"]
    assert c["out_of_sequence"] == 1811101 and c["np_cnp_sent"] == 1052612505
    assert c["np_ecn_marked_roce_packets"] == 21278189006 and c["rp_cnp_handled"] == 0
    assert c["port_rcv_data"] == 2402134794 and c["link_downed"] == 1
    # not judged, so not read: traffic counts, CQE errors, the lifespan setting
    assert not {"rx_write_requests", "resp_cqe_error", "lifespan", "VL15_dropped", "port_rcv_packets"} & set(c)
    validate_snapshot(s)
    assert s["kind"] == SNAPSHOT_KIND and s["taken_at"]["wall"] == "2026-11-25T16:30:00Z"


def test_only_the_judged_files_are_opened(tmp_path):
    root = make(tmp_path, mlx5_tree())
    rec = Recorder()
    ctx = ProbeContext(HostRoot(root, recorder=rec))
    nic_counters.probe(ctx)
    hw_read = {p.rsplit("/", 1)[1] for p in rec.files if "/hw_counters/" in p}
    present = set(listing("show_counters_mlx5_bond_0.txt"))
    assert hw_read == present & set(HW_COUNTERS)


def test_netdev_gets_sysfs_and_the_judged_ethtool_counters(tmp_path):
    s = snap(make(tmp_path, mlx5_tree()))
    nd = s["netdevs"]["eth03"]
    assert nd["vf"] is False
    assert nd["sysfs"]["carrier_changes"] == int((VIRTIO / "sys/class/net/eth0/carrier_changes").read_text())
    assert nd["sysfs"]["rx_bytes"] == int((VIRTIO / "sys/class/net/eth0/statistics/rx_bytes").read_text())
    e = nd["ethtool"]
    assert e["tx_pause_ctrl_phy"] == 44414017 and e["rx_prio0_discards"] == 441063206498
    assert e["rx_bytes_phy"] == 46609758231313 and e["tx_global_pause_duration"] == 5961284324
    assert "rx_64_bytes_phy" not in e and "rx0_xdp_drop" not in e and "rx_packets" not in e
    assert s["boot_id"] == "ea7f229c-cc14-4570-8bcb-c097f2dafe16"
    assert s["taken_at"]["uptime_s"] == float((VIRTIO / "proc/uptime").read_text().split()[0])


def test_soft_roce_port_has_hw_counters_only_and_its_parent_netdev(tmp_path):
    rxe = f"{IB}/rxe0"
    tree = {f"{rxe}/parent": "eth0\n", f"{rxe}/ports/1/link_layer": "Ethernet\n",
            f"{rxe}/ports/1/rate": "2.5 Gb/sec (1X SDR)\n"}
    for name in ("sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
                 "send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err",
                 "retry_rnr_exceeded_err", "completer_retry_err", "send_err", "link_downed",
                 "rdma_sends", "rdma_recvs"):
        tree[f"{rxe}/ports/1/hw_counters/{name}"] = "3\n"
    root = make(tmp_path, tree)
    shutil.copytree(VIRTIO / "sys/class/net", Path(root) / "sys/class/net")
    s = snap(root)
    port = s["ports"]["rxe0/1"]
    assert port["netdev"] == "eth0" and port["rate_gbps"] == 2.5
    assert set(port["counters"]) == {"duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "send_rnr_err",
                                     "rcvd_seq_err", "retry_exceeded_err", "retry_rnr_exceeded_err",
                                     "completer_retry_err", "link_downed"}
    assert "eth0" in s["netdevs"]
    assert s["warnings"] == ["no ethtool output (not installed, or not recorded): pause frames and "
                             "physical-port counters were not read"]


def test_missing_is_silent_unreadable_and_garbage_warn_no_pma_is_silent(tmp_path):
    base = f"{IB}/i40iw0/ports/1"
    tree = {f"{base}/counters/link_downed": "N/A (no PMA)\n", f"{base}/counters/symbol_error": "abc\n",
            f"{base}/hw_counters/out_of_buffer": Dir("out_of_buffer")}
    s = snap(make(tmp_path, tree))
    assert s["ports"]["i40iw0/1"]["counters"] == {}
    assert len(s["warnings"]) == 2
    assert any("symbol_error: expected a counter, got 'abc'" in w for w in s["warnings"])
    assert any("hw_counters/out_of_buffer: is a directory" in w for w in s["warnings"])


def test_a_vf_gets_no_ethtool_run(tmp_path):
    tree = mlx5_tree(ifname="ens1f0v3")
    tree["sys/class/net/ens1f0v3/device/physfn"] = "link-target-is-irrelevant\n"
    root = make(tmp_path, tree)
    ran = []

    class Spy(RecordedRunner):
        def run(self, argv):
            ran.append(list(argv))
            return super().run(argv)

    s = snap(root, runner=Spy(HostRoot(root)))
    assert s["netdevs"]["ens1f0v3"]["vf"] is True and s["netdevs"]["ens1f0v3"]["ethtool"] == {}
    assert ran == []


def test_failed_ethtool_is_a_warning(tmp_path):
    tree = mlx5_tree()
    tree["commands/ethtool_-S_eth03.rc"] = "94\n"
    tree["commands/ethtool_-S_eth03.err"] = "Cannot get stats information: Operation not supported\n"
    s = snap(make(tmp_path, tree))
    assert s["netdevs"]["eth03"]["ethtool"] == {}
    assert s["warnings"] == ["ethtool -S eth03 failed (exit 94): Cannot get stats information: "
                             "Operation not supported"]


def test_io_counters_replace_the_sysfs_statistics(tmp_path):
    root = make(tmp_path, mlx5_tree())
    s = snap(root, io_counters=lambda: {"eth03": (10, 20, 1, 2, 3, 4)})
    sysfs = s["netdevs"]["eth03"]["sysfs"]
    assert {k: sysfs[k] for k in ("rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")} \
        == {"rx_bytes": 10, "tx_bytes": 20, "rx_errors": 1, "tx_errors": 2, "rx_dropped": 3, "tx_dropped": 4}
    assert sysfs["carrier_changes"] == 2  # still from sysfs


def test_named_netdev_that_does_not_exist_is_warned(tmp_path):
    s = snap(make(tmp_path, {"proc/uptime": "5.0 1.0\n"}), netdevs=["bond9"])
    assert s["netdevs"] == {} and s["ports"] == {}
    assert s["warnings"] == ["bond9: no such interface under /sys/class/net"]
    assert s["boot_id"] is None and s["taken_at"]["uptime_s"] == 5.0


def test_real_virtio_capture_as_a_root(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(VIRTIO, root)
    s = snap(root, netdevs=["eth0"])
    assert s["netdevs"]["eth0"]["sysfs"] == {
        "carrier_changes": 2, "carrier_down_count": 1,
        **{k: int((VIRTIO / "sys/class/net/eth0/statistics" / k).read_text())
           for k in ("rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")}}


def test_infiniband_port_has_no_netdev_and_unreadable_gid_netdevs_are_silent(tmp_path):
    # an InfiniBand port (the kernel refuses reads of its gid_attrs/ndevs: modelled by a directory)
    # and a RoCE port whose GID attributes a container hides
    tree = {f"{IB}/mlx5_ib0/ports/1/link_layer": "InfiniBand\n",
            f"{IB}/mlx5_ib0/ports/1/gid_attrs/ndevs/0": Dir("0"),
            f"{IB}/mlx5_ib0/ports/1/counters/symbol_error": "7\n",
            f"{IB}/mlx5_2/ports/1/link_layer": "Ethernet\n",
            f"{IB}/mlx5_2/ports/1/gid_attrs/ndevs/0": Dir("0")}
    s = snap(make(tmp_path, tree))
    assert s["ports"]["mlx5_ib0/1"]["netdev"] is None and s["ports"]["mlx5_ib0/1"]["counters"] == {"symbol_error": 7}
    assert s["ports"]["mlx5_2/1"]["netdev"] is None
    assert s["warnings"] == [] and s["netdevs"] == {}


class _LiveRoot:
    """A root that says it is this machine's own, for the psutil branch (nothing reads it)."""

    is_live = True


def test_without_psutil_the_netdev_counters_come_from_sysfs(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "psutil", None)  # `import psutil` raises ImportError
    ctx = ProbeContext(_LiveRoot(), runner=object())
    assert nic_counters._io_counters(ctx, None) == {}
    assert ctx.status.warnings == []


def test_psutil_is_read_once_for_every_nic_and_its_failure_is_a_warning(monkeypatch):
    import sys
    import types

    class Stats:
        bytes_recv, bytes_sent, errin, errout, dropin, dropout = 10, 20, 1, 2, 3, 4

    fake = types.ModuleType("psutil")
    fake.net_io_counters = lambda pernic: {"eth03": Stats()}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "psutil", fake)
    ctx = ProbeContext(_LiveRoot(), runner=object())
    assert nic_counters._io_counters(ctx, None) == {"eth03": (10, 20, 1, 2, 3, 4)}

    def broken(pernic):
        raise OSError("odd /proc/net/dev")

    fake.net_io_counters = broken  # type: ignore[attr-defined]
    assert nic_counters._io_counters(ctx, None) == {}
    assert ctx.status.warnings == ["psutil.net_io_counters failed (OSError): reading sysfs instead"]
