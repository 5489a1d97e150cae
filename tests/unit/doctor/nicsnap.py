"""Snapshots for the judging tests, built from the real outputs in tests/fixtures/nic_counters.

`real_snapshot()` is one reading of the ConnectX-4 Lx RoCE port of show_counters_mlx5_bond_0.txt
(hw_counters, real), whose netdev eth03 carries the real mlx5 `ethtool -S` counters (Linux 6.5)
and the real virtio sysfs values; the port's PMA counters (ports/1/counters) are stated below.
`later()` makes the second reading by arithmetic on the first; each test says what it adds.
"""

from __future__ import annotations

import copy
from pathlib import Path

from rocetune.model.nic_counters import HW_COUNTERS, SNAPSHOT_KIND, SNAPSHOT_VERSION, wanted_ethtool
from rocetune.probe.parsers.ethtool_stats import parse_ethtool_stats

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nic_counters"
VIRTIO = FIXTURES / "virtio-vm-eth0"
PORT = "mlx5_bond_0/1"
NETDEV = "eth03"
GB = 10 ** 9
# Stated PMA counters of the port (not from a real output): data counters in 4-byte words.
PMA = {"port_rcv_data": 2402134794, "port_xmit_data": 1200000000, "symbol_error": 0, "link_downed": 1,
       "link_error_recovery": 0, "port_rcv_errors": 0, "excessive_buffer_overrun_errors": 0,
       "port_xmit_discards": 0}


def _listing(name):
    out = {}
    for line in (FIXTURES / name).read_text().splitlines()[1:]:
        key, _, value = line.partition(": ")
        out[key] = int(value)
    return out


def real_snapshot(rate_gbps=25):
    hw = {k: v for k, v in _listing("show_counters_mlx5_bond_0.txt").items() if k in HW_COUNTERS}
    ethtool = parse_ethtool_stats((FIXTURES / "ethtool-S_mlx5_xdp_linux-6.5.txt").read_text())["counters"]
    sysfs = {"carrier_changes": int((VIRTIO / "sys/class/net/eth0/carrier_changes").read_text()),
             "carrier_down_count": int((VIRTIO / "sys/class/net/eth0/carrier_down_count").read_text())}
    for k in ("rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped"):
        sysfs[k] = int((VIRTIO / "sys/class/net/eth0/statistics" / k).read_text())
    return {
        "kind": SNAPSHOT_KIND, "version": SNAPSHOT_VERSION,
        "taken_at": {"wall": "2026-11-25T16:30:00Z", "epoch_s": 1795624200.0,
                     "uptime_s": float((VIRTIO / "proc/uptime").read_text().split()[0])},
        "boot_id": (VIRTIO / "proc/sys/kernel/random/boot_id").read_text().strip(),
        "ports": {PORT: {"device": "mlx5_bond_0", "port": 1, "netdev": NETDEV, "link_layer": "Ethernet",
                         "rate_gbps": rate_gbps, "counters": {**hw, **PMA}}},
        "netdevs": {NETDEV: {"vf": False, "sysfs": sysfs,
                             "ethtool": {k: v for k, v in ethtool.items() if wanted_ethtool(k)}}},
        "warnings": [],
    }


def later(snapshot, hours=1.0, port=None, ethtool=None, sysfs=None, rx_gb=0.0, tx_gb=0.0):
    """`snapshot` `hours` later with the given counters increased (negative: decreased) and rx_gb /
    tx_gb more GB through the port (its PMA data words and the physical-port byte counters)."""
    s = copy.deepcopy(snapshot)
    s["taken_at"]["uptime_s"] += hours * 3600
    s["taken_at"]["epoch_s"] += hours * 3600
    pc = s["ports"][PORT]["counters"]
    pc["port_rcv_data"] += int(rx_gb * GB / 4)
    pc["port_xmit_data"] += int(tx_gb * GB / 4)
    nd = s["netdevs"][NETDEV]
    nd["ethtool"]["rx_bytes_phy"] += int(rx_gb * GB)
    nd["ethtool"]["tx_bytes_phy"] += int(tx_gb * GB)
    for target, changes in ((pc, port), (nd["ethtool"], ethtool), (nd["sysfs"], sysfs)):
        for k, v in (changes or {}).items():
            target[k] = target.get(k, 0) + v
    return s
