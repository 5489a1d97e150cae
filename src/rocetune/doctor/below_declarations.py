"""Doctor's checks below NCCL: what the kernel log, the PHY, the NIC firmware settings and the
NVLink fabric say, and whether the IOMMU is as the pcie_p2p role sets it (ACS: doctor-acs-redirect)
(rocetune.doctor.below_checks runs them)."""

from __future__ import annotations

from ..checks import declare

KERNEL_LOG = ("The kernel log of the last 24 hours, after the operator's repair mark (`doctor --repaired`), or "
              "from `doctor --since` on (docs/gate.md): `dmesg --kernel --json` (/dev/kmsg, each record whole), "
              "else `dmesg --kernel`, else `journalctl -k -b` (its last 50,000 lines), read as records: a "
              "record's further lines never count as records of their own. Events are kept per class (kind, "
              "device, what happened) with the first, the last and a count, so a flood of one class cannot "
              "push another out.")


# --- the kernel log -------------------------------------------------------------------------------
declare(
    id="doctor-kernel-log-unread", kind="doctor", severity="info",
    title="The kernel log could not be read",
    checks="The journal or the kernel ring buffer answered, so the kernel-log checks ran.",
    reads=KERNEL_LOG,
    why="Firmware faults, link flaps and PCIe errors show only there: without it they go unseen.",
    fix="run doctor as root (the journal and dmesg need it on most distributions)",
    source="journalctl(1) -k; dmesg(1) --kernel",
)
_OTHER = "info for a device that does not carry the job (not a compute NIC, GPU or a bridge above them)"
declare(
    id="doctor-kernel-nic-health", kind="doctor", severity="error",
    also=("info",),
    severity_note=_OTHER,
    title="A NIC's firmware reported a health failure",
    checks="No compute NIC logged a firmware health failure: the heartbeat lost (`device's health "
           "compromised - reached miss count`), a health buffer (`Health issue observed`), a fatal "
           "sensor or unrecoverable error, or a command timeout that leaks a command resource.",
    reads=KERNEL_LOG,
    why="The firmware has stopped answering or asserted: the port may still look ACTIVE while the "
        "data path is broken, and jobs on it hang or fail.",
    fix="collect `devlink health show` and the health buffer (`mlxlink`, `mstdump` for the vendor), "
        "then reset the NIC (`mlxfwreset`) or reboot; replace it if the fault returns",
    source="Linux drivers/net/ethernet/mellanox/mlx5/core/health.c (poll_health, print_health_info), "
           "cmd.c; NVSentinel NIC health monitor (kernel log patterns)",
)

declare(
    id="doctor-kernel-nic-command", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER,
    title="NIC firmware commands failed",
    checks="No compute NIC logged failed firmware commands (`mlx5_cmd_check`/`mlx5_cmd_out_err`: "
           "command, status, syndrome), counted per device.",
    reads=KERNEL_LOG,
    why="A command the firmware refuses (a QP transition, a memory key) is a connection or "
        "registration that failed -- often the RDMA error a job saw.",
    fix="look the syndrome up with the NIC vendor (mlx5: `mlxreg`/support); check the driver and "
        "firmware versions agree across the fleet (fleet report nic.fw)",
    source="Linux drivers/net/ethernet/mellanox/mlx5/core/cmd.c (mlx5_cmd_out_err)",
)

declare(
    id="doctor-kernel-link-flap", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER,
    title="A compute port's link went down",
    checks="No compute port's link went down in the window read (`Link down`, `NIC Link is Down`, "
           "rxe `set down`), counted per port with the last time.",
    reads=KERNEL_LOG,
    why="Every link drop aborts the RDMA connections over the port: NCCL jobs on it fail or fall "
        "back, and repeated flaps mean a marginal cable, transceiver or switch port.",
    fix="check the cable and transceiver (doctor's PHY checks, `mlxlink -d PCI -c -e`) and the switch "
        "port's log; replace the cable if the port keeps flapping",
    source="Linux drivers/net/ethernet/mellanox/mlx5/core/en_main.c (netdev_info Link up/down); "
           "drivers/infiniband/sw/rxe/rxe_net.c",
)

