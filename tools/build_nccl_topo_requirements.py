#!/usr/bin/env python3
"""Build src/rocetune/nccl/data/nccl_topo_requirements.json: what NCCL's topology-file loader
requires of each element, release by release, with the tag, file and line each fact rests on.

Input: a bare git repository of NCCL with its release tags (NVIDIA/nccl). For every release from
2.18 on, the tool finds in src/graph/topo.cc and src/graph/xml.cc the reads that fail when an
attribute is absent (xmlGetAttrStr/xmlGetAttrInt, src/graph/xml.h) in the loader functions
(ncclTopoAddCpu/AddPci/AddGpu/AddNvLinks/AddPciLinks/AddC2c, ncclTopoXmlLoadSystem), and the
string tables a value must be spelled from (kvDictCpuArch, kvDictCpuVendor, kvDictPciGen,
kvDictPciClass). Consecutive releases with the same fact are merged into one range; the output
records facts (names, conditions, spellings, where they are), never NCCL's code.

    python3 tools/build_nccl_topo_requirements.py PATH/TO/nccl.git [-o OUT]   # a clone with its tags

Deterministic: the same repository gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "src", "rocetune", "nccl", "data", "nccl_topo_requirements.json")
FIRST = (2, 18, 0)
TOPO, XML = "src/graph/topo.cc", "src/graph/xml.cc"

# (element, attribute, when, file, pattern, occurrence, table)
# `when` is the condition under which the loader reads the attribute with a failing read.
READS = [
    ("system", "version", "always (must be 1)", XML, r'xmlGetAttrInt\(head, "version"', 0, None),
    ("cpu", "numaid", "always", TOPO, r'xmlGetAttrInt\(xmlCpu, "numaid"', 0, None),
    ("cpu", "arch", "always", TOPO, r'xmlGetAttrStr\(xmlCpu, "arch"', 0, "kvDictCpuArch"),
    ("cpu", "vendor", "arch x86_64", TOPO, r'xmlGetAttrStr\(xmlCpu, "vendor"', 0, "kvDictCpuVendor"),
    ("cpu", "familyid", "vendor GenuineIntel", TOPO, r'xmlGetAttrInt\(xmlCpu, "familyid"', 0, None),
    ("cpu", "modelid", "vendor GenuineIntel", TOPO, r'xmlGetAttrInt\(xmlCpu, "modelid"', 0, None),
    ("cpu", "familyid", "vendor Zhaoxin", TOPO, r'xmlGetAttrInt\(xmlCpu, "familyid"', 1, None),
    ("cpu", "modelid", "vendor Zhaoxin", TOPO, r'xmlGetAttrInt\(xmlCpu, "modelid"', 1, None),
    ("pci", "class", "always", TOPO, r'xmlGetAttrStr\(xmlPci, "class"', 0, "kvDictPciClass"),
    ("pci", "busid", "always", TOPO, r'xmlGetAttrStr\(xmlPci, "busid"', 0, None),
    ("pci", "link_width", None, TOPO, r'xmlGetAttrInt\(xmlPci, "link_width"', 0, None),
    ("pci", "link_speed", None, TOPO, r'xmlGetAttrStr\(xmlPci, "link_speed"', 0, "kvDictPciGen"),
    ("gpu", "sm", "a <gpu> with a rank", TOPO, r'xmlGetAttrInt\(xmlGpu, "sm"', 0, None),
    ("gpu", "rank", "a <gpu> with a rank", TOPO, r'xmlGetAttrInt\(xmlGpu, "rank"', 0, None),
    ("gpu", "dev", "a <gpu> with a rank", TOPO, r'xmlGetAttrInt\(xmlGpu, "dev"', 0, None),
    ("gpu", "gdr", "a <gpu> with a rank", TOPO, r'xmlGetAttrInt\(xmlGpu, "gdr"', 0, None),
    ("nvlink", "count", "always", TOPO, r'xmlGetAttrInt\(node, "count"', 0, None),
    ("nvlink", "tclass", "always", TOPO, r'xmlGetAttrStr\(node, "tclass"', 0, "kvDictPciClass"),
    ("nvlink", "target", "tclass a GPU class", TOPO, r'xmlGetAttrStr\(node, "target"', 0, None),
    ("c2c", "count", "always", TOPO, r'xmlGetAttrInt\(node, "count", &(?:link)?[cC]ount\)', -1, None),
    ("c2c", "bw", "always", TOPO, r'xmlGetAttrInt\(node, "bw"', 0, None),
]
TABLES = ("kvDictCpuArch", "kvDictCpuVendor", "kvDictPciGen", "kvDictPciClass")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def releases(repo: str) -> List[str]:
    out = []
    for tag in git(repo, "tag").split():
        m = re.match(r"^v(\d+)\.(\d+)\.(\d+)-1$", tag)
        if m and tuple(int(x) for x in m.groups()) >= FIRST:
            out.append(tag)
    return sorted(out, key=lambda t: tuple(int(x) for x in re.findall(r"\d+", t)[:3]))


def _line(text: str, pattern: str, occurrence: int) -> Optional[int]:
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if re.search(pattern, line)]
    if not hits:
        return None
    if occurrence < 0:  # the c2c count: the last "count" read (the nvlink one comes first)
        return hits[-1] if len(hits) > 1 else None
    return hits[occurrence] if occurrence < len(hits) else None


def _function(text: str, name: str) -> Tuple[int, int]:
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(rf"^ncclResult_t {name}\(", ln))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("}"))
    return start + 1, end + 1


def _link_when(text: str, line: int) -> str:
    """Before 2.30.7 the link attributes are read only for a <pci> that becomes a node; from
    then on before any sub-element is looked at, i.e. for every <pci>."""
    start, _ = _function(text, "ncclTopoAddPci")
    body = text.splitlines()[start - 1:line]
    return ("every <pci>" if not any('"gpu"' in ln for ln in body)
            else "a <pci> that becomes a node (bridge, GPU with <gpu>, NIC with <nic>)")


def _table(text: str, name: str, macros: Dict[str, str]) -> Tuple[Optional[int], List[str]]:
    m = re.search(rf"struct kvDict {name}\[\] = \{{(.*?)\}};", text, re.S)
    if not m:
        return None, []
    line = text[:m.start()].count("\n") + 1
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1))
    values = []
    for entry in re.findall(r"\{\s*([^,{}]+?)\s*,", body):
        if entry == "NULL":
            continue
        if entry.startswith('"'):
            values.append(entry.strip('"'))
        elif entry in macros:
            values.append(macros[entry])
    return line, values


def facts(repo: str, tag: str) -> dict:
    files = {TOPO: git(repo, "show", f"{tag}:{TOPO}"), XML: git(repo, "show", f"{tag}:{XML}")}
    macros = dict(re.findall(r'#define\s+(PCI_\w+CLASS)\s+"([^"]+)"',
                             git(repo, "grep", "-h", "define PCI_", tag, "--", "src") or ""))
    reads = {}
    for element, attr, when, path, pattern, occ, table in READS:
        line = _line(files[path], pattern, occ)
        if line is None:
            continue
        if when is None:
            when = _link_when(files[path], line)
        reads[(element, attr, when)] = {"file": path, "line": line, "table": table}
    tables = {}
    for name in TABLES:
        line, values = _table(files[TOPO], name, macros)
        if line is not None:
            tables[name] = {"file": TOPO, "line": line, "values": values}
    return {"reads": reads, "tables": tables}


def merge(per_tag: List[Tuple[str, dict]]) -> dict:
    reqs: Dict[tuple, List[dict]] = {}
    for tag, f in per_tag:
        for key, where in f["reads"].items():
            ranges = reqs.setdefault(key, [])
            last = ranges[-1] if ranges else None
            if last and last["until"] == _prev(per_tag, tag) and last["table"] == where["table"]:
                last.update(until=tag, until_line=where["line"])
            else:
                ranges.append({"since": tag, "until": tag, "file": where["file"], "line": where["line"],
                               "until_line": where["line"], "table": where["table"]})
    tables: Dict[str, List[dict]] = {}
    for tag, f in per_tag:
        for name, t in f["tables"].items():
            ranges = tables.setdefault(name, [])
            last = ranges[-1] if ranges else None
            if last and last["values"] == t["values"] and last["until"] == _prev(per_tag, tag):
                last.update(until=tag, until_line=t["line"])
            else:
                ranges.append({"since": tag, "until": tag, "file": t["file"], "line": t["line"],
                               "until_line": t["line"], "values": t["values"]})
    out_reqs = []
    for (element, attr, when), ranges in reqs.items():
        for r in ranges:
            out_reqs.append({"element": element, "attribute": attr, "when": when, "table": r["table"],
                             "since": r["since"], "until": r["until"], "file": r["file"],
                             "line": r["line"], "until_line": r["until_line"]})
    return {"releases": [t for t, _ in per_tag], "requirements": out_reqs,
            "tables": {k: [{kk: vv for kk, vv in r.items()} for r in v] for k, v in sorted(tables.items())}}


def _prev(per_tag: List[Tuple[str, dict]], tag: str) -> Optional[str]:
    tags = [t for t, _ in per_tag]
    i = tags.index(tag)
    return tags[i - 1] if i else None


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", help="bare git repository of NVIDIA/nccl with its release tags")
    ap.add_argument("-o", "--output", default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    per_tag = [(tag, facts(args.repo, tag)) for tag in releases(args.repo)]
    doc = merge(per_tag)
    doc["source"] = "NVIDIA/nccl release tags; built by tools/build_nccl_topo_requirements.py"
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    with open(args.output, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"{args.output}: {len(doc['releases'])} releases, {len(doc['requirements'])} requirement ranges",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
