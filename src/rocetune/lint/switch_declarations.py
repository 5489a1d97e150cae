"""Switch checks: where a switch's running QoS disagrees with the QoS plan the hosts follow
(`rocetune qos check`, rocetune.lint.switch_qos makes the findings)."""

from __future__ import annotations

from ..checks import declare

_READS = ("The switch's QoS output given to `rocetune qos check FILE`: SONiC CONFIG_DB JSON, NVUE's "
          "`nv show qos roce` (global or per interface) or `nv set` commands, an EOS or NX-OS running-config "
          "(docs/switch-qos.md lists the forms per switch OS).")
_SOURCE_SWITCH = ("docs/switch-qos.md; sonic-buildimage files/build_templates/qos_config.j2 (DSCP_TO_TC_MAP "
                  "AZURE: DSCP 26 -> TC 1); NVIDIA Cumulus Linux 5.x 'RDMA over Converged Ethernet - RoCE'")
_SOURCE_BUFFERS = ("docs/switch-qos.md; sonic-buildimage files/build_templates/buffers_config.j2 (lossless PGs and "
                   "queues 3-4 only); sonic-swss cfgmgr/buffermgr.cpp and buffermgrdyn.cpp; NVIDIA Cumulus Linux "
                   "'RDMA over Converged Ethernet - RoCE' (the RoCE lossless pools)")
_NOT_STATED = "info when the switch output does not state it (said as 'not checked: ...')"


declare(
    id="switch-trust-mismatch", kind="switch", severity="error",
    also=("warning", "info"),
    severity_note=_NOT_STATED + "; warning for PCP trust on routed ports (RoCE v2 there is untagged)",
    title="The switch does not classify on what the plan's hosts mark",
    checks="The port trusts DSCP under `trust: dscp` (or the VLAN priority under `trust: pcp`); "
           "trusting both is accepted.",
    reads=_READS,
    why="A switch that ignores the DSCP the NICs set puts RoCE in its default class: lossy, no "
        "ECN, dropped under congestion.",
    fix="trust DSCP on every host-facing and fabric port (`rocetune qos render` writes it)",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-data-class-mismatch", kind="switch", severity="error",
    also=("info",),
    severity_note=_NOT_STATED,
    title="RoCE data's DSCP lands in another traffic class than the plan's priority",
    checks="The switch maps the plan's data DSCP (26 by default) to the traffic class of the plan's "
           "data priority (3 by default); the message says whether the class it lands in is lossless.",
    reads=_READS,
    why="The commonest RoCE fault: SONiC's default DSCP_TO_TC_MAP sends DSCP 26 to TC 1, which "
        "has no PFC, while the hosts expect DSCP 26 to be lossless on priority 3. The fabric works "
        "until it congests, then drops RoCE packets and NCCL throughput collapses.",
    fix="map the data DSCP to the data priority's class (`rocetune qos render --os OS`)",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-cnp-class-mismatch", kind="switch", severity="warning",
    also=("info",),
    severity_note=_NOT_STATED,
    title="CNPs land in another traffic class than the plan's CNP priority",
    checks="The switch maps the plan's CNP DSCP (48 by default) to the class of the plan's CNP "
           "priority (6 by default).",
    reads=_READS,
    why="Congestion notifications that queue behind the data they should slow down arrive late, "
        "and DCQCN reacts late: queues build up to PFC.",
    fix="map the CNP DSCP to the CNP priority's class and schedule it strict",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-pfc-missing", kind="switch", severity="error",
    also=("info",),
    severity_note=_NOT_STATED,
    title="PFC is off on a priority the plan makes lossless",
    checks="Every priority in the plan's lossless_priorities has PFC (no-drop) on the port.",
    reads=_READS,
    why="Without PFC the switch drops RoCE data when its buffer fills; RoCE's go-back-N retransmit "
        "turns each drop into a burst of resends.",
    fix="enable PFC on the plan's lossless priorities on every RoCE port",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-cts-class-mismatch", kind="switch", severity="warning",
    also=("info",),
    severity_note=_NOT_STATED,
    title="NCCL's credit (CTS) messages land in another class than the plan's",
    checks="When the plan gives CTS messages a DSCP (cts.dscp), the switch maps it to the plan's "
           "cts.priority (the data priority unless stated).",
    reads=_READS,
    why="NCCL sends its credit messages with NCCL_IB_FIFO_TC; a switch that leaves that DSCP in its "
        "best-effort class delays or drops them, and every transfer waits for its credits.",
    fix="map the CTS DSCP to the plan's cts.priority (`rocetune qos render` does)",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-lossless-buffer-missing", kind="switch", severity="error",
    also=("info",),
    severity_note="info when the output does not show the buffers (an EOS config, a SONiC dump without BUFFER_PG, "
                  "a traditional-model CONFIG_DB saved before buffermgrd created its lossless PGs)",
    title="PFC is on, but the priority has no lossless buffer",
    checks="Every lossless priority with PFC has an ingress buffer with headroom (SONiC: a BUFFER_PG with "
           "a lossless profile or NULL on the priority's PG, the PFC-priority-to-PG map agreeing; NVUE: the "
           "RoCE lossless pool, or lossless-single-ipool) and an egress queue that does not drop (SONiC "
           "BUFFER_QUEUE egress_lossless_profile; NVUE the reserved egress pool's traffic class).",
    reads=_READS,
    why="PFC pauses the sender only when a lossless PG fills past its xoff; a priority whose traffic "
        "lands in a lossy PG never pauses anyone and is dropped. SONiC's buffer template makes only "
        "3-4 lossless, so PFC on another priority is lossy until its buffers are added.",
    fix="render the buffers with the plan (`rocetune qos render --os OS --ports ...`; SONiC also takes "
        "`--buffer-model`), or move the lossless priority to one the switch has buffers for",
    source=_SOURCE_BUFFERS,
)