declare(
    id="doctor-kernel-pcie-aer", kind="doctor", severity="warning",
    also=("error", "info"),
    severity_note="error for uncorrectable (fatal or non-fatal) errors, warning for corrected ones; " + _OTHER,
    title="PCIe Advanced Error Reporting logged errors",
    checks="No PCIe AER error was reported by or for a GPU, a compute NIC or a bridge above them.",
    reads=KERNEL_LOG + " The PCI tree from the Features.",
    why="Corrected errors replay TLPs and cost bandwidth (a marginal slot, riser or retimer); "
        "uncorrectable ones reset the link and take the device away.",
    fix="reseat or replace the card or riser; check the slot's link speed and width (fleet report "
        "pcie.nic / pcie.gpu) and the BIOS's PCIe settings",
    source="Linux drivers/pci/pcie/aer.c; PCI Express Base Specification, Advanced Error Reporting",
)

declare(
    id="doctor-kernel-module-event", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER,
    title="A transceiver (module) event on a compute NIC",
    checks="No compute NIC logged a module error (`Port module event[error]`: power budget exceeded, "
           "high temperature, bad or unsupported EEPROM, bus stuck, ...) or an unplugged cable.",
    reads=KERNEL_LOG,
    why="A module the NIC cannot power or read, or one running hot, drops the link or runs it with "
        "errors.",
    fix="check the module's temperature and power (`ethtool -m IF`), use a module the NIC supports, "
        "reseat it",
    source="Linux drivers/net/ethernet/mellanox/mlx5/core/events.c (port_module)",
)

declare(
    id="doctor-kernel-gpu-xid", kind="doctor", severity="warning",
    also=("error", "info"),
    severity_note="error for the Xids NVIDIA lists as needing a reset or a repair (48, 63, 64, 74, 79, 92, 94, "
                  "95, 119, 120, 140, 149), warning for the others; info for an address that is none of this "
                  "node's GPUs (the GPU reader's and every NVIDIA display controller on the PCI bus)",
    title="A GPU reported an Xid error",
    checks="No GPU logged an `NVRM: Xid` error in the window read.",
    reads=KERNEL_LOG,
    why="Xid 74 is an NVLink error, 79 a GPU that fell off the bus, 48/63/64/92-95 memory errors: a "
        "collective on such a GPU hangs or computes wrong results.",
    fix="look the Xid up in NVIDIA's Xid catalog; reset the GPU or drain the node as it says",
    source="NVIDIA GPU Deployment and Management Documentation, Xid Errors",
)

declare(
    id="doctor-gpu-lost", kind="doctor", severity="error",
    title="nvidia-smi cannot reach a GPU",
    checks="nvidia-smi reached every GPU: no `Unable to determine the device handle for GPU ...` line.",
    reads="`nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv,noheader`, its output and errors.",
    why="A GPU that fell off the bus is seen there whether or not the driver logged an Xid for it (the log "
        "may have rotated, or the kernel-log window passed): a job placed on it fails at once.",
    fix="reset the GPU (`nvidia-smi -r -i BDF`) where nothing uses it, else reboot; reseat it if it recurs",
    source="nvidia-smi's message for a GPU it cannot get a handle to (Unknown Error; GPU is lost. Reboot "
           "the system to recover this GPU), as users report it on NVIDIA/open-gpu-kernel-modules#387",
)

# --- NIC firmware read back -------------------------------------------------------------------------
FIRMWARE = ("The Features' `nic_firmware` section: `mlxconfig -d BDF -e q` (or `mstconfig`) of the first "
            "function of each ConnectX card with an RDMA device, read only, parsed by the nic_firmware role's "
            "reader.")
declare(
    id="doctor-fw-unread", kind="doctor", severity="info",
    title="The NIC firmware settings could not be read",
    checks="mlxconfig or mstconfig answered for every ConnectX card, so the firmware checks ran.",
    reads=FIRMWARE,
    why="Relaxed ordering, congestion control and CNP marking are set in the NIC's firmware; unread, "
        "a wrong value goes unseen.",
    fix="run doctor as root (the tools open the PCI device); install mstflint (`mstconfig`) or NVIDIA MFT",
    source="NVIDIA MFT user manual (mlxconfig); mstflint (mstconfig)",
)

declare(
    id="doctor-fw-pci-wr-ordering", kind="doctor", severity="warning",
    title="The NIC forces PCIe relaxed ordering on every write (PCI_WR_ORDERING=force_relax)",
    checks="PCI_WR_ORDERING is per_mkey(0) in Current and Next Boot on every ConnectX card: relaxed "
           "ordering only where a memory registration asks for it.",
    reads=FIRMWARE,
    why="force_relax(1) applies relaxed ordering to every write, including NCCL's flag and FIFO writes "
        "that must land after the data they announce: NCCL's maintainers traced `NET/IB : collective "
        "mismatch error` to it and ask for the default per_mkey(0), with NCCL_IB_PCI_RELAXED_ORDERING "
        "(per registration) where relaxed ordering helps (VMs with ACS and ATS).",
    fix="`mlxconfig -d BDF set PCI_WR_ORDERING=0` (per_mkey) and a firmware reset or cold reboot; leave "
        "relaxed ordering to NCCL_IB_PCI_RELAXED_ORDERING",
    source="NVIDIA/nccl issues #531 (sjeaugey: set it back to per_mkey(0)) and #615; NCCL environment "
           "variables, NCCL_IB_PCI_RELAXED_ORDERING",
)

