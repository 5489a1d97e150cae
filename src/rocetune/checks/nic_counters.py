"""The NIC health checks: per id, the counters it reads, its threshold, why, the fix, the source
(a `CounterGrading` each).

`REGISTRY` (id -> doc, why, fix, source, threshold) is the table by id; rocetune.doctor.declarations
declares each check from it, and rocetune.doctor.nic_health judges the counters.
docs/health.md explains each id for people.

A check's rate is the worst of its signals (several counters often see the same events: a flap
is in link_down_events_phy and in carrier_changes), except that a signal with a `floor` raises
the severity to at least that whenever it moved (tx_pause_storm_error_events: the NIC gave up
pausing and dropped).

Units: `per_hour` (events per hour of the interval); `per_gb` (events per 10^9 bytes received or
sent in the interval, never less than 1 GB so an idle port is judged per hour-ish, not per
byte); `paused_fraction` (share of the interval the port spent paused).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Optional, Tuple

# The mean length of one pause in a real mlx5 output (tx_global_pause_duration / tx_global_pause:
# 771103810 us / 5745042 frames, tests/fixtures/nic_counters): how frames become time where a
# driver keeps no duration counter.
PAUSE_FRAME_S = 134e-6
# One GB of 4096-byte RoCE packets: the base of the ECN-mark thresholds.
PACKETS_PER_GB = 10 ** 9 // 4096


@dataclass(frozen=True)
class Threshold:
    unit: str  # per_hour | per_gb | paused_fraction
    warn: float  # a rate above this is a warning ...
    error: Optional[float]  # ... above this an error (None: derived from the link rate)
    min_delta: int = 1  # fewer events than this in the interval is noise, whatever the rate


@dataclass(frozen=True)
class Signal:
    source: str  # rdma (ports/N/counters, hw_counters) | sysfs (/sys/class/net/IF) | ethtool
    name: str  # a counter, or a regex over counter names when `pattern`
    direction: str = "rx"  # the bytes a per_gb rate divides by
    pattern: bool = False
    seconds: float = 1e-6  # paused_fraction: seconds per unit (us for durations)
    floor: Optional[str] = None  # any increase makes the result at least this severe


@dataclass(frozen=True)
class CounterGrading:
    """How one NIC health check grades a port: the counters it reads, the rates that make a warning or
    an error, and the words of its page."""

    id: str
    title: str
    signals: Tuple[Signal, ...]
    threshold: Threshold
    doc: str
    why: str
    fix: str
    source: str


def _prio(direction: str, what: str) -> str:
    return rf"{direction}_prio[0-7]_{what}"


CHECKS: Tuple[CounterGrading, ...] = (
    CounterGrading(
        "nic-link-flaps", "Link flaps",
        (Signal("rdma", "link_downed"), Signal("rdma", "link_error_recovery"),
         Signal("sysfs", "carrier_flaps"), Signal("ethtool", "link_down_events_phy")),
        Threshold("per_hour", warn=0, error=2),
        "The port's link went down (or an InfiniBand link retrained) during the interval: "
        "link_downed / link_error_recovery (IBTA PortCounters), link_down_events_phy (mlx5), and "
        "carrier_down_count or half of carrier_changes (each flap is a down and an up).",
        "A healthy link never goes down outside maintenance. Every flap tears down the path of "
        "every queue pair on the port: NCCL jobs fail with transport retry errors or hang.",
        "Check the cable and transceiver on both ends (`ethtool -m IF` for module temperature and "
        "power), reseat or replace them, and look at the switch port's log; mlx5's counters.rst "
        "says the same of link_down_events_phy.",
        "rdma-core infiniband-diags etc/error_thresholds (LinkDownedCounter=10, "
        "LinkErrorRecoveryCounter=10); Linux Documentation/networking/device_drivers/ethernet/"
        "mellanox/mlx5/counters.rst (link_down_events_phy)"),
    CounterGrading(
        "nic-symbol-errors", "Symbol errors",
        (Signal("rdma", "symbol_error"), Signal("ethtool", "rx_symbol_err_phy"),
         Signal("ethtool", "rx_pcs_symbol_err_phy")),
        Threshold("per_hour", warn=10, error=None),
        "Physical coding errors the port received that FEC did not correct: symbol_error "
        "(PortCounters), rx_symbol_err_phy and rx_pcs_symbol_err_phy (mlx5).",
        "They are counted on the wire whether or not data flows, so they are judged per hour. "
        "Warning above 10 an hour: the count infiniband-diags' ibqueryerrors flags by default. "
        "Error above the rate a bit error ratio of 1e-12 gives at the port's speed (3.6 an hour "
        "per Gb/s, 360 when the speed is unknown): ibdiagnet's default BER threshold. Each one is "
        "a lost packet and a retransmission.",
        "Clean or replace the cable/transceiver (the end that receives the errors is often not "
        "the one at fault: check the peer's counters too), and confirm FEC is on for the speed.",
        "rdma-core infiniband-diags etc/error_thresholds (SymbolErrorCounter=10); NVIDIA ibdiagnet "
        "user manual, Bit Error Rate (default threshold 1e-12); mlx5 counters.rst "
        "(rx_symbol_err_phy, rx_pcs_symbol_err_phy)"),
    CounterGrading(
        "nic-rcv-errors", "Receive errors",
        (Signal("rdma", "port_rcv_errors"), Signal("ethtool", "rx_crc_errors_phy"),
         Signal("sysfs", "rx_errors")),
        Threshold("per_gb", warn=0.01, error=1.0, min_delta=10),
        "Packets received with errors and dropped: port_rcv_errors (PortCounters), "
        "rx_crc_errors_phy (FCS errors, mlx5), rx_errors (the netdev).",
        "Judged per GB received, since more traffic meets more errors at the same link quality. "
        "At a bit error ratio of 1e-12 a GB (8e9 bits) loses 0.008 packets: warning above 0.01 "
        "per GB, error above 1 per GB (a link about a hundred times worse). Fewer than 10 in the "
        "interval are ignored (infiniband-diags' PortRcvErrors=10).",
        "Look at symbol errors on the same port (the usual cause is the physical link: cable, "
        "transceiver, dirty fibre); an MTU mismatch with the peer shows as oversize drops.",
        "rdma-core infiniband-diags etc/error_thresholds (PortRcvErrors=10); mlx5 counters.rst "
        "(rx_crc_errors_phy)"),
    CounterGrading(
        "nic-rx-discards", "Receive discards and buffer overruns",
        (Signal("rdma", "excessive_buffer_overrun_errors"), Signal("rdma", "out_of_buffer"),
         Signal("ethtool", "rx_discards_phy"), Signal("ethtool", "rx_out_of_buffer"),
         Signal("ethtool", _prio("rx", "(?:discards|buf_discard|cong_discard)"), pattern=True),
         Signal("sysfs", "rx_dropped")),
        Threshold("per_gb", warn=0, error=1.0, min_delta=10),
        "Packets the NIC dropped for lack of buffers: excessive_buffer_overrun_errors "
        "(PortCounters), out_of_buffer (RDMA receive queues with no WQE), rx_discards_phy, "
        "rx_out_of_buffer and rx_prioN_discards (mlx5), rx_dropped (the netdev).",
        "On a lossless RoCE class a drop costs a go-back-N retransmission of everything in "
        "flight, so any sustained drop is a warning (10 or more in the interval: infiniband-diags' "
        "ExcessiveBufferOverrunErrors=10) and more than one per GB received is an error. mlx5: "
        "rx_discards_phy rising means the adapter is congested and cannot absorb the traffic.",
        "The host is not keeping up: check PFC is enabled on the RoCE priority end to end (drops "
        "where pause should have been sent), the receive rings (`ethtool -g`), IRQ/CPU affinity of "
        "the NIC's queues, and PCIe (outbound_pci_stalled_*, a degraded link).",
        "rdma-core infiniband-diags etc/error_thresholds (ExcessiveBufferOverrunErrors=10); mlx5 "
        "counters.rst (rx_discards_phy, rx_out_of_buffer, rx_prio[p]_discards); kernel commit "
        "0ad17a8f7fa0 (IB/mlx5 out_of_buffer)"),
    CounterGrading(
        "nic-xmit-discards", "Transmit discards",
        (Signal("rdma", "port_xmit_discards", "tx"), Signal("ethtool", "tx_discards_phy", "tx"),
         Signal("sysfs", "tx_dropped", "tx")),
        Threshold("per_gb", warn=0, error=1.0, min_delta=100),
        "Packets the port discarded on transmit: port_xmit_discards (PortCounters), "
        "tx_discards_phy (mlx5: link down, head-of-line drop, pause from the network), "
        "tx_dropped (the netdev).",
        "Judged per GB sent; 100 or more in the interval (infiniband-diags' PortXmitDiscards=100) "
        "is a warning, more than one per GB an error.",
        "Look for pause received on the same port (the network holding the port back) and for "
        "link flaps; on InfiniBand, for a congested or misrouted fabric.",
        "rdma-core infiniband-diags etc/error_thresholds (PortXmitDiscards=100); mlx5 "
        "counters.rst (tx_discards_phy)"),
    CounterGrading(
        "nic-pause-storm", "Pause frames sent (slow receiver)",
        (Signal("ethtool", "tx_global_pause_duration"),
         Signal("ethtool", _prio("tx", "pause_duration"), pattern=True),
         Signal("ethtool", "tx_pause_ctrl_phy", seconds=PAUSE_FRAME_S),
         Signal("ethtool", "tx_global_pause", seconds=PAUSE_FRAME_S),
         Signal("ethtool", _prio("tx", "pause"), pattern=True, seconds=PAUSE_FRAME_S),
         Signal("ethtool", "tx_pause_storm_warning_events", floor="warning"),
         Signal("ethtool", "tx_pause_storm_error_events", floor="error")),
        Threshold("paused_fraction", warn=0.01, error=0.10),
        "This NIC asked its peer to stop sending: tx_pause_ctrl_phy, tx_global_pause(_duration), "
        "tx_prioN_pause(_duration) (mlx5). Durations are microseconds; where only frames are "
        "counted each stands for 134 us, the mean in a real mlx5 output.",
        "Sending pause means the host cannot absorb what arrives (mlx5 counters.rst): the slow-"
        "receiver symptom. The whole link, or the priority, stops for that time, and PFC spreads "
        "the stop back through the fabric. Warning above 1% of the interval paused, error above "
        "10%; a pause storm event (the NIC gave up pausing and dropped) is an error.",
        "Find why the host falls behind: receive buffers and rings, PCIe bandwidth and stalls, "
        "CPU/IRQ affinity, a process not posting receives; with PFC, confirm only the RoCE "
        "priority is lossless.",
        "mlx5 counters.rst (tx_pause_ctrl_phy, tx_prio[p]_pause, tx_prio[p]_pause_duration, "
        "tx_pause_storm_warning_events, tx_pause_storm_error_events)"),
    CounterGrading(
        "nic-pause-received", "Pause frames received (congested network)",
        (Signal("ethtool", "rx_global_pause_duration"),
         Signal("ethtool", _prio("rx", "pause_duration"), pattern=True),
         Signal("ethtool", "rx_pause_ctrl_phy", seconds=PAUSE_FRAME_S),
         Signal("ethtool", "rx_global_pause", seconds=PAUSE_FRAME_S),
         Signal("ethtool", _prio("rx", "pause"), pattern=True, seconds=PAUSE_FRAME_S)),
        Threshold("paused_fraction", warn=0.01, error=0.10),
        "The peer (the switch) told this NIC to stop sending: rx_pause_ctrl_phy, rx_global_pause"
        "(_duration), rx_prioN_pause(_duration) (mlx5).",
        "Received pause means the network cannot absorb what the NIC sends (mlx5 counters.rst); "
        "while paused the port sends nothing on that priority. Warning above 1% of the interval, "
        "error above 10%.",
        "Congestion downstream: check ECN/DCQCN is enabled on the switches and NICs (CNP "
        "counters), incast patterns, and the next hop's own pause counters; a peer that pauses "
        "constantly may be a slow receiver itself.",
        "mlx5 counters.rst (rx_pause_ctrl_phy, rx_prio[p]_pause, rx_prio[p]_pause_duration)"),
    CounterGrading(
        "nic-cnp-rate", "Congestion notifications",
        (Signal("rdma", "np_ecn_marked_roce_packets"), Signal("rdma", "np_cnp_sent"),
         Signal("rdma", "rp_cnp_handled", "tx")),
        Threshold("per_gb", warn=PACKETS_PER_GB / 100, error=PACKETS_PER_GB / 10),
        "RoCE congestion control (DCQCN) at work: np_ecn_marked_roce_packets and np_cnp_sent "
        "(ECN-marked packets this port received and the CNPs it answered with), rp_cnp_handled "
        "(CNPs that slowed this port's sends), per GB received or sent.",
        "Some CNPs are congestion control doing its job; a steady flood means a path is "
        "congested all the time. Warning when more than 1% of the packets of a GB of 4096-byte "
        "packets (2,441 a GB) were marked or answered, error above 10%.",
        "Find the congested hop: incast (many senders to one receiver), uneven ECMP hashing, a "
        "slower link in the path, switch ECN thresholds set too low.",
        "kernel commit 0ad17a8f7fa0 and drivers/infiniband/hw/mlx5/counters.c (np_cnp_sent, "
        "rp_cnp_handled, np_ecn_marked_roce_packets); rocetune's choice of 1% / 10%"),
    CounterGrading(
        "nic-seq-errors", "Out-of-sequence and retransmission",
        (Signal("rdma", "out_of_sequence"), Signal("rdma", "out_of_seq_request"),
         Signal("rdma", "rcvd_seq_err"), Signal("rdma", "duplicate_request"),
         Signal("rdma", "packet_seq_err", "tx"), Signal("rdma", "implied_nak_seq_err", "tx"),
         Signal("rdma", "local_ack_timeout_err", "tx"), Signal("rdma", "completer_retry_err", "tx")),
        Threshold("per_gb", warn=1.0, error=100.0, min_delta=10),
        "Packets of reliable connections lost or reordered: out_of_sequence / out_of_seq_request "
        "(responder saw a gap), packet_seq_err and implied_nak_seq_err (requester got a NAK), "
        "local_ack_timeout_err (no ACK in time), duplicate_request, and Soft-RoCE's rcvd_seq_err "
        "and completer_retry_err.",
        "Each is a lost packet that RoCE recovers by go-back-N, resending everything in flight. "
        "Warning above 1 per GB (about 1 packet in 244,000 of 4096 bytes), error above 100.",
        "Drops are happening somewhere: look at discards and pause on both ends and on the "
        "switches (a lossy RoCE priority, PFC off), and at link errors.",
        "kernel commit 0ad17a8f7fa0 (IB/mlx5 port protocol stats); drivers/infiniband/sw/rxe/"
        "rxe_hw_counters.c; rocetune's choice of 1 / 100 per GB"),
    CounterGrading(
        "nic-rnr-naks", "Receiver-not-ready NAKs",
        (Signal("rdma", "rnr_nak_retry_err"), Signal("rdma", "rcvd_rnr_err"),
         Signal("rdma", "send_rnr_err")),
        Threshold("per_hour", warn=10, error=1000, min_delta=10),
        "RNR NAKs: a send arrived for a queue pair with no receive posted (rnr_nak_retry_err on "
        "mlx5, rcvd_rnr_err / send_rnr_err on Soft-RoCE).",
        "The sender waits the RNR timer and retries: throughput collapses on that connection. "
        "NCCL posts its receives ahead, so these point at another RDMA user or a stalled "
        "process. Warning above 10 an hour, error above 1,000.",
        "Find the application whose receiver falls behind (a stalled rank, a storage client); "
        "raise its receive queue depth or min_rnr_timer.",
        "kernel commit 0ad17a8f7fa0 (rnr_nak_retry_err); drivers/infiniband/sw/rxe/"
        "rxe_hw_counters.c; rocetune's choice of 10 / 1,000 an hour"),
    CounterGrading(
        "nic-retries-exceeded", "Connections that gave up",
        (Signal("rdma", "req_transport_retries_exceeded"), Signal("rdma", "req_rnr_retries_exceeded"),
         Signal("rdma", "retry_exceeded_err"), Signal("rdma", "retry_rnr_exceeded_err")),
        Threshold("per_hour", warn=0, error=0),
        "Queue pairs that exhausted their retries and went to the error state: "
        "req_transport_retries_exceeded, req_rnr_retries_exceeded (mlx5), retry_exceeded_err, "
        "retry_rnr_exceeded_err (Soft-RoCE).",
        "This is the 'transport retry counter exceeded' a job dies with: any is an error.",
        "Read the other results for the same port (flaps, errors, discards, pause) for the cause; "
        "NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT only hide a lossy path.",
        "RDMA/mlx5 patch adding req_transport_retries_exceeded (lore.kernel.org/r/250466af94f4989d"
        "638fab168e246035530e912f.1718301543.git.leon@kernel.org); drivers/infiniband/sw/rxe/"
        "rxe_hw_counters.c"),
)

RESET_ID = "nic-counters-reset"

REGISTRY: Dict[str, dict] = {
    **{c.id: {"title": c.title, "doc": c.doc, "why": c.why, "fix": c.fix, "source": c.source,
              "threshold": asdict(c.threshold)} for c in CHECKS},
    RESET_ID: {
        "title": "Counters reset",
        "doc": "A counter is lower than in the baseline (a driver reload, a firmware reset, "
               "ethtool or perfquery clearing it), or the host rebooted since the baseline.",
        "why": "No rate can be taken across a reset: those counters are left out of this reading "
               "and judged again from the next one. Reported as info.",
        "fix": "Nothing, unless resets are unexpected: then look for driver reloads or firmware "
               "resets (dmesg) on that device.",
        "source": "rocetune",
        "threshold": None,
    },
}