declare(
    id="switch-ports-unbound", kind="switch", severity="warning",
    also=("error",),
    severity_note="error when no port of the switch binds QoS (nothing on the switch is lossless)",
    title="Ports of the switch bind no QoS",
    checks="Every port in the switch's PORT table has its own PORT_QOS_MAP entry (maps, pfc_enable).",
    reads=_READS,
    why="PFC, the queue maps and the buffers are per port: a port without them classifies by the "
        "switch-wide map at most and drops RoCE under congestion.",
    fix="bind the plan to the RoCE-facing ports (`rocetune qos render --ports ...`); ports that carry no "
        "RoCE can stay unbound",
    source=_SOURCE_BUFFERS,
)

declare(
    id="switch-pfc-extra", kind="switch", severity="warning",
    title="PFC is on for a priority the plan keeps lossy",
    checks="No priority outside the plan's lossless_priorities has PFC on.",
    reads=_READS,
    why="Each lossless priority needs its own headroom buffer and can spread pause frames "
        "(head-of-line blocking, PFC storms) for traffic that never asked for it.",
    fix="disable PFC on priorities the plan does not name, or add them to lossless_priorities",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-ecn-off", kind="switch", severity="error",
    also=("info",),
    severity_note=_NOT_STATED,
    title="The RoCE data queue marks no ECN",
    checks="The egress queue of the data class marks ECN (SONiC WRED_PROFILE ecn, NVUE "
           "congestion-control enabled-tc, EOS random-detect ecn).",
    reads=_READS,
    why="DCQCN slows senders only when switches mark CE; without marking, congestion is left to "
        "PFC alone, which pauses whole links and spreads congestion.",
    fix="enable ECN marking on the data queue with the plan's thresholds (ecn_marking)",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-ecn-thresholds-differ", kind="switch", severity="warning",
    also=("info",),
    severity_note="info when the switch states them in segments (a platform's cell size), which rocetune "
                  "does not convert",
    title="The data queue's ECN thresholds differ from the plan's",
    checks="The ECN minimum and maximum thresholds (bytes) and the marking probability of the data "
           "queue are within 3% of the plan's ecn_marking (defaults 150000 and 1500000 bytes, 100%).",
    reads=_READS,
    why="Thresholds set the queue depth DCQCN holds: far higher adds latency and eats the PFC "
        "headroom, far lower marks too early and leaves bandwidth unused. One fabric should "
        "mark alike at every hop.",
    fix="set the thresholds from the plan (`rocetune qos render`), or state the switch's in ecn_marking",
    source=_SOURCE_SWITCH,
)