declare(
    id="doctor-fw-cc-prio-mask", kind="doctor", severity="warning",
    title="The NIC's RoCE congestion control is off on the plan's data priority",
    checks="ROCE_CC_PRIO_MASK_P1/_P2 include the bit of the QoS plan's RoCE data priority (8 for "
           "priority 3) on every port of every ConnectX card.",
    reads=FIRMWARE + " The QoS plan (`--qos` or the node's plan file; the built-in defaults otherwise).",
    why="DCQCN reacts to CNPs only on the priorities in the mask: without the data priority's bit the "
        "NIC never slows down on ECN marks, queues build until PFC pauses the fabric.",
    fix="`mlxconfig -d BDF set ROCE_CC_PRIO_MASK_P1=<mask> ROCE_CC_PRIO_MASK_P2=<mask>` (the nic_firmware "
        "role's nic_firmware_settings) and a firmware reset",
    source="NVIDIA MFT mlxconfig parameters (ROCE_CC_PRIO_MASK_P1); roles/nic_firmware/README.md",
)

declare(
    id="doctor-fw-cnp-class", kind="doctor", severity="warning",
    title="The NIC firmware marks CNPs differently from the QoS plan",
    checks="CNP_DSCP_P1/_P2 and CNP_802P_PRIO_P1/_P2 (Next Boot, and Current where read) are the QoS "
           "plan's CNP class.",
    reads=FIRMWARE + " The QoS plan.",
    why="CNPs in another class than the switches expect queue behind data or are dropped: congestion "
        "notifications arrive late or never and DCQCN cannot react. The roce_qos role sets the class at "
        "run time through /sys/class/net/IF/ecn/roce_np, which the driver resets at reboot; the firmware "
        "value is what the NIC starts with.",
    fix="set CNP_DSCP_Pn and CNP_802P_PRIO_Pn to the plan's cnp.dscp / cnp.priority (nic_firmware role), "
        "or change the plan to what the fabric uses",
    source="NVIDIA MFT mlxconfig parameters (CNP_DSCP_P1, CNP_802P_PRIO_P1); docs/qos.md",
)

declare(
    id="doctor-fw-user-cc", kind="doctor", severity="warning",
    title="The NIC runs a user-programmable congestion control instead of DCQCN",
    checks="USER_PROGRAMMABLE_CC is False(0) (Current and Next Boot) on every ConnectX card.",
    reads=FIRMWARE,
    why="With USER_PROGRAMMABLE_CC=1 the built-in DCQCN is replaced by a DOCA PCC program; the plan's "
        "DCQCN and ECN tuning no longer governs the rate, and without a running PCC program the NIC "
        "has no congestion control.",
    fix="set USER_PROGRAMMABLE_CC=0 unless a PCC program is deployed on purpose (then say so in the "
        "node's expectations)",
    source="NVIDIA DOCA PCC documentation (mlxconfig USER_PROGRAMMABLE_CC)",
)

declare(
    id="doctor-fw-ats", kind="doctor", severity="info",
    title="The NIC has PCIe Address Translation Services on",
    checks="Reports ATS_ENABLED where it is on, with the IOMMU mode the kernel command line sets.",
    reads=FIRMWARE + " /proc/cmdline.",
    why="ATS matters where GPU-NIC traffic passes an IOMMU (VMs, or iommu on without pt): with ACS Direct "
        "Translated P2P the NIC's translated requests go peer to peer. On bare metal with iommu=pt it is "
        "unused; NCCL's maintainers note relaxed ordering matters with ACS+ATS, not on bare metal.",
    fix="keep ATS_ENABLED the same on every node (fleet compares fw.ATS_ENABLED); enable it only with the "
        "IOMMU and ACS setup that needs it",
    source="NVIDIA/nccl issue #1205 (sjeaugey); NVIDIA AI Enterprise user guide, GPUDirect in VMs",
)

