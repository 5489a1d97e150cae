"""The NIC health counters: which ones a snapshot holds, and the snapshot's shape.

The probe reads exactly these (a host with hundreds of SR-IOV ports pays only for what is
judged); the doctor's judging module turns two snapshots into rates. Both import the names from
here, so a counter added to a check is read by the next snapshot.

A snapshot (``SNAPSHOT_KIND``, ``SNAPSHOT_VERSION``)::

    {"kind": "rocetune-nic-counters", "version": 1,
     "taken_at": {"wall": "2026-11-25T16:30:00Z", "epoch_s": 1795624200.0, "uptime_s": 319.1},
     "boot_id": "ea7f229c-...",
     "ports": {"mlx5_0/1": {"device": "mlx5_0", "port": 1, "netdev": "ens1f0np0",
                            "link_layer": "Ethernet", "rate_gbps": 100,
                            "counters": {"symbol_error": 0, "out_of_sequence": 12, ...}}},
     "netdevs": {"ens1f0np0": {"vf": false, "sysfs": {"carrier_changes": 2, "rx_bytes": ...},
                               "ethtool": {"rx_discards_phy": 5, ...}}},
     "warnings": [...]}

Counters missing on a host (a driver without them, zero counters some outputs leave out) are
absent from the dicts, never zero.
"""

from __future__ import annotations

import re

from ..errors import RocetuneError

SNAPSHOT_KIND = "rocetune-nic-counters"
SNAPSHOT_VERSION = 1

# /sys/class/infiniband/DEV/ports/N/counters: the IBTA PortCounters the PMA keeps (mlx5 emulates
# them for RoCE ports). port_rcv_data / port_xmit_data count 4-octet words.
PORT_COUNTERS = (
    "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery", "port_rcv_data",
    "port_rcv_errors", "port_xmit_data", "port_xmit_discards", "symbol_error",
)
PORT_DATA_WORD_BYTES = 4

# /sys/class/infiniband/DEV/ports/N/hw_counters: driver-defined. mlx5 names (drivers/infiniband/
# hw/mlx5/counters.c) and Soft-RoCE's (drivers/infiniband/sw/rxe/rxe_hw_counters.c, whose names
# changed: out_of_sequence, then out_of_seq_request).
HW_COUNTERS = (
    # mlx5
    "duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err",
    "req_rnr_retries_exceeded", "req_transport_retries_exceeded", "rnr_nak_retry_err",
    "rp_cnp_handled",
    # rxe
    "completer_retry_err", "link_downed", "out_of_seq_request", "rcvd_rnr_err", "rcvd_seq_err",
    "retry_exceeded_err", "retry_rnr_exceeded_err", "send_rnr_err",
)

# /sys/class/net/IF: carrier_* at the top, the rest below statistics/.
NETDEV_CARRIER = ("carrier_changes", "carrier_down_count")
NETDEV_STATISTICS = ("rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")

# `ethtool -S IF` (mlx5 names; Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
# counters.rst). Physical-port counters: a VF shows none of them.
ETHTOOL_COUNTERS = (
    "link_down_events_phy", "rx_bytes_phy", "tx_bytes_phy",
    "rx_symbol_err_phy", "rx_pcs_symbol_err_phy", "rx_crc_errors_phy",
    "rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer",
    "rx_pause_ctrl_phy", "tx_pause_ctrl_phy",
    "rx_global_pause", "tx_global_pause", "rx_global_pause_duration", "tx_global_pause_duration",
    "tx_pause_storm_warning_events", "tx_pause_storm_error_events",
)
ETHTOOL_PRIO_RE = re.compile(
    r"(?:rx_prio[0-7]_(?:pause|pause_duration|discards|buf_discard|cong_discard)"
    r"|tx_prio[0-7]_(?:pause|pause_duration))")


def wanted_ethtool(name: str) -> bool:
    """Whether an `ethtool -S` counter is one the health checks read."""
    return name in _ETHTOOL_SET or ETHTOOL_PRIO_RE.fullmatch(name) is not None


_ETHTOOL_SET = frozenset(ETHTOOL_COUNTERS)


def validate_snapshot(snapshot, what: str = "NIC counter snapshot") -> dict:
    """The snapshot itself when it has the documented shape; RocetuneError naming `what` if not."""
    def bad(reason: str):
        return RocetuneError(f"{what}: {reason}", hint="take a new snapshot; an old or foreign file "
                                                     "cannot be compared")

    if not isinstance(snapshot, dict) or snapshot.get("kind") != SNAPSHOT_KIND:
        raise bad(f"not a {SNAPSHOT_KIND} document")
    if snapshot.get("version") != SNAPSHOT_VERSION:
        raise bad(f"version {snapshot.get('version')!r}, this rocetune reads version {SNAPSHOT_VERSION}")
    taken = snapshot.get("taken_at")
    if not isinstance(taken, dict) or not isinstance(taken.get("epoch_s"), (int, float)):
        raise bad("taken_at.epoch_s is missing")
    for section, inner in (("ports", "counters"), ("netdevs", "sysfs"), ("netdevs", "ethtool")):
        entries = snapshot.get(section)
        if not isinstance(entries, dict):
            raise bad(f"{section} is not a mapping")
        for name, entry in entries.items():
            counters = entry.get(inner, {}) if isinstance(entry, dict) else None
            if not isinstance(counters, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counters.values()):
                raise bad(f"{section}.{name}.{inner} is not a mapping of counter -> non-negative integer")
    return snapshot
