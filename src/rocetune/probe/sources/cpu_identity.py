"""The host's CPU identity as NCCL's topology file needs it: the architecture, and on x86 the
vendor string, family and model -- all read through the root, never from the machine running
the probe (a capture of an arm64 node analysed on an x86 laptop stays arm64).

The architecture, first answer wins:
1. `/proc/sys/kernel/arch` (the kernel's machine name, where the kernel has it);
2. the shape of `/proc/cpuinfo`, which differs per architecture: x86 has `vendor_id` and
   `cpu family`, arm64 `CPU implementer` and `CPU architecture: 8`/`9`, POWER a `cpu : POWERn`
   line with `platform`;
3. a machine name at the end of the kernel release (`5.14.0-427.el9.x86_64`).

`vendor_id` is kept exactly as the kernel prints it: Zhaoxin's "  Shanghai  " carries spaces
that NCCL's vendor table spells out. `family` and `model` are /proc/cpuinfo's decimal numbers
(rocetune.nccl.topo turns them into NCCL's CPUID-derived familyid/modelid).
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from ...hostfs.context import ProbeContext

_RELEASE_ARCH = r"[.-](x86_64|aarch64|ppc64le|ppc64|s390x|riscv64)\Z"  # the last resort: compiled there


def _first_block(text: str) -> Dict[str, str]:
    """The first processor's `key : value` lines; values keep their inner and trailing spaces."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if value.startswith(" "):
            value = value[1:]  # the kernel prints "key\t: value"
        out.setdefault(key, value)
    return out


def _arch_from_cpuinfo(fields: Dict[str, str], text: str) -> Optional[str]:
    if "vendor_id" in fields and "cpu family" in fields:
        return "x86_64" if re.search(r"^flags\s*:.*\blm\b", text, re.M) or "flags" not in fields else "i686"
    if "CPU implementer" in fields and fields.get("CPU architecture", "").strip() in ("8", "9", "AArch64"):
        return "aarch64"
    if re.search(r"^cpu\s*:\s*POWER", text, re.M) and re.search(r"^(platform|machine)\s*:", text, re.M):
        return "ppc64le"
    return None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int((text or "").strip(), 0) if text is not None else None
    except ValueError:
        return None


def cpu_identity(ctx: ProbeContext) -> dict:
    text = ctx.text("/proc/cpuinfo") or ""
    fields = _first_block(text)
    arch, source = None, None
    machine = ctx.attr("/proc/sys/kernel/arch")
    if machine:
        arch, source = machine.strip(), "/proc/sys/kernel/arch"
    if arch is None:
        arch = _arch_from_cpuinfo(fields, text)
        source = "/proc/cpuinfo" if arch else None
    if arch is None:
        m = re.search(_RELEASE_ARCH, ctx.attr("/proc/sys/kernel/osrelease") or "")
        if m:
            arch, source = m.group(1), "/proc/sys/kernel/osrelease"
    x86 = arch in ("x86_64", "i686", "i386", "amd64")
    vendor = fields.get("vendor_id") if x86 else None
    return {
        "arch": arch,
        "arch_from": source,
        "vendor_id": vendor.rstrip("\n") if vendor else None,
        "family": _int(fields.get("cpu family")) if x86 else None,
        "model": _int(fields.get("model")) if x86 else None,
    }