declare(
    id="switch-cnp-not-strict", kind="switch", severity="warning",
    also=("info",),
    severity_note=_NOT_STATED,
    title="The CNP queue is not strict priority",
    checks="The egress queue of the CNP class is scheduled strict priority.",
    reads=_READS,
    why="A CNP waits behind weighted data queues and reaches the sender late, so DCQCN reacts "
        "late; NVIDIA's RoCE defaults schedule the CNP class strict.",
    fix="schedule the CNP queue strict priority",
    source=_SOURCE_SWITCH,
)

_SOURCE_WATCHDOG = ("docs/switch-qos.md; sonic-utilities pfcwd/main.py (`pfcwd start_default`: action drop, 200 ms); "
                    "SONiC PFC Watchdog design (github.com/sonic-net/SONiC wiki); NVIDIA NVUE reference, `nv set "
                    "interface <interface-id> qos pfc-watchdog state` (default disable); Arista AVD eos_cli_config_gen "
                    "priority_flow_control.watchdog (timeout after which the port is errdisabled or drops)")
declare(
    id="switch-pfc-watchdog-off", kind="switch", severity="warning",
    also=("info",),
    severity_note="info when the output does not show the watchdog (NVUE's RoCE shows, an EOS excerpt without it)",
    title="A lossless port has no PFC watchdog, or one that shuts the port",
    checks="Every port with PFC on a plan priority has the PFC watchdog on (SONiC PFC_WD with pfcwd_sw_enable, "
           "NVUE `qos pfc-watchdog state enable`, EOS `priority-flow-control pause watchdog`, NX-OS "
           "`priority-flow-control watch-dog-interval on`), and its action is not errdisable.",
    reads=_READS,
    why="A NIC or host that pauses without end (a stuck receive ring) blocks the lossless queue of the port and "
        "its pauses back up through the fabric. The watchdog drops on the stuck queue instead; an errdisable "
        "action takes the whole link down, every class of the GPU with it.",
    fix="enable the PFC watchdog with action drop on the lossless ports (`rocetune qos render` writes it)",
    source=_SOURCE_WATCHDOG,
)

declare(
    id="switch-pfc-watchdog-mismatch", kind="switch", severity="warning",
    also=("info",),
    severity_note="info when the output states neither the watchdog's action nor its times",
    title="The switch's PFC watchdog does not act as the plan's pfc_watchdog says",
    checks="Where the plan states `pfc_watchdog`: on every lossless port whose watchdog is on, its action (drop, "
           "forward) and its detection and restoration times in milliseconds are the plan's, as far as the output "
           "states them (SONiC PFC_WD action, detection_time, restoration_time; EOS `priority-flow-control pause "
           "watchdog action`, `default timeout`, `default recovery-time`).",
    reads=_READS,
    why="The detection time is how long a storm is let to spread pauses through the fabric before the queue is "
        "freed; the action decides whether the stuck queue's RoCE traffic is dropped or sent without PFC; the "
        "restoration time how soon PFC comes back. A switch left at other values is not the fabric the plan "
        "describes.",
    fix="render the switch from the plan (`rocetune qos render` writes the plan's pfc_watchdog on SONiC and EOS)",
    source=_SOURCE_WATCHDOG,
)

