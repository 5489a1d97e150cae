"""The CPU identity a topology file needs, read from the root -- never from the machine probing."""

from __future__ import annotations

import pytest

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.nccl.topo_cpu import cpu_attrs, nccl_family_id
from rocetune.probe.sources.cpu_identity import cpu_identity
from tests.unit.treekit import make

X86 = ("processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
       "model name\t: Some CPU\nflags\t\t: fpu lm hypervisor\n\nprocessor\t: 1\nvendor_id\t: {vendor}\n")
# an arm64 /proc/cpuinfo (Neoverse V2, as on Grace)
ARM = ("processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\n"
       "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\n")
POWER = "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\nclock\t\t: 3800.000000MHz\n\n" \
        "timebase\t: 512000000\nplatform\t: PowerNV\nmodel\t\t: 9006-22P\nmachine\t\t: PowerNV 9006-22P\n"


def identity(tmp_path, files):
    return cpu_identity(ProbeContext(HostRoot(make(tmp_path, files))))


@pytest.mark.parametrize("vendor,family,model,familyid", [
    ("GenuineIntel", 6, 143, "6"),          # Sapphire Rapids
    ("AuthenticAMD", 23, 49, "143"),        # Zen 2: Linux family 0xf + 8, NCCL 0xf + (8 << 4)
    ("AuthenticAMD", 25, 17, "175"),        # Zen 4
    ("CentaurHauls", 7, 91, "7"),           # Zhaoxin YongFeng
    ("  Shanghai  ", 7, 91, "7"),
])
def test_x86_identity_as_nccl_computes_it(tmp_path, vendor, family, model, familyid):
    cpu = identity(tmp_path, {"proc/cpuinfo": X86.format(vendor=vendor, family=family, model=model)})
    assert cpu == {"arch": "x86_64", "arch_from": "/proc/cpuinfo", "vendor_id": vendor,
                   "family": family, "model": model}
    attrs, why = cpu_attrs(cpu)
    assert why is None
    assert attrs == {"arch": "x86_64", "vendor": vendor, "familyid": familyid, "modelid": str(model)}


def test_family_ids_below_and_at_0xf():
    assert [nccl_family_id(f) for f in (5, 6, 14, 15, 16, 26)] == [5, 6, 14, 15, 31, 191]


def test_arm64_and_power_from_cpuinfo(tmp_path):
    assert identity(tmp_path / "a", {"proc/cpuinfo": ARM})["arch"] == "aarch64"
    assert cpu_attrs({"arch": "aarch64"}) == ({"arch": "arm64"}, None)
    p = identity(tmp_path / "p", {"proc/cpuinfo": POWER})
    assert p["arch"] == "ppc64le" and p["vendor_id"] is None
    assert cpu_attrs(p) == ({"arch": "ppc64"}, None)


def test_the_kernels_own_arch_wins_over_the_cpuinfo_shape(tmp_path):
    cpu = identity(tmp_path, {"proc/sys/kernel/arch": "aarch64\n", "proc/cpuinfo": ARM})
    assert cpu["arch"] == "aarch64" and cpu["arch_from"] == "/proc/sys/kernel/arch"


def test_kernel_release_is_the_last_resort(tmp_path):
    cpu = identity(tmp_path, {"proc/sys/kernel/osrelease": "5.14.0-427.13.1.el9_4.aarch64\n",
                              "proc/cpuinfo": "processor\t: 0\n"})
    assert cpu["arch"] == "aarch64" and cpu["arch_from"] == "/proc/sys/kernel/osrelease"


@pytest.mark.parametrize("cpu,why", [
    ({}, "unknown"),
    ({"arch": "s390x"}, "none NCCL knows"),
    ({"arch": "x86_64", "vendor_id": "GenuineIntel", "family": None, "model": 1}, "missing"),
    ({"arch": "x86_64", "vendor_id": "HygonGenuine", "family": 24, "model": 1}, "vendor table"),
])
def test_an_identity_nccl_cannot_use_gives_no_attributes(cpu, why):
    attrs, problem = cpu_attrs(cpu)
    assert attrs is None and why in problem


def test_no_cpuinfo_no_identity(tmp_path):
    assert identity(tmp_path, {"sys/x": ""}) == {"arch": None, "arch_from": None, "vendor_id": None,
                                                 "family": None, "model": None}
