"""hwloc reads every fixture root and agrees with the spec about each GPU and NIC.

`HWLOC_FSROOT=<root> lstopo-no-graphics --of xml` walks the fixture's sysfs/procfs like it walks a
real machine: CPUs and NUMA nodes from /sys/devices/system, PCI devices from /sys/bus/pci/devices
(bridges from their config space bus numbers), locality from each function's local_cpus, network
and RDMA devices from /sys/class/{net,infiniband}. For every GPU and NIC function in the spec:

* the NUMA node hwloc attaches it to is the spec's (None where the spec says -1: unknown);
* its PCI parent is the last bridge of the spec path (None on a root bus);
* each of its network interfaces and RDMA devices hangs below it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the fixture specs (pip install pyyaml)")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
sys.path.insert(0, FIXTURES)

from hostspec import expand_sriov  # noqa: E402
from hwloc_view import hwloc_available, hwloc_osdevs, hwloc_pci_view  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hwloc_available(),
    reason="hwloc is not installed (lstopo-no-graphics missing): apt-get install -y hwloc",
)

SPECS = os.path.join(FIXTURES, "specs")
HOSTS = os.path.join(FIXTURES, "hosts")
NAMES = sorted(f[:-4] for f in os.listdir(SPECS) if f.endswith(".yml"))
GPU_MODELS = ("h100-sxm", "h800-sxm", "a100-sxm4-80", "a100-sxm4-40", "rtx6000-ada")


def full(bdf: str, domain: str) -> str:
    return bdf if bdf.count(":") == 2 else f"{domain}:{bdf}"


def expected(spec: dict):
    """{bdf: (numa or None, parent or None, [os device names])} for GPUs and NICs of the spec.

    SR-IOV VF templates are expanded the way the builder does; a sub-function's netdev and RDMA
    device belong to its PF (hwloc walks up from the auxiliary device to the PCI function).
    Soft-RoCE devices have no PCI ancestor at all and are checked in test_hwloc_leaves_virtual_rdma_alone.
    """
    pci = spec["pci"]
    hbs = {k.lower(): (v or {}) for k, v in (pci.get("host_bridges") or {}).items()}
    out = {}
    for dev in expand_sriov(pci["devices"]):
        if dev["model"] not in GPU_MODELS and not (dev.get("rdma") or dev.get("netdev")):
            continue
        bdf = full(dev["bdf"], "0000")
        path = [full(p, bdf[:4]) for p in (dev.get("path") or "").split("/") if p]
        top = path[0] if path else bdf
        numa = dev.get("numa", hbs.get(top[:7], {}).get("numa", -1))
        osdevs = [x for x in (dev.get("rdma"),) if x]
        if dev.get("netdev") and not dev.get("netdev_hidden"):
            osdevs.append(dev["netdev"])
        for sf in dev.get("subfunctions") or []:
            osdevs += [x for x in (sf.get("rdma"), sf.get("netdev")) if x]
        if (numa is None or numa < 0) and len(spec["numa"]) == 1:
            numa = spec["numa"][0]["node"]  # unknown locality on a one-node machine is that node
        out[bdf] = (None if numa is None or numa < 0 else numa, path[-1] if path else None, osdevs)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_hwloc_agrees_with_spec(name):
    with open(os.path.join(SPECS, name + ".yml"), encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    root = os.path.join(HOSTS, name)
    view = hwloc_pci_view(root)
    osdevs = hwloc_osdevs(root)
    problems = []
    for bdf, (numa, parent, names) in sorted(expected(spec).items()):
        got = view.get(bdf)
        if got is None:
            problems.append(f"{bdf}: not seen by hwloc")
            continue
        if got["numa"] != numa:
            problems.append(f"{bdf}: hwloc NUMA {got['numa']}, spec {numa}")
        if got["parent"] != parent:
            problems.append(f"{bdf}: hwloc parent {got['parent']}, spec {parent}")
        for osname in names:
            if osdevs.get(osname) != bdf:
                problems.append(f"{osname}: hwloc attaches it to {osdevs.get(osname)}, spec {bdf}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", [n for n in NAMES if "soft_rdma" in Path(SPECS, n + ".yml").read_text()])
def test_hwloc_leaves_virtual_rdma_alone(name):
    """Soft-RoCE devices live in /sys/devices/virtual: hwloc attaches them to no PCI device."""
    with open(os.path.join(SPECS, name + ".yml"), encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    osdevs = hwloc_osdevs(os.path.join(HOSTS, name))
    for soft in spec["soft_rdma"]:
        assert osdevs.get(soft["rdma"]) is None, f"{soft['rdma']} attached to {osdevs.get(soft['rdma'])}"
        assert osdevs.get(soft["netdev"]) is not None, f"{soft['netdev']} has no PCI device in hwloc"


@pytest.mark.parametrize("name", NAMES)
def test_hwloc_sees_all_cpus_and_numa_nodes(name):
    import xml.etree.ElementTree as ET

    from hwloc_view import hwloc_xml

    with open(os.path.join(SPECS, name + ".yml"), encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    tree = ET.fromstring(hwloc_xml(os.path.join(HOSTS, name)))
    objs = list(tree.iter("object"))
    cpu = spec["cpu"]
    ncpus = cpu["sockets"] * cpu["cores_per_socket"] * cpu.get("threads_per_core", 1)
    assert sum(1 for o in objs if o.get("type") == "PU") == ncpus
    assert sum(1 for o in objs if o.get("type") == "Package") == cpu["sockets"]
    assert sum(1 for o in objs if o.get("type") == "Core") == cpu["sockets"] * cpu["cores_per_socket"]
    assert sorted(int(o.get("os_index")) for o in objs if o.get("type") == "NUMANode") == sorted(
        n["node"] for n in spec["numa"])
