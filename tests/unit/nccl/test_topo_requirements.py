"""The table of what NCCL's topology loader requires, and the check of a file against it."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from rocetune.nccl import topo_requirements as req
from rocetune.nccl.topo import TopoNode
from rocetune.nccl.topo_read import parse_topology

# A git clone of github.com/NVIDIA/nccl with its release tags (e.g. git clone --bare ...).
MIRROR = os.environ.get("ROCETUNE_NCCL_REPO", "")
HOSTS = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "hosts")


def test_the_table_covers_every_release_from_2_18_to_2_30_7():
    tags = req.releases()
    assert tags[0] == "v2.18.1-1" and tags[-1] == "v2.30.7-1" and len(tags) == len(set(tags))
    keys = [req.release_key(t) for t in tags]
    assert keys == sorted(keys)
    for tag in tags:
        have = {(r["element"], r["attribute"]) for r in req.requirements(tag)}
        assert {("cpu", "numaid"), ("cpu", "arch"), ("cpu", "vendor"), ("pci", "class"), ("pci", "busid"),
                ("pci", "link_width"), ("pci", "link_speed")} <= have, tag


def test_link_attributes_become_required_on_every_pci_in_2_30_7():
    def when(tag):
        return {r["when"] for r in req.requirements(tag) if r["attribute"] == "link_width"}
    assert when("v2.30.4-1") == {"a <pci> that becomes a node (bridge, GPU with <gpu>, NIC with <nic>)"}
    assert when("v2.30.7-1") == {"every <pci>"}


def _git_show(tag, path):
    return subprocess.run(["git", "-C", MIRROR, "show", f"{tag}:{path}"], capture_output=True,
                          text=True, check=True).stdout.splitlines()


@pytest.mark.skipif(not os.path.isdir(MIRROR), reason="ROCETUNE_NCCL_REPO names no NCCL git clone")
def test_every_provenance_line_reads_that_attribute_at_that_tag():
    doc = req.load()
    for r in doc["requirements"]:
        for tag, line in ((r["since"], r["line"]), (r["until"], r["until_line"])):
            text = _git_show(tag, r["file"])[line - 1]
            assert f'"{r["attribute"]}"' in text and re.search(r"xmlGetAttr(Str|Int)\(", text), (tag, r, text)
    for name, ranges in doc["tables"].items():
        for r in ranges:
            assert f"kvDict {name}[]" in _git_show(r["since"], r["file"])[r["line"] - 1]


def cpu(**attrs):
    return TopoNode("cpu", attrs)


def system(*cpus):
    return TopoNode("system", {"version": "1"}, list(cpus))


def pci(busid, cls, kids=(), **attrs):
    return TopoNode("pci", {"busid": busid, "class": cls, **attrs}, list(kids))


LINK = {"link_speed": "16.0 GT/s PCIe", "link_width": "16"}


def test_a_cpu_without_arch_fails_every_release():
    bad = system(cpu(numaid="0"))
    failing = req.check_all(bad)
    assert set(failing) == set(req.releases())
    assert "has no arch" in failing["v2.28.9-1"][0] and "src/graph/topo.cc" in failing["v2.28.9-1"][0]


@pytest.mark.parametrize("vendor,needs_ids", [("GenuineIntel", True), ("CentaurHauls", True),
                                              ("  Shanghai  ", True), ("AuthenticAMD", False)])
def test_family_and_model_are_required_for_intel_and_zhaoxin_only(vendor, needs_ids):
    s = system(cpu(numaid="0", arch="x86_64", vendor=vendor))
    assert bool(req.check(s, "v2.28.9-1")) is needs_ids
    s.children[0].attrs.update(familyid="6", modelid="143")
    assert req.check(s, "v2.28.9-1") == []


def test_spellings_nccls_tables_do_not_know():
    assert req.check(system(cpu(numaid="0", arch="aarch64")), "v2.28.9-1")  # NCCL says arm64
    assert req.check(system(cpu(numaid="0", arch="x86_64", vendor="Shanghai")), "v2.28.9-1")  # spaces matter
    assert req.check(system(cpu(numaid="0", arch="arm64")), "v2.28.9-1") == []
    s = system(cpu(numaid="0", arch="ppc64"), )
    s.children[0].children.append(pci("ffff:ff:01.0", "0x060400", link_speed="16 GT/s", link_width="16"))
    assert req.check(s, "v2.28.9-1") == []           # the 5.6-kernel spelling is in the table
    s.children[0].children[0].attrs["link_speed"] = "16.0 GT/s"   # neither spelling: NCCL's fallback
    assert any("kvDictPciGen" in p for p in req.check(s, "v2.28.9-1"))
    s.children[0].children[0].attrs["link_speed"] = "Unknown"
    assert any("kvDictPciGen" in p for p in req.check(s, "v2.28.9-1"))


def test_a_nic_pci_without_its_link_fails_only_from_2_30_7():
    s = system(cpu(numaid="0", arch="arm64"))
    s.children[0].children.append(pci("ffff:ff:01.0", "0x060400", [pci("0101:00:00.0", "0x020700")], **LINK))
    assert req.check(s, "v2.30.4-1") == []
    assert any("link_width" in p for p in req.check(s, "v2.30.7-1"))
    # a bridge has been a node all along
    del s.children[0].children[0].attrs["link_speed"]
    assert any("link_speed" in p for p in req.check(s, "v2.18.1-1"))


def test_azures_own_file_loads_in_every_release():
    with open(os.path.join(HOSTS, "azure-vm-flat", "opt", "microsoft", "ndv4", "topo.xml")) as fh:
        assert req.check_all(parse_topology(fh.read())) == {}


@pytest.mark.skipif(not os.path.isdir(MIRROR), reason="ROCETUNE_NCCL_REPO names no NCCL git clone")
def test_the_committed_table_is_what_the_tool_builds_from_the_tags(tmp_path):
    import sys

    tool = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "build_nccl_topo_requirements.py")
    out = tmp_path / "req.json"
    subprocess.run([sys.executable, tool, MIRROR, "-o", str(out)], check=True, capture_output=True)
    from rocetune.pkgdata import package_data

    assert out.read_bytes() == package_data("rocetune.nccl", "data/nccl_topo_requirements.json")
