"""Expectation checks: the node against what it should be (rocetune.model.expect: the document,
and evaluate(), which names these ids). The planner leaves them in the plan, so `probe`, `env`
(and the boot unit's refusal), doctor and fleet see the same findings."""

from __future__ import annotations

from typing import List

from ..model.expect import CHECK_OF_SECTION, CHECK_RAIL_LINK, CHECK_RAILS, Difference
from ..model.finding import Finding
from .binding import emits
from .registry import declare, finding

READS = ("The expectations (/etc/rocetune/expect.yml under the root, or --expect FILE; the "
          "rocetune_env role writes it from rocetune_env_expect) and the node's Features and plan.")
_WHY_RE_DERIVED = ("A node re-derives its plan from what it shows now: once the env is rewritten it "
                   "fits the broken node, and only a declaration says what is missing.")
SOURCE = ("docs/expect.md; the per-node manifests of NVSentinel, GCP cluster-health-scanner and "
           "LBNL NHC's expected counts (check_hw_ib, check_hw_eth, check_nv_healthmon)")


_MORE = "warning when the node has more than expected (other than declared, not short of it)"

declare(
    id="expect-gpus", kind="expect", severity="error",
    also=("warning",),
    severity_note=_MORE,
    title="The GPUs are not the ones expected",
    checks="gpus.count (how many) and gpus.model (each GPU's name, or a pattern).",
    reads=READS,
    why="A GPU that fell off the bus leaves a node that still runs jobs, with fewer ranks or a "
        "hang at start. " + _WHY_RE_DERIVED,
    fix="`nvidia-smi -L`, `dmesg | grep -i xid`; reseat or replace; or correct the expectations",
    source=SOURCE,
)

declare(
    id="expect-rails", kind="expect", severity="error",
    also=("warning",),
    severity_note="warning for a rail the expectations do not name, or more rails than expected",
    title="A compute rail is missing or unused",
    checks="rails.devices (each named port or device is a rail of the plan; each pattern "
           "matches one), rails.count (as many rails in the plan) and rails.per_gpu (each GPU "
           "has a rail at PIX/PXB).",
    reads=READS,
    why="A lost rail halves the bandwidth of the GPU that used it and of the GPU whose NIC it "
        "now shares. " + _WHY_RE_DERIVED,
    fix="find the rail (`rdma link`, `ip addr`, `dmesg`), repair it, then `systemctl restart "
        "rocetune-env`; or correct the expectations",
    source=SOURCE,
)

declare(
    id="expect-rail-link", kind="expect", severity="error",
    title="A rail's link is not what is expected",
    checks="rails.link_layer, rails.speed_gbps (the least port rate), rails.mtu (RoCE netdevs), "
           "rails.pcie_speed_gts and rails.pcie_width (the NIC's PCIe link), on every rail and "
           "every port the expectations name.",
    reads=READS,
    why="A link that trained slower or narrower, or a rail at another MTU, bounds every "
        "collective at its pace, while each port alone looks healthy.",
    fix="check the cable, transceiver, switch port and slot (`ethtool IF`, `mlxlink -d DEV`, "
        "`lspci -vv`); set the MTU with the roce_net role",
    source=SOURCE,
)

declare(
    id="expect-gpudirect", kind="expect", severity="error",
    title="GPUDirect RDMA is not the route expected",
    checks="gpudirect: dmabuf, peermem, any (either) or none, against the route the "
           "gpudirect-rdma rule finds.",
    reads=READS,
    why="Without GPUDirect RDMA NCCL stages every transfer through host memory (NCCL #1676: "
        "all-reduce from 180 to 10 GB/s).",
    fix="load nvidia-peermem, or use the open GPU kernel modules for DMA-BUF (the rdma_core role)",
    source=SOURCE,
)

declare(
    id="expect-versions", kind="expect", severity="error",
    title="A version differs from the one expected",
    checks="versions.nvidia_driver, rdma_core, nic_firmware (every rail's NIC), nccl and "
           "kernel, each a string or a shell pattern.",
    reads=READS,
    why="Mixed firmware, drivers or NCCL releases across a job's nodes are a known cause of "
        "hangs and of one node running slower than the rest.",
    fix="bring the node to the fleet's versions; skip this id in /etc/rocetune/doctor.yml with "
        "a reason during a rolling upgrade",
    source=SOURCE,
)

declare(
    id="expect-qos-plan", kind="expect", severity="error",
    title="A QoS plan is required and absent",
    checks="qos.plan_required: the node has /etc/rocetune/qos.yml (or --qos).",
    reads=READS,
    why="Without the plan no check holds the NICs' PFC, trust and ECN, and no traffic class is "
        "planned from it: RoCE may go out lossy with nothing to say so.",
    fix="install the plan with the roce_qos role",
    source=SOURCE,
)

declare(
    id="expect-firmware", kind="expect", severity="error",
    also=("warning", "info"),
    severity_note="warning when Current is as expected but Next Boot is not (a reset would change it); info "
                  "when a declared value cannot be read (mlxconfig absent, a card it cannot query, a parameter "
                  "the card does not show): not checked, never passed",
    title="A NIC firmware setting is not the one expected",
    checks="firmware: each NVCONFIG parameter (PCI_WR_ORDERING, ATS_ENABLED, USER_PROGRAMMABLE_CC, "
           "ROCE_CC_PRIO_MASK_Pn, CNP_DSCP_Pn, CNP_802P_PRIO_Pn ...) against the Current column of the "
           "card of every rail, and firmware.devices.DEV against the card of that RDMA device.",
    reads="The expectations, and the Features' `nic_firmware` section: `mlxconfig -d BDF -e q` (or "
          "`mstconfig`) of the first function of each ConnectX card, read only, parsed by the "
          "nic_firmware role's reader.",
    why="These settings live in the NIC's flash and survive reinstalls: one card with forced relaxed "
        "ordering, a congestion-control mask without the data priority or CNPs in another class "
        "behaves unlike its peers while every NCCL variable matches. doctor's doctor-fw-* checks "
        "judge them against the QoS plan; this holds them to what the fleet declared.",
    fix="`mlxconfig -d BDF set NAME=VALUE` (the nic_firmware role's nic_firmware_settings), then a "
        "firmware reset (`mlxfwreset -d BDF reset`) or a reboot; or correct the expectations",
    source="NVIDIA MFT mlxconfig (-e q: Default, Current, Next Boot); docs/expect.md; "
           "roles/nic_firmware/README.md",
)

declare(
    id="expect-env", kind="expect", severity="error",
    title="The plan does not set a variable as expected",
    checks="env: each NAME the plan must set, with its value (or any value for null).",
    reads=READS,
    why="A traffic class dropped from a re-derived env (one rail's PFC off) sends RoCE out "
        "lossy on every rail.",
    fix="find what the rule behind the variable lacks (`rocetune explain NAME`), repair the "
        "node, then rerun the env",
    source=SOURCE,
)



@emits(*CHECK_OF_SECTION.values(), CHECK_RAILS, CHECK_RAIL_LINK)
def findings_of(differences: List[Difference]) -> List[Finding]:
    return [finding(d.check, d.subject, d.message, severity=d.severity,
                    evidence=dict({"field": d.field, "expected": d.expected, "actual": d.actual},
                                  **({"not_checked": d.not_checked} if d.not_checked else {})))
            for d in differences]
