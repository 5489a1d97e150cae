"""The `<cpu>` identity NCCL's topology loader requires (arch; on x86 vendor, familyid and
modelid), spelled as NCCL computes it, from the Features' host.cpu (read from the root, never
from the machine that runs rocetune)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from .topo_requirements import table_values

# The kernel's machine name -> the spelling of NCCL's kvDictCpuArch (src/graph/topo.cc; NCCL
# writes the arch it was compiled for: __x86_64__, __aarch64__, __PPC__, src/graph/xml.cc
# ncclTopoGetXmlFromCpu). ppc64le and ppc64 are both "ppc64" to NCCL.
NCCL_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64",
             "ppc64le": "ppc64", "ppc64": "ppc64"}


def nccl_family_id(linux_family: int) -> int:
    """/proc/cpuinfo's `cpu family` -> the familyid NCCL computes from CPUID leaf 1.

    Linux adds the extended family only when the base family is 0xf (family = 0xf + ext);
    NCCL always adds it shifted (familyId = base + (ext << 4), src/graph/xml.cc
    ncclTopoGetXmlFromCpu). An AMD Zen 2 (Linux family 23 = 0xf + 8) is familyid 143 to NCCL.
    Below 0xf the extended family is zero on every x86 CPU, so the two agree."""
    if linux_family < 0xF:
        return linux_family
    return 0xF + ((linux_family - 0xF) << 4)


def nccl_model_id(linux_model: int) -> int:
    """/proc/cpuinfo's `model` -> NCCL's modelid (base + (extModel << 4)). Linux adds the
    extended model for family >= 6, the only families that have one, so the values agree."""
    return linux_model


def cpu_attrs(cpu: Optional[dict]) -> Tuple[Optional[Dict[str, str]], Optional[str]]:
    """The `<cpu>` attributes NCCL's loader requires besides numaid (arch; on x86 vendor,
    familyid, modelid), from the Features' host.cpu; or None and why they cannot be written."""
    cpu = cpu or {}
    machine = cpu.get("arch")
    if not machine:
        return None, "the host's CPU architecture is unknown"
    arch = NCCL_ARCH.get(str(machine))
    if arch is None:
        return None, f"CPU architecture {machine} is none NCCL knows (x86_64, arm64, ppc64)"
    attrs = {"arch": arch}
    if arch != "x86_64":
        return attrs, None
    vendor, family, model = cpu.get("vendor_id"), cpu.get("family"), cpu.get("model")
    if not vendor or family is None or model is None:
        return None, "the CPU's vendor, family or model is missing from /proc/cpuinfo"
    if vendor not in table_values("kvDictCpuVendor"):
        return None, f"CPU vendor {vendor!r} is not in NCCL's vendor table"
    attrs.update(vendor=vendor, familyid=str(nccl_family_id(int(family))),
                 modelid=str(nccl_model_id(int(model))))
    return attrs, None
