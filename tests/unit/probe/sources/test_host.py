"""Host source: which hypervisor runs a VM, named from DMI, /sys/hypervisor or the ACPI OEM ID,
and said plainly when nothing names it."""

from __future__ import annotations

import struct
import tarfile

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.capture import build_tar, record
from rocetune.probe.sources import host as host_source
from tests.fixtures.roots import root_of
from tests.unit.treekit import Dir, make

FLAGGED = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 hypervisor lahf_lm\n\n"
BARE = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 lahf_lm\n\n"


def fadt_head(oem_id: bytes, table_id: bytes = b"FCVMFADT") -> bytes:
    """An ACPI table header as the ACPI spec lays it out (signature, length, revision, checksum,
    OEM ID, OEM table ID, ...): modelled, with the IDs Firecracker's source writes."""
    return b"FACP" + struct.pack("<IBB", 276, 6, 0) + oem_id + table_id + b"\0" * 12 + b"\0" * 240


def probe(root) -> dict:
    return host_source.probe(ProbeContext(HostRoot(str(root))))


def test_the_real_firecracker_capture_names_no_vendor_but_says_it_is_a_vm():
    # The H100 capture: hypervisor flag, no DMI, no /sys/hypervisor, no ACPI table read.
    h = probe(root_of("h100-firecracker-vm"))
    assert h["hypervisor"] == "a hypervisor (not named by DMI, ACPI or /sys/hypervisor)"
    assert "unknown" not in h["hypervisor"]


def test_firecracker_is_named_from_the_acpi_oem_id(tmp_path):
    root = make(tmp_path, {"proc/cpuinfo": FLAGGED,
                           "sys/firmware/acpi/tables/FACP": fadt_head(b"FIRECK")})
    assert probe(root)["hypervisor"] == "Firecracker"


def test_another_acpi_oem_id_names_nothing(tmp_path):
    root = make(tmp_path, {"proc/cpuinfo": FLAGGED,
                           "sys/firmware/acpi/tables/FACP": fadt_head(b"BOCHS ", b"BXPC    ")})
    assert probe(root)["hypervisor"].startswith("a hypervisor (not named")


def test_dmi_names_the_common_hypervisors(tmp_path):
    cases = [
        ({"sys_vendor": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)"}, "QEMU"),
        ({"sys_vendor": "Red Hat", "product_name": "KVM"}, "KVM"),  # product_name before sys_vendor
        ({"sys_vendor": "QEMU", "product_name": "KVM Virtual Machine"}, "KVM"),
        ({"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine"}, "Hyper-V"),
        ({"sys_vendor": "VMware, Inc.", "product_name": "VMware Virtual Platform"}, "VMware"),
        ({"sys_vendor": "Xen", "product_name": "HVM domU"}, "Xen"),
        ({"sys_vendor": "Amazon EC2", "product_name": "p5.48xlarge"}, "Amazon EC2"),
        ({"sys_vendor": "Google", "product_name": "Google Compute Engine"}, "Google Compute Engine"),
        ({"sys_vendor": "Oracle Corporation", "product_name": "VirtualBox"}, "VirtualBox"),
        ({"sys_vendor": "OpenStack Foundation", "product_name": "OpenStack Nova"}, "OpenStack (KVM)"),
    ]
    for n, (dmi, want) in enumerate(cases):
        tree = {"proc/cpuinfo": FLAGGED}
        tree.update({f"sys/class/dmi/id/{k}": v + "\n" for k, v in dmi.items()})
        assert probe(make(tmp_path / str(n), tree))["hypervisor"] == want, dmi


def test_xen_is_named_from_sys_hypervisor(tmp_path):
    root = make(tmp_path, {"proc/cpuinfo": FLAGGED, "sys/hypervisor/type": "xen\n"})
    assert probe(root)["hypervisor"] == "Xen"


def test_bare_metal_has_no_hypervisor_and_reads_no_acpi_table(tmp_path):
    root = make(tmp_path, {"proc/cpuinfo": BARE, "sys/class/dmi/id/sys_vendor": "Supermicro\n",
                           "sys/firmware/acpi/tables/FACP": fadt_head(b"FIRECK")})
    assert probe(root)["hypervisor"] is None


def test_an_unreadable_acpi_table_is_silent(tmp_path):
    root = make(tmp_path, {"proc/cpuinfo": FLAGGED, "sys/firmware/acpi/tables/FACP": Dir("")})
    ctx = ProbeContext(HostRoot(root))
    assert host_source.probe(ctx)["hypervisor"].startswith("a hypervisor (not named")
    assert ctx.status.warnings == []


def test_a_capture_keeps_the_acpi_header_it_read(tmp_path):
    root = make(tmp_path / "host", {"proc/cpuinfo": FLAGGED,
                                    "sys/firmware/acpi/tables/FACP": fadt_head(b"FIRECK")})
    features, rec = record(root)
    assert features["host"]["hypervisor"] == "Firecracker"
    archive = tmp_path / "c.tar.gz"
    archive.write_bytes(build_tar(root, rec))
    with tarfile.open(archive) as tar:
        member = tar.getmember("sys/firmware/acpi/tables/FACP")
        assert member.size == 16  # the header bytes read, not the whole table
        tar.extractall(tmp_path / "replay")
    assert probe(tmp_path / "replay")["hypervisor"] == "Firecracker"
