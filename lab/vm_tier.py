"""The VM tier as the rest of the lab sees it: where its state lives, what `up` built (VMInfo,
read back by `current`) and its lines of the Ansible inventory. It imports no other lab module
but handles, so the namespace hosts write one inventory for both tiers without the VM code.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from lab import handles

STATE_DIR = Path(os.environ.get("ROCETUNE_LAB_VM_DIR", "/run/rocetune-lab-vm"))
CONTROLLER_IP = "198.18.1.1"  # the machine on the VMs' management network, their package server too
MGMT_IF = "ens3"
FABRIC_IFS = ("ens4", "ens5")


@dataclasses.dataclass(frozen=True)
class VMInfo(handles.Hosts):
    """What ``up`` built. ``hosts``: [(name, management ip)]; ``fabric``: name -> rail ips."""

    hosts: List[Tuple[str, str]]
    fabric: Dict[str, List[str]]
    accel: str
    accel_reason: str
    image: str
    boot_seconds: Dict[str, float]
    state_dir: Path = STATE_DIR
    # "pc" (the default) or "q35": a PCIe machine with an emulated IOMMU (intel-iommu,
    # intel_iommu=on) and the fabric NICs, plus a virtio-rng standing in for a GPU, each behind
    # its own pcie-root-port -- ports whose ACS the guest kernel turns on (pcie_p2p's VM test).
    machine: str = "pc"
    controller_ip: str = CONTROLLER_IP
    WHAT = "VM"

    def console(self, host: str) -> Path:
        return self.state_dir / host / "console.log"


def current() -> Optional[VMInfo]:
    """The VMInfo of the VM lab that is up now, or None."""
    try:
        state = json.loads((STATE_DIR / "lab.json").read_text())
    except (OSError, ValueError):
        return None
    if state.get("phase") != "up":
        return None
    return VMInfo(hosts=[(h["name"], h["ip"]) for h in state["hosts"]],
                  fabric={h["name"]: h["fabric"] for h in state["hosts"]},
                  accel=state["accel"], accel_reason=state["accel_reason"],
                  image=state["image"],
                  boot_seconds={h["name"]: h["boot_seconds"] for h in state["hosts"]},
                  machine=state.get("machine", "pc"))


def inventory_lines(info: VMInfo) -> List[str]:
    lines = ["    vm:", "      hosts:"]
    for name, ip in info.hosts:
        lines += [f"        {name}:", f"          ansible_host: {ip}",
                  f"          rocetune_lab_fabric_ips: {json.dumps(info.fabric[name])}"]
    lines += info.inventory_vars(MGMT_IF)
    lines += [
        f"        rocetune_lab_fabric_interfaces: {json.dumps(list(FABRIC_IFS))}",
        "        rocetune_lab_systemd: true",
        "        rocetune_lab_vm: true",
        f"        rocetune_lab_vm_accel: {info.accel}",
    ]
    return lines