declare(
    id="switch-cable-length", kind="switch", severity="warning",
    also=("error", "info"),
    severity_note="error for a 0m cable on SONiC (no lossless PG at all); info when the output does not state "
                  "the length and the plan does",
    title="The switch sizes PFC headroom for a shorter cable than the plan's",
    checks="The cable length the switch sizes lossless headroom from (SONiC CABLE_LENGTH, NVUE `qos pfc ... "
           "cable-length`) is not 0 and not shorter than the plan's buffer.cable_length.",
    reads=_READS,
    why="Headroom holds what arrives while a pause frame crosses the cable and the sender stops; sized for a "
        "shorter cable it overflows and the lossless priority drops. SONiC's buffermgrd creates no lossless "
        "PG for a 0m cable (sonic-swss cfgmgr/buffermgr.cpp).",
    fix="set the cable length from the plan (`rocetune qos render` writes SONiC CABLE_LENGTH and NVUE's "
        "cable-length when the plan has buffer.cable_length)",
    source=_SOURCE_BUFFERS,
)

declare(
    id="switch-lossless-discards", kind="switch", severity="warning",
    title="The switch discarded RoCE on a port that makes it lossless",
    checks="Where the switch's counters are given (NVUE `nv show interface IF qos roce counters` saved with the "
           "status show; SONiC `show queue counters` and `show queue wredcounters` with `--counters FILE`), a port "
           "with PFC on the plan's data priority discarded no RoCE packet: NVUE's receive and transmit RoCE "
           "discards (rx-roce-stats no-buffer-discard, tx-roce-stats unicast-no-buffer-discard), SONiC's drops "
           "and WRED drops on the unicast queue the data priority leaves by. The finding gives the pauses on "
           "that priority (`show pfc counters`) and the queue's ECN marks beside them.",
    reads=_READS,
    why="Lossless RoCE that is discarded means PFC paused too late or not at all (headroom or cable length too "
        "short, a peer that ignores pauses) or the PFC watchdog dropped a stuck queue; every drop costs the job "
        "a go-back-N retransmit. The counts run since they were last cleared, so an old event shows until then.",
    fix="find the cause (PFC on both ends, headroom, watchdog events), then clear the counters (`nv action clear "
        "interface IF qos roce counters`; SONiC `sonic-clear queuecounters`, `sonic-clear pfccounters`) and read "
        "them again",
    source="docs/switch-qos.md; NVIDIA Cumulus Linux 5.16 'RDMA over Converged Ethernet - RoCE' "
           "(the RoCE counters); sonic-utilities scripts/pfcstat and scripts/queuestat (the SONiC shows)",
)

_READS_HOSTS = ("The switch's QoS output as `qos check FILE` reads it, and each host's NIC QoS as its probe "
                "read it (Features `qos.interfaces`: trust, PFC priorities, DSCP to priority, from mlnx_qos or dcb; "
                "`qos.dcqcn`: DCQCN per priority and the CNP DSCP and priority, from mlx5's /sys/class/net/IF/ecn) "
                "in the fleet results given with --hosts DIR (fleet gather or playbooks/fleet.yml).")
_SOURCE_HOSTS = ("docs/switch-qos.md; IEEE 802.1Qbb (PFC acts per priority on both ends of a link); NVIDIA "
                 "'RoCE configuration for ConnectX' (trust dscp, PFC on the RoCE priority, DSCP 26 -> 3)")


declare(
    id="switch-host-trust-mismatch", kind="switch", severity="error",
    title="A host NIC and the switch classify on different fields",
    checks="Each fabric NIC's trust mode (dscp or pcp) is one the switch's ports trust too.",
    reads=_READS_HOSTS,
    why="When the NIC classifies by DSCP and the switch by the VLAN priority (or the other way), "
        "the two ends put RoCE in different classes: PFC pauses on one side do not match the "
        "traffic on the other, and RoCE is dropped under congestion.",
    fix="trust the same field on both ends (the plan's `trust`)",
    source=_SOURCE_HOSTS,
)

