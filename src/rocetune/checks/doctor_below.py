"""Doctor's checks below NCCL: what the kernel log, the PHY, the NIC firmware settings and the
NVLink fabric say, and whether ACS and the IOMMU are as the pcie_p2p role sets them
(rocetune.doctor.below_checks runs them)."""

from __future__ import annotations

from .registry import Check, declare

_NOT_CHECKED = "info when the node lacks what the check reads (said as 'not checked: ...')"
KERNEL_LOG = ("The kernel log since boot (or `doctor --since`): `journalctl -k -b`, else `dmesg --kernel` "
              "(/dev/kmsg), its last 50,000 lines.")


def _declare(check_id: str, severity: str, *, title: str, checks: str, reads: str, why: str, fix: str,
             source: str, also=(), note: str = "") -> None:
    declare(Check(check_id, "doctor", severity, title=title, checks=checks, reads=reads, why=why, fix=fix,
                  source=source, also=tuple(also), severity_note=note))


# --- the kernel log -------------------------------------------------------------------------------
_declare("doctor-kernel-log-unread", "info",
         title="The kernel log could not be read",
         checks="The journal or the kernel ring buffer answered, so the kernel-log checks ran.",
         reads=KERNEL_LOG,
         why="Firmware faults, link flaps and PCIe errors show only there: without it they go unseen.",
         fix="run doctor as root (the journal and dmesg need it on most distributions)",
         source="journalctl(1) -k; dmesg(1) --kernel")
_OTHER = "info for a device that does not carry the job (not a compute NIC, GPU or a bridge above them)"
_declare("doctor-kernel-nic-health", "error", also=("info",), note=_OTHER,
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
                "cmd.c; NVSentinel NIC health monitor (kernel log patterns)")
_declare("doctor-kernel-nic-command", "warning", also=("info",), note=_OTHER,
         title="NIC firmware commands failed",
         checks="No compute NIC logged failed firmware commands (`mlx5_cmd_check`/`mlx5_cmd_out_err`: "
                "command, status, syndrome), counted per device.",
         reads=KERNEL_LOG,
         why="A command the firmware refuses (a QP transition, a memory key) is a connection or "
             "registration that failed -- often the RDMA error a job saw.",
         fix="look the syndrome up with the NIC vendor (mlx5: `mlxreg`/support); check the driver and "
             "firmware versions agree across the fleet (fleet report nic.fw)",
         source="Linux drivers/net/ethernet/mellanox/mlx5/core/cmd.c (mlx5_cmd_out_err)")
_declare("doctor-kernel-link-flap", "warning", also=("info",), note=_OTHER,
         title="A compute port's link went down",
         checks="No compute port's link went down in the window read (`Link down`, `NIC Link is Down`, "
                "rxe `set down`), counted per port with the last time.",
         reads=KERNEL_LOG,
         why="Every link drop aborts the RDMA connections over the port: NCCL jobs on it fail or fall "
             "back, and repeated flaps mean a marginal cable, transceiver or switch port.",
         fix="check the cable and transceiver (doctor's PHY checks, `mlxlink -d PCI -c -e`) and the switch "
             "port's log; replace the cable if the port keeps flapping",
         source="Linux drivers/net/ethernet/mellanox/mlx5/core/en_main.c (netdev_info Link up/down); "
                "drivers/infiniband/sw/rxe/rxe_net.c")
_declare("doctor-kernel-pcie-aer", "warning", also=("error", "info"),
         note="error for uncorrectable (fatal or non-fatal) errors, warning for corrected ones; " + _OTHER,
         title="PCIe Advanced Error Reporting logged errors",
         checks="No PCIe AER error was reported by or for a GPU, a compute NIC or a bridge above them.",
         reads=KERNEL_LOG + " The PCI tree from the Features.",
         why="Corrected errors replay TLPs and cost bandwidth (a marginal slot, riser or retimer); "
             "uncorrectable ones reset the link and take the device away.",
         fix="reseat or replace the card or riser; check the slot's link speed and width (fleet report "
             "pcie.nic / pcie.gpu) and the BIOS's PCIe settings",
         source="Linux drivers/pci/pcie/aer.c; PCI Express Base Specification, Advanced Error Reporting")
_declare("doctor-kernel-module-event", "warning", also=("info",), note=_OTHER,
         title="A transceiver (module) event on a compute NIC",
         checks="No compute NIC logged a module error (`Port module event[error]`: power budget exceeded, "
                "high temperature, bad or unsupported EEPROM, bus stuck, ...) or an unplugged cable.",
         reads=KERNEL_LOG,
         why="A module the NIC cannot power or read, or one running hot, drops the link or runs it with "
             "errors.",
         fix="check the module's temperature and power (`ethtool -m IF`), use a module the NIC supports, "
             "reseat it",
         source="Linux drivers/net/ethernet/mellanox/mlx5/core/events.c (port_module)")
_declare("doctor-kernel-gpu-xid", "warning", also=("error",),
         note="error for the Xids NVIDIA lists as needing a reset or a repair (48, 63, 64, 74, 79, 92, 94, "
              "95, 119, 120, 140, 149), warning for the others",
         title="A GPU reported an Xid error",
         checks="No GPU logged an `NVRM: Xid` error in the window read.",
         reads=KERNEL_LOG,
         why="Xid 74 is an NVLink error, 79 a GPU that fell off the bus, 48/63/64/92-95 memory errors: a "
             "collective on such a GPU hangs or computes wrong results.",
         fix="look the Xid up in NVIDIA's Xid catalog; reset the GPU or drain the node as it says",
         source="NVIDIA GPU Deployment and Management Documentation, Xid Errors")
