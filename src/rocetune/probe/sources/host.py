"""Host source: name, kernel, CPU, NUMA nodes and signs of a hypervisor."""

from __future__ import annotations

from typing import Optional

from ...errors import HostReadError
from ...hostfs.context import ProbeContext
from ..source import Source
from .cpu_identity import cpu_identity

NODES = "/sys/devices/system/node"
DMI = "/sys/class/dmi/id"
# systemd's order (src/basic/virt.c detect_vm_dmi_vendor): product_name before sys_vendor, so that
# KVM is told from plain QEMU; product_version carries "Hyper-V" on Hyper-V's UEFI guests.
DMI_KEYS = ("product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version")
# (prefix of a DMI string, name): systemd's dmi_vendor_table, same order and prefixes.
DMI_VENDORS = (("KVM", "KVM"), ("OpenStack", "OpenStack (KVM)"), ("KubeVirt", "KubeVirt (KVM)"),
               ("Amazon EC2", "Amazon EC2"), ("QEMU", "QEMU"), ("VMware", "VMware"), ("VMW", "VMware"),
               ("innotek GmbH", "VirtualBox"), ("VirtualBox", "VirtualBox"),
               ("Oracle Corporation", "VirtualBox"), ("Xen", "Xen"), ("Bochs", "Bochs"),
               ("Parallels", "Parallels"), ("BHYVE", "bhyve"), ("Hyper-V", "Hyper-V"),
               ("Apple Virtualization", "Apple Virtualization"),
               ("Google Compute Engine", "Google Compute Engine"))
ACPI_FADT = "/sys/firmware/acpi/tables/FACP"
# OEM IDs a VMM writes into the header of every ACPI table it builds. Firecracker: "FIRECK"
# (firecracker-microvm/firecracker src/vmm/src/acpi/mod.rs:23, from v1.8.0, where x86_64 guests
# got ACPI, to v1.16.1); it provides no SMBIOS, so its guests have no DMI.
ACPI_OEM_IDS = {b"FIRECK": "Firecracker"}
UNNAMED = "a hypervisor (not named by DMI, ACPI or /sys/hypervisor)"


def _cpuinfo(ctx: ProbeContext) -> dict:
    vendor = model = None
    cpus = 0
    hypervisor_flag = False
    for line in (ctx.text("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "processor":
            cpus += 1
        elif key == "vendor_id" and vendor is None:
            vendor = value
        elif key == "model name" and model is None:
            model = value
        elif key == "flags" and "hypervisor" in value.split():
            hypervisor_flag = True
    return {"vendor": vendor, "model": model, "cpus": cpus or None, "hypervisor_flag": hypervisor_flag}


def probe(ctx: ProbeContext) -> dict:
    info = _cpuinfo(ctx)
    nodes = []
    for name in ctx.root.listdir(NODES):
        if name.startswith("node") and name[4:].isdigit():
            nodes.append({"id": int(name[4:]), "cpulist": ctx.attr(f"{NODES}/{name}/cpulist")})
    dmi = {key: ctx.attr(f"{DMI}/{key}") for key in DMI_KEYS}
    hypervisor = _hypervisor_name(ctx, dmi) if info["hypervisor_flag"] else None
    return {
        "hostname": ctx.attr("/proc/sys/kernel/hostname"),
        "kernel_release": ctx.attr("/proc/sys/kernel/osrelease"),
        "cpu_vendor": info["vendor"],
        "cpu_model": info["model"],
        "cpu": cpu_identity(ctx),
        "logical_cpus": info["cpus"],
        "numa_nodes": sorted(nodes, key=lambda n: n["id"]),
        "dmi": {"sys_vendor": dmi["sys_vendor"], "product_name": dmi["product_name"]},
        "hypervisor": hypervisor,
    }


def _hypervisor_name(ctx: ProbeContext, dmi: dict) -> str:
    """Who runs this VM: DMI first, then Xen's /sys/hypervisor, then the ACPI tables' OEM ID
    (a VMM without firmware, like Firecracker, has no DMI); a plain phrase when none names it."""
    for key in DMI_KEYS:
        value = dmi.get(key) or ""
        if key == "product_name" and value.startswith("Virtual Machine") \
                and (dmi.get("sys_vendor") or "").startswith("Microsoft"):
            return "Hyper-V"
        for prefix, name in DMI_VENDORS:
            if value.startswith(prefix):
                return name
    if (ctx.attr("/sys/hypervisor/type") or "").lower() == "xen":
        return "Xen"
    oem = _acpi_oem_id(ctx)
    if oem in ACPI_OEM_IDS:
        return ACPI_OEM_IDS[oem]
    return UNNAMED


def _acpi_oem_id(ctx: ProbeContext) -> Optional[bytes]:
    """OEM ID of the FADT (bytes 10-15 of an ACPI table header). The file is root's alone: a
    probe run as a user cannot read it, which says nothing about the host, so it is silent."""
    try:
        head = ctx.root.read_head(ACPI_FADT, 16)
    except HostReadError:
        return None
    if not head or len(head) < 16 or head[:4] != b"FACP":
        return None
    return head[10:16]


SOURCE = Source("host", reads="/proc/sys/kernel, /proc/cpuinfo, /sys/devices/system/node, /sys/class/dmi/id, "
                "/sys/hypervisor",
                order=10)
