"""What NCCL's topology-file loader requires, per release, and a check of a file against it.

The facts live in data/nccl_topo_requirements.json, built from NCCL's release tags by
tools/build_nccl_topo_requirements.py: for each element attribute the loader reads with a read
that fails when it is absent (xmlGetAttrStr/xmlGetAttrInt, src/graph/xml.h; NCCL then stops
with "Attribute X of node Y not found" and ncclInternalError), the condition under which it is
read, the releases, and the tag, file and line; and the string tables a value is looked up in
(kvConvertToInt: a value must start with one of the table's strings, or NCCL silently takes the
table's fallback). docs/rules/nccl-topo-file.md shows the table.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional

from ..pkgdata import package_json
from .topo import BDF_RE, TopoNode

_DATA = "data/nccl_topo_requirements.json"


@lru_cache(maxsize=1)
def load() -> dict:
    return package_json(__package__, _DATA)


def releases() -> List[str]:
    """The release tags the table covers, oldest first (v2.18.1-1 ...)."""
    return list(load()["releases"])


def release_text(tag: str) -> str:
    return re.sub(r"^v|-\d+$", "", tag)


def release_key(tag: str):
    """`v2.28.9-1` -> (2, 28, 9), comparable with rocetune.nccl.versions.parse_version."""
    return tuple(int(x) for x in re.findall(r"\d+", tag)[:3])


def _index(tag: str) -> int:
    return releases().index(tag)


def requirements(tag: str) -> List[dict]:
    """The requirement rows in force at release `tag`."""
    i = _index(tag)
    return [r for r in load()["requirements"] if _index(r["since"]) <= i <= _index(r["until"])]


def table_values(name: str, tag: Optional[str] = None) -> List[str]:
    """The strings of NCCL table `name` at `tag` (default: the newest release)."""
    tag = tag or releases()[-1]
    i = _index(tag)
    for r in load()["tables"].get(name, []):
        if _index(r["since"]) <= i <= _index(r["until"]):
            return list(r["values"])
    return []


def _known(value: str, table: List[str]) -> bool:
    return any(value.startswith(s) for s in table)


def _int(value: Optional[str]) -> bool:
    return value is not None and re.match(r"^\s*-?(0x[0-9a-fA-F]+|\d+)\s*\Z", value) is not None


def _applies(when: str, node: TopoNode, cpu_arch: Optional[str], cpu_vendor: Optional[str], tag: str) -> bool:
    if when.startswith("always") or when == "every <pci>":
        return True
    if when == "arch x86_64":
        return cpu_arch is not None and cpu_arch.startswith("x86_64")
    if when == "vendor GenuineIntel":
        return cpu_vendor is not None and cpu_vendor.startswith("GenuineIntel")
    if when == "vendor Zhaoxin":
        return cpu_vendor is not None and (cpu_vendor.startswith("CentaurHauls") or
                                           cpu_vendor.startswith("  Shanghai  "))
    if when.startswith("a <pci> that becomes a node"):
        if node.find("nic") or any("rank" in g.attrs for g in node.find("gpu")):
            return True
        cls = node.attrs.get("class") or ""
        # the loader's own class lookup: a GPU or NIC class without <gpu>/<nic> is no node
        return not (cls.startswith("0x03") or cls.startswith("0x02"))
    if when == "a <gpu> with a rank":
        return "rank" in node.attrs
    if when == "tclass a GPU class":
        return (node.attrs.get("tclass") or "").startswith("0x03")
    raise ValueError(f"unknown condition {when!r} in {_DATA}")


def check(system: TopoNode, tag: str) -> List[str]:
    """Each way NCCL `tag`'s loader would fail on (or misread) this file; [] when none."""
    problems: List[str] = []
    rel = release_text(tag)
    if system.tag != "system":
        return [f"NCCL {rel}: the root element is <{system.tag}>, not <system>"]
    reqs = requirements(tag)
    by_element: Dict[str, List[dict]] = {}
    for r in reqs:
        by_element.setdefault(r["element"], []).append(r)
    for node, parents in system.walk():
        cpu = next((p for p in reversed(parents + (node,)) if p.tag == "cpu"), None)
        arch = cpu.attrs.get("arch") if cpu is not None else None
        vendor = cpu.attrs.get("vendor") if cpu is not None else None
        for r in by_element.get(node.tag, []):
            if not _applies(r["when"], node, arch, vendor, tag):
                continue
            where = f"<{node.tag}{_ident(node)}>"
            value = node.attrs.get(r["attribute"])
            cite = _cite(r, tag)
            if value is None:
                problems.append(f"NCCL {rel}: {where} has no {r['attribute']} ({cite}): "
                                f"\"Attribute {r['attribute']} of node {node.tag} not found\"")
                continue
            problem = _value_problem(r, value, tag)
            if problem:
                problems.append(f"NCCL {rel}: {where} {r['attribute']}={value!r} {problem} ({cite})")
    version = system.attrs.get("version")
    if version is not None and version.strip() != "1":
        problems.append(f"NCCL {rel}: <system version={version!r}>: NCCL reads only version 1")
    return problems


def _value_problem(r: dict, value: str, tag: str) -> Optional[str]:
    attr = r["attribute"]
    if r.get("table"):
        table = table_values(r["table"], tag)
        if r["table"] != "kvDictPciClass" and not _known(value, table):
            return f"is not in NCCL's {r['table']} (" + ", ".join(repr(s) for s in table) + ")"
        if r["table"] == "kvDictPciClass" and not re.match(r"^0x[0-9a-fA-F]{6}\Z", value):
            return "is not a PCI class (0xCCSSPP)"
        return None
    if attr == "busid":
        return None if BDF_RE.match(value) else "is not a PCI address NCCL can read (dddd:bb:dd.f)"
    if attr in ("numaid", "link_width", "familyid", "modelid", "version", "count", "bw", "sm",
                "rank", "dev", "gdr"):
        return None if _int(value) else "is not a number"
    return None


def _cite(r: dict, tag: str) -> str:
    if tag == r["until"]:
        return f"{r['until']} {r['file']}:{r['until_line']}"
    return f"{r['since']} {r['file']}:{r['line']}"


def _ident(node: TopoNode) -> str:
    for key in ("busid", "numaid", "name", "target"):
        if key in node.attrs:
            return f" {key}={node.attrs[key]!r}"
    return ""


def check_all(system: TopoNode) -> Dict[str, List[str]]:
    """release tag -> problems, for every release the table covers (only the failing ones)."""
    out = {}
    for tag in releases():
        p = check(system, tag)
        if p:
            out[tag] = p
    return out