declare(
    id="doctor-fw-pending-reset", kind="doctor", severity="info",
    title="NIC firmware settings wait for a firmware reset",
    checks="Current equals Next Boot for every watched parameter.",
    reads=FIRMWARE,
    why="A value set with mlxconfig takes effect only after a firmware reset or cold reboot: until then "
        "the NIC runs the old one while the inventory shows the new.",
    fix="`mlxfwreset -d BDF reset` in a maintenance window, or a cold reboot",
    source="NVIDIA MFT user manual (mlxconfig: Default / Current / Next Boot; mlxfwreset)",
)

# --- the PHY ----------------------------------------------------------------------------------------
PHY = ("The Features' `phy` section: `mlxlink -d BDF -p PORT -m -c` on ConnectX ports (or mstlink), "
       "`ethtool --show-fec IF` and `ethtool -m IF`; read only.")
_OTHER_PORT = "info for a port that does not carry the job (not a compute port)"
declare(
    id="doctor-phy-speed", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER_PORT,
    title="A compute port runs below the speed its port and cable support",
    checks="Each compute port's operating speed (mlxlink) is the highest speed both the port's enabled "
           "speeds and the cable support, and the compute ports run at one speed.",
    reads=PHY,
    why="A link that trained down (a bad lane, a mismatched cable, auto-negotiation with a slower switch "
        "port) still comes up ACTIVE: NCCL's bandwidth on that rail drops, and a ring runs at its speed.",
    fix="check the cable and transceiver (mlxlink's recommendation), the switch port's speed, "
        "`mlxlink -d BDF --speeds`",
    source="NVIDIA MFT user manual, mlxlink (Operational Info, Supported Info)",
)

declare(
    id="doctor-phy-fec", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER_PORT,
    title="A 100G-or-faster Ethernet compute port runs without FEC",
    checks="Ethernet compute ports of 100 Gb/s and more run an RS-FEC (mlxlink's FEC, or ethtool's "
           "active FEC encoding).",
    reads=PHY,
    why="IEEE 802.3 specifies RS-FEC for 100GBASE-CR4/SR4 (Clause 91) and every PAM4 rate: without it bit "
        "errors reach the MAC, frames are dropped and RoCE retransmits (go-back-N) collapse throughput.",
    fix="set FEC to auto or RS on both ends (`ethtool --set-fec IF encoding rs`, the switch port's fec)",
    source="IEEE 802.3 Clause 91 (RS-FEC), Clause 134; ethtool(8) --show-fec",
)

declare(
    id="doctor-phy-ber", kind="doctor", severity="warning",
    also=("error", "info"),
    severity_note="error when errors got past FEC (effective errors); warning for a raw BER with little margin; "
                  + _OTHER_PORT,
    title="A compute port's bit error rate is high",
    checks="No effective (post-FEC) errors, and a raw (pre-FEC) BER below 1E-6 with FEC (1E-12 without).",
    reads=PHY,
    why="Effective errors are frames dropped after FEC gave up: RoCE retransmits, NCCL slows or times "
        "out. A raw BER near the FEC's limit is a link one more degradation away from dropping frames.",
    fix="clean or replace the cable and transceivers; mlxlink's recommendation says which end",
    source="NVIDIA MFT mlxlink (Physical Counters and BER Info); IEEE 802.3 Clause 91",
)

declare(
    id="doctor-phy-recommendation", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER_PORT,
    title="mlxlink recommends an action for a compute port",
    checks="mlxlink's Troubleshooting Info says `No issue was observed` (status opcode 0) for every "
           "compute port.",
    reads=PHY,
    why="The firmware's own link analysis (cable speed not enabled, bad signal integrity, a module "
        "problem) names the fault directly.",
    fix="do what the recommendation says",
    source="NVIDIA MFT mlxlink (Troubleshooting Info: Status Opcode, Recommendation)",
)

declare(
    id="doctor-phy-module", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_OTHER_PORT,
    title="A compute port's transceiver is hot, dark or alarming",
    checks="No alarm or warning flag is on (ethtool -m), the module is below its high temperature range "
           "(70 C where it states none) and each lane's receive power is above the module's low range.",
    reads=PHY,
    why="A module running hot throttles or shuts the link; low receive power (a dirty connector, a bad "
        "fiber) raises the BER until frames drop.",
    fix="check airflow, clean the connectors, replace the module",
    source="SFF-8472 / SFF-8636 / CMIS (alarm and warning flags); ethtool(8) -m",
)

declare(
    id="doctor-phy-unread", kind="doctor", severity="info",
    title="The PHY of a compute port could not be read",
    checks="mlxlink or ethtool read each compute port's PHY.",
    reads=PHY,
    why="Without it the speed, FEC, BER and module checks have nothing to judge.",
    fix="run doctor as root; install NVIDIA MFT or mstflint for mlxlink/mstlink",
    source="ethtool(8); NVIDIA MFT mlxlink",
)