declare(
    id="switch-host-pfc-mismatch", kind="switch", severity="error",
    title="A host NIC and the switch have PFC on different priorities",
    checks="Each fabric NIC's PFC-enabled priorities are the switch ports' PFC priorities.",
    reads=_READS_HOSTS,
    why="PFC works per priority across one link: a pause the switch sends for a priority the NIC "
        "does not honour (or the reverse) is ignored, and the buffer it protected overflows.",
    fix="apply the plan on both: `roce_qos` on the hosts, `rocetune qos render` on the switch",
    source=_SOURCE_HOSTS,
)

declare(
    id="switch-host-dscp-mismatch", kind="switch", severity="error",
    title="A host NIC and the switch put RoCE's DSCPs in different priorities",
    checks="The plan's data, CNP and CTS DSCPs (26 and 48 by default) go to the same priority on each "
           "fabric NIC and on the switch (SONiC's and EOS's traffic class, NVUE's switch priority: the "
           "number PFC pauses by). One finding per switch fault, naming every NIC it touches.",
    reads=_READS_HOSTS,
    why="The host sends RoCE data lossless on one priority and the switch queues it in another "
        "class, with or without PFC: the two ends disagree on which traffic must not be dropped.",
    fix="map the DSCP to the same priority on both ends (the plan's data and CNP classes)",
    source=_SOURCE_HOSTS,
)

declare(
    id="switch-host-dcqcn-mismatch", kind="switch", severity="warning",
    title="The switch marks ECN for RoCE, but the hosts' NICs do not react to it",
    checks="No fabric NIC has DCQCN off for the plan's data priority while the switch marks ECN on the queue "
           "that priority leaves by: read from the probe's qos.dcqcn (mlx5 /sys/class/net/IF/ecn/roce_np and "
           "roce_rp enable/N, MLNX_OFED and DOCA-OFED drivers) and from the doctor run's doctor-ecn-off where "
           "the fleet results hold one. Results with neither are said in a warning.",
    reads=_READS_HOSTS,
    why="DCQCN is the two ends of one loop: the switch marks CE, the receiving NIC returns CNPs (notification "
        "point) and the sending NIC cuts its rate (reaction point). With either end off the marks slow no "
        "sender, queues fill to the PFC threshold and pauses spread through the fabric.",
    fix="enable DCQCN for the data priority on the NICs (the roce_qos role: roce_qos_dcqcn: true)",
    source=_SOURCE_HOSTS,
)

declare(
    id="switch-host-cnp-mismatch", kind="switch", severity="warning",
    title="The hosts' NICs send CNPs in a class other than the switch's CNP class",
    checks="The DSCP each fabric NIC sends its CNPs with (mlx5 /sys/class/net/IF/ecn/roce_np/cnp_dscp; "
           "cnp_802p_prio where the switch ports trust the VLAN priority), as the probe read it (qos.dcqcn), "
           "leaves the switch by the queue of the plan's CNP class (DSCP 48, priority 6 by default). "
           "A NIC whose driver has no ecn tree (the inbox mlx5) is not compared.",
    reads=_READS_HOSTS,
    why="DCQCN's rate cut is only as fast as its CNPs: in the data queue they wait behind the congestion "
        "they report (and are dropped with it where the queue is lossy), so senders slow late and PFC "
        "pauses take over. ConnectX firmware sends CNPs with DSCP 48 and priority 6 unless told otherwise "
        "(CNP_DSCP, CNP_802P_PRIO in mlxconfig), which need not be the plan's CNP class.",
    fix="apply the plan on the hosts (the roce_qos role writes the plan's CNP DSCP and priority to "
        "ecn/roce_np/cnp_dscp and cnp_802p_prio), or map the NICs' CNP DSCP to the CNP class on the switch",
    source=_SOURCE_HOSTS,
)
