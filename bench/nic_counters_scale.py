#!/usr/bin/env python3
"""Cost of a NIC counter snapshot on an SR-IOV host, against reading every counter file.

    PYTHONPATH=src python bench/nic_counters_scale.py [--ports 522] [--runs 5]

Builds, in a temporary directory, a host root of N mlx5 RoCE ports (each with the real
hw_counters listing of tests/fixtures/nic_counters/show_counters_mlx5_bond_0.txt and the 16
IBTA PortCounters) whose netdevs are VFs (`device/physfn`, so no ethtool runs), then times:

    snapshot   rocetune.probe.sources.nic_counters.take_snapshot (list each directory, read
               the judged counters)
    naive      open and read every file of every counters/ and hw_counters/ directory
    judge      rocetune.doctor.nic_health.judge of two snapshots

and prints the medians, files opened per port, and the ratios. Targets: snapshot <= 0.6x naive
(it opens 29 files a port, 18 of them counters, against 46 counter files), judge <= 0.5x
snapshot (judging must not cost more than reading).

Measured on 2 shared vCPUs (load average 4-6), 522 ports, medians of 5, three runs: snapshot
176-276 ms, naive 471-534 ms (0.37-0.57x), judge 66-76 ms (0.25-0.43x the snapshot; 301 ms
before a netdev's link rate was looked up once per snapshot instead of once per check).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rocetune.doctor.nic_health import judge  # noqa: E402
from rocetune.hostfs.context import ProbeContext  # noqa: E402
from rocetune.hostfs.recorder import Recorder  # noqa: E402
from rocetune.hostfs.root import HostRoot  # noqa: E402
from rocetune.probe.sources import nic_counters  # noqa: E402

LISTING = ROOT / "tests/fixtures/nic_counters/show_counters_mlx5_bond_0.txt"
PMA = ["VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
       "local_link_integrity_errors", "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors",
       "port_rcv_packets", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
       "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "symbol_error"]


def build(root: Path, ports: int) -> None:
    hw = [line.partition(": ") for line in LISTING.read_text().splitlines()[1:]]
    for i in range(ports):
        base = root / f"sys/class/infiniband/mlx5_{i}/ports/1"
        for sub, items in (("hw_counters", [(k, v) for k, _, v in hw]), ("counters", [(k, "0") for k in PMA])):
            (base / sub).mkdir(parents=True)
            for k, v in items:
                (base / sub / k).write_text(v + "\n")
        (base / "gid_attrs/ndevs").mkdir(parents=True)
        (base / "gid_attrs/ndevs/0").write_text(f"ens1f0v{i}\n")
        (base / "link_layer").write_text("Ethernet\n")
        (base / "rate").write_text("25 Gb/sec (1X EDR)\n")
        net = root / f"sys/class/net/ens1f0v{i}"
        (net / "statistics").mkdir(parents=True)
        (net / "device").mkdir()
        (net / "device/physfn").write_text("")
        for k in ("carrier_changes", "carrier_down_count"):
            (net / k).write_text("2\n")
        for k in ("rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped"):
            (net / "statistics" / k).write_text("0\n")
    (root / "proc").mkdir()
    (root / "proc/uptime").write_text("100.0 1.0\n")


def naive(root: Path) -> int:
    n = 0
    ib = root / "sys/class/infiniband"
    for dev in os.listdir(ib):
        for sub in ("counters", "hw_counters"):
            d = ib / dev / "ports/1" / sub
            for name in os.listdir(d):
                with open(d / name) as fh:
                    fh.read()
                n += 1
    return n


def timed(fn, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", type=int, default=522)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, args.ports)
        rec = Recorder()
        nic_counters.probe(ProbeContext(HostRoot(str(root), recorder=rec)))
        opened = len(rec.files)
        naive_files = naive(root)
        t_snap = timed(lambda: nic_counters.take_snapshot(str(root)), args.runs)
        t_naive = timed(lambda: naive(root), args.runs)
        a = nic_counters.take_snapshot(str(root))
        b = nic_counters.take_snapshot(str(root))
        b["taken_at"]["uptime_s"] += 3600
        t_judge = timed(lambda: judge(a, b), args.runs)
    print(f"{args.ports} ports, medians of {args.runs} runs")
    print(f"  snapshot {t_snap:8.1f} ms  files opened {opened} ({opened / args.ports:.1f} a port)")
    print(f"  naive    {t_naive:8.1f} ms  files opened {naive_files} ({naive_files / args.ports:.1f} a port)")
    print(f"  judge    {t_judge:8.1f} ms")
    print(f"  snapshot / naive = {t_snap / t_naive:.2f} (target <= 0.6), "
          f"judge / snapshot = {t_judge / t_snap:.2f} (target <= 0.5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
