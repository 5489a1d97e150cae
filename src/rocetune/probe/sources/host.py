"""Host source: name, kernel, CPU, NUMA nodes and signs of a hypervisor."""

from __future__ import annotations

from ...hostfs import ProbeContext
from .cpu_identity import cpu_identity

NODES = "/sys/devices/system/node"


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
    dmi_vendor = ctx.attr("/sys/class/dmi/id/sys_vendor")
    dmi_product = ctx.attr("/sys/class/dmi/id/product_name")
    hypervisor = None
    if info["hypervisor_flag"]:
        hypervisor = _hypervisor_name(dmi_vendor, dmi_product)
    return {
        "hostname": ctx.attr("/proc/sys/kernel/hostname"),
        "kernel_release": ctx.attr("/proc/sys/kernel/osrelease"),
        "cpu_vendor": info["vendor"],
        "cpu_model": info["model"],
        "cpu": cpu_identity(ctx),
        "logical_cpus": info["cpus"],
        "numa_nodes": sorted(nodes, key=lambda n: n["id"]),
        "dmi": {"sys_vendor": dmi_vendor, "product_name": dmi_product},
        "hypervisor": hypervisor,
    }


def _hypervisor_name(vendor, product) -> str:
    text = f"{vendor or ''} {product or ''}".lower()
    for needle, name in (("microsoft", "Hyper-V"), ("qemu", "KVM"), ("kvm", "KVM"),
                         ("amazon", "Nitro"), ("google", "KVM"), ("vmware", "VMware"),
                         ("xen", "Xen"), ("oracle", "KVM")):
        if needle in text:
            return name
    return "unknown"