# --- the NVLink fabric ------------------------------------------------------------------------------
NVLINK = ("The Features' `nvlink` section: `nvidia-smi --query-gpu=pci.bus_id,fabric.state,fabric.status` (or "
          "`nvidia-smi -q`'s Fabric blocks), `nvidia-smi nvlink -s` and `-e`, and `systemctl show "
          "nvidia-fabricmanager.service nvidia-imex.service`.")
declare(
    id="doctor-nvlink-fabric", kind="doctor", severity="error",
    title="A GPU is not registered with the NVLink fabric",
    checks="On a node with NVSwitches (or where a GPU reports a fabric state), every GPU's fabric state "
           "is Completed with status Success.",
    reads=NVLINK,
    why="Until Fabric Manager (with the NVLink Subnet Manager on NVLink 5) registers a GPU, CUDA fails "
        "with `system not yet initialized` (cudaErrorSystemNotReady); `In Progress` that stays is a "
        "Fabric Manager that is not running or failed.",
    fix="start nvidia-fabricmanager (versions must match the driver); on HGX B200 and later install the "
        "NVLSM dependency; `journalctl -u nvidia-fabricmanager`",
    source="NVIDIA Fabric Manager user guide (GPU fabric registration, `nvidia-smi -q -i 0 | grep -i -A 2 "
           "Fabric`); NVIDIA/NVSentinel issue #883",
)

declare(
    id="doctor-nvlink-service", kind="doctor", severity="error",
    also=("warning",),
    severity_note="warning for nvidia-imex; error for nvidia-fabricmanager on a node with NVSwitches",
    title="An NVLink fabric service is not running",
    checks="nvidia-fabricmanager is active on a node with NVSwitches, and nvidia-imex is active where "
           "it is installed.",
    reads=NVLINK,
    why="Fabric Manager that died after the GPUs registered leaves them `Completed` while new jobs and "
        "link retraining fail (NVSentinel saw one down 20 days unnoticed); IMEX down breaks multi-node "
        "NVLink memory sharing.",
    fix="`systemctl restart nvidia-fabricmanager` (or nvidia-imex) and read its journal",
    source="NVIDIA Fabric Manager user guide; NVIDIA IMEX guide; NVIDIA/NVSentinel issues #883, #889",
)

declare(
    id="doctor-nvlink-links", kind="doctor", severity="warning",
    title="NVLinks of a GPU are inactive or differ from the node's other GPUs",
    checks="Every GPU with NVLink has all its links active, and as many as the other GPUs.",
    reads=NVLINK,
    why="An inactive NVLink lowers the GPU's bandwidth to the NVSwitches: intra-node collectives slow to "
        "the weakest GPU.",
    fix="reset the GPU or reboot; a link that stays down needs the baseboard serviced",
    source="nvidia-smi(1) nvlink --status",
)

declare(
    id="doctor-nvlink-errors", kind="doctor", severity="warning",
    title="NVLink error counters are not zero",
    checks="No NVLink shows replay, recovery or CRC errors (nvidia-smi nvlink -e).",
    reads=NVLINK,
    why="Replays and recoveries are retransmissions and link retrains on the NVLink: a degrading link "
        "that ends in Xid 74 and a job killed by `uncorrectable NVLink error`.",
    fix="note the GPU and link, watch whether the counters grow (a diff before and after a job), and have "
        "the baseboard serviced if they do",
    source="nvidia-smi(1) nvlink --errorcounters; NVIDIA/srt-slurm pull request #307",
)

# --- the pcie_p2p role: the IOMMU as it set it -------------------------------------------------------
P2P = "What the pcie_p2p role left: the drop-in /etc/default/grub.d/rocetune-pcie-p2p.cfg; /proc/cmdline."
declare(
    id="doctor-pcie-p2p-iommu", kind="doctor", severity="warning",
    title="iommu=pt is configured but the running kernel does not have it",
    checks="Where the pcie_p2p role gave the boot loader iommu=pt, the running kernel's command line has it.",
    reads=P2P,
    why="The boot loader's setting takes effect at the next boot: until then the IOMMU keeps remapping "
        "every GPUDirect and peer-to-peer DMA.",
    fix="reboot the node in a maintenance window (/run/reboot-required says so too)",
    source="Linux Documentation/admin-guide/kernel-parameters.txt (iommu=pt); NVIDIA NCCL troubleshooting "
           "(IOMMU)",
)
