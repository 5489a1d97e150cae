#!/usr/bin/env python3
"""Write the JSON Schema of the SONiC CONFIG_DB QoS tables that `rocetune qos render --switch sonic`
emits, from SONiC's own YANG models (copied unedited into tests/fixtures/switch/yang).

    python3 tools/sonic_yang_schema.py          # rewrite tests/fixtures/switch/sonic-configdb-qos.schema.json
    python3 tools/sonic_yang_schema.py --check  # exit 1 when the file is not what the YANG gives

A small reader covers the statements these modules use (container, list, key, leaf, type, typedef,
enumeration, pattern, length, range, union, leafref); every schema node carries a "$comment" naming
the YANG file and line of the constraint. CONFIG_DB holds every value as a string, so numeric
ranges become anchored patterns. Leafrefs cannot be said in JSON Schema: they are listed under
"x-leafrefs" for the caller to check across tables. `must` and `when` expressions are not carried.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
YANG_DIR = REPO / "tests" / "fixtures" / "switch" / "yang"
OUT = REPO / "tests" / "fixtures" / "switch" / "sonic-configdb-qos.schema.json"
COMMIT = "086b03bd70f9e211aaaf5f6aefe0790b508d2a94"
# The modules whose tables the SONiC renderer writes, and their table lists (QUEUE's VOQ_QUEUE_LIST
# applies only to VOQ chassis, a switch type rocetune does not render for).
TABLES = {
    "sonic-dscp-tc-map": ("DSCP_TO_TC_MAP", "DSCP_TO_TC_MAP_LIST"),
    "sonic-dot1p-tc-map": ("DOT1P_TO_TC_MAP", "DOT1P_TO_TC_MAP_LIST"),
    "sonic-tc-queue-map": ("TC_TO_QUEUE_MAP", "TC_TO_QUEUE_MAP_LIST"),
    "sonic-tc-priority-group-map": ("TC_TO_PRIORITY_GROUP_MAP", "TC_TO_PRIORITY_GROUP_MAP_LIST"),
    "sonic-pfc-priority-queue-map": ("MAP_PFC_PRIORITY_TO_QUEUE", "MAP_PFC_PRIORITY_TO_QUEUE_LIST"),
    "sonic-port-qos-map": ("PORT_QOS_MAP", "PORT_QOS_MAP_LIST"),
    "sonic-queue": ("QUEUE", "QUEUE_LIST"),
    "sonic-scheduler": ("SCHEDULER", "SCHEDULER_LIST"),
    "sonic-wred-profile": ("WRED_PROFILE", "WRED_PROFILE_LIST"),
    "sonic-pfc-priority-priority-group-map": ("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
                                              "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP_LIST"),
    "sonic-buffer-pg": ("BUFFER_PG", "BUFFER_PG_LIST"),
    "sonic-buffer-queue": ("BUFFER_QUEUE", "BUFFER_QUEUE_LIST"),
    "sonic-pfcwd": ("PFC_WD", "PFC_WD_LIST"),
}
TYPES_FILE = "sonic-types.yang.j2"
INT_BOUNDS = {"uint8": (0, 255), "uint16": (0, 65535), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
              "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1)}
_ENUMERATE_UP_TO = 1024  # ranges this wide or narrower become one alternative per number


class YangError(ValueError):
    pass


@dataclass
class Stmt:
    keyword: str
    arg: Optional[str]
    file: str
    line: int
    children: List["Stmt"] = field(default_factory=list)

    def all(self, keyword: str) -> List["Stmt"]:
        return [c for c in self.children if c.keyword == keyword]

    def one(self, keyword: str) -> Optional["Stmt"]:
        found = self.all(keyword)
        return found[0] if found else None

    def child(self, keyword: str, arg: str) -> "Stmt":
        for c in self.children:
            if c.keyword == keyword and c.arg == arg:
                return c
        raise YangError(f"{self.file}:{self.line}: no {keyword} {arg} in {self.keyword} {self.arg}")

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


_TOKEN = re.compile(r"""
    (?P<space>\s+) | (?P<comment>//[^\n]*|/\*.*?\*/) | (?P<jinja>\{%.*?%\}|\{\#.*?\#\})
  | (?P<dq>"(?:[^"\\]|\\.)*") | (?P<sq>'[^']*') | (?P<punct>[{};+])
  | (?P<word>[^\s{};"']+)""", re.S | re.X)


def _tokens(text: str, name: str):
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise YangError(f"{name}:{line}: cannot read {text[pos:pos + 20]!r}")
        kind, value = m.lastgroup, m.group()
        if kind == "dq":
            yield "str", re.sub(r"\\(.)", r"\1", value[1:-1]), line
        elif kind == "sq":
            yield "str", value[1:-1], line
        elif kind in ("punct", "word"):
            yield kind, value, line
        line += value.count("\n")
        pos = m.end()


def parse(text: str, name: str) -> Stmt:
    """One YANG module (jinja tags, as in SONiC's templates, are skipped) as a statement tree."""
    toks = list(_tokens(text, name))
    root = Stmt("(file)", None, name, 0)
    stack, i = [root], 0
    while i < len(toks):
        kind, value, line = toks[i]
        if value == "}" and kind == "punct":
            stack.pop()
            if not stack:
                raise YangError(f"{name}:{line}: unbalanced '}}'")
            i += 1
            continue
        if kind != "word":
            raise YangError(f"{name}:{line}: expected a keyword, found {value!r}")
        arg, i = None, i + 1
        while i < len(toks) and not (toks[i][0] == "punct" and toks[i][1] in "{;"):
            k, v, _ = toks[i]
            if k == "punct" and v == "+":
                i += 1
                continue
            arg = v if arg is None else arg + v
            i += 1
        if i == len(toks):
            raise YangError(f"{name}:{line}: statement {value} does not end")
        stmt = Stmt(value, arg, name, line)
        stack[-1].children.append(stmt)
        if toks[i][1] == "{":
            stack.append(stmt)
        i += 1
    if len(stack) != 1:
        raise YangError(f"{name}: unbalanced '{{'")
    return root.children[0]


def load(yang_dir: Path = YANG_DIR) -> Dict[str, Stmt]:
    modules = {}
    for path in sorted(yang_dir.iterdir()):
        if path.name.endswith((".yang", ".yang.j2")):
            mod = parse(path.read_text(encoding="utf-8"), path.name)
            modules[mod.arg] = mod
    return modules


def _range_regex(lo: int, hi: int, exact: bool = False) -> str:
    """An alternation matching the decimal numbers lo..hi: each number when few, else (exact) one
    branch per run of equal digit counts, else (a bare integer type's bounds) by digit count."""
    if hi - lo <= _ENUMERATE_UP_TO:
        return "|".join(str(n) for n in range(hi, lo - 1, -1))
    if lo < 0:
        raise YangError(f"signed range {lo}..{hi} is not supported")
    if exact:
        parts = []
        while lo <= hi:
            top = min(hi, 10 ** len(str(lo)) - 1)  # the largest number with lo's digit count
            parts.append(_same_length(str(lo), str(top)))
            lo = top + 1
        return "|".join(parts)
    digits = len(str(hi))  # the digit count bounds the value; the exact maximum is not expressed
    return f"0|[1-9][0-9]{{0,{digits - 1}}}"


def _same_length(lo: str, hi: str) -> str:
    """A regex for lo..hi, two numbers of one digit count."""
    if lo == hi:
        return lo
    if len(lo) == 1:
        return f"[{lo}-{hi}]"
    if lo[0] == hi[0]:
        return f"{lo[0]}(?:{_same_length(lo[1:], hi[1:])})"
    rest = len(lo) - 1
    parts = [f"{lo[0]}(?:{_same_length(lo[1:], '9' * rest)})"]
    if int(hi[0]) - int(lo[0]) > 1:
        parts.append(f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}][0-9]{{{rest}}}")
    parts.append(f"{hi[0]}(?:{_same_length('0' * rest, hi[1:])})")
    return "|".join(parts)


def _parse_range(text: str, bounds: Tuple[int, int], where: str) -> List[Tuple[int, int]]:
    parts = []
    for part in text.split("|"):
        ends = [e.strip() for e in part.split("..")]
        vals = [bounds[0] if e == "min" else bounds[1] if e == "max" else int(e) for e in ends]
        if len(vals) == 1:
            vals.append(vals[0])
        if len(vals) != 2:
            raise YangError(f"{where}: range {text!r}")
        parts.append((vals[0], vals[1]))
    return parts


class Builder:
    def __init__(self, modules: Dict[str, Stmt]):
        self.modules = modules
        types = modules.get("sonic-types")
        self.typedefs = {t.arg: t for t in types.all("typedef")} if types else {}
        self.leafrefs: List[dict] = []

    def type_schema(self, type_stmt: Stmt, table: str, leaf: str) -> dict:
        """A leaf's type as a schema over CONFIG_DB's string value."""
        name = type_stmt.arg.split(":")[-1]
        where = type_stmt.where
        if ":" in type_stmt.arg or name in self.typedefs and name not in INT_BOUNDS:
            typedef = self.typedefs.get(name)
            if typedef is None:
                raise YangError(f"{where}: typedef {type_stmt.arg} not found in the copied modules")
            inner = self.type_schema(typedef.one("type"), table, leaf)
            inner["$comment"] = f"{where} type {type_stmt.arg} = {typedef.where} typedef {name}: {inner['$comment']}"
            return inner
        if name == "enumeration":
            return {"enum": [e.arg for e in type_stmt.all("enum")], "$comment": f"{where} enumeration"}
        if name == "boolean":
            return {"enum": ["true", "false"], "$comment": f"{where} boolean"}
        if name in INT_BOUNDS:
            rng = type_stmt.one("range")
            bounds = INT_BOUNDS[name]
            parts = _parse_range(rng.arg, bounds, rng.where) if rng else [bounds]
            alts = "|".join(_range_regex(lo, hi, exact=rng is not None) for lo, hi in parts)
            said = f"{rng.where} range {rng.arg}" if rng else f"{where} {name}"
            if not rng and bounds[1] - bounds[0] > _ENUMERATE_UP_TO:
                said += f" (as at most {len(str(bounds[1]))} digits)"
            return {"type": "string", "pattern": f"^(?:{alts})$", "$comment": f"{said}"}
        if name == "string":
            out: dict = {"type": "string"}
            notes = [f"{where} string"]
            pats = type_stmt.all("pattern")
            if len(pats) == 1:  # YANG patterns match the whole value
                out["pattern"] = f"^(?:{pats[0].arg})$"
                notes = [f"{pats[0].where} pattern {pats[0].arg}"]
            elif pats:
                out["allOf"] = [{"pattern": f"^(?:{p.arg})$", "$comment": f"{p.where} pattern"} for p in pats]
            length = type_stmt.one("length")
            if length:
                (lo, hi), = _parse_range(length.arg, (0, 2**64 - 1), length.where)
                out["minLength"], out["maxLength"] = lo, hi
                notes.append(f"{length.where} length {length.arg}")
            out["$comment"] = "; ".join(notes)
            return out
        if name == "leafref":
            path = type_stmt.one("path")
            target = path.arg.strip("/").split("/")[1].split(":")[-1]
            self.leafrefs.append({"table": table, "field": leaf, "target": target, "$comment": f"{path.where} leafref {path.arg}"})
            return {"type": "string", "$comment": f"{path.where} leafref to {target} (checked across tables, see x-leafrefs)"}
        if name == "union":
            return {"anyOf": [self.type_schema(t, table, leaf) for t in type_stmt.all("type")], "$comment": f"{where} union"}
        raise YangError(f"{where}: type {type_stmt.arg} is not one this reader knows")

    def leaf_schema(self, leaf: Stmt, table: str, name: Optional[str] = None) -> dict:
        schema = self.type_schema(leaf.one("type"), table, name or leaf.arg)
        schema["$comment"] = f"{leaf.where} leaf {leaf.arg}; {schema['$comment']}"
        return schema

    def _key_schema(self, lst: Stmt, table: str) -> dict:
        keys = lst.one("key").arg.split()
        leaves = [lst.child("leaf", k) for k in keys]
        if len(keys) == 1:
            return self.leaf_schema(leaves[0], table, name="(key)")
        # CONFIG_DB joins the key leaves with '|'; a string leaf keeps its YANG pattern, any other
        # part (a leafref: the PORT table a QUEUE key names is the switch's) is text without '|'
        parts = []
        for leaf in leaves:
            t = leaf.one("type")
            pats = t.all("pattern") if t.arg == "string" else []
            parts.append(f"(?:{pats[0].arg})" if len(pats) == 1 else "[^|]+")
        return {"type": "string", "pattern": "^" + r"\|".join(parts) + "$",
                "$comment": f"{lst.one('key').where} key {' '.join(keys)} joined with '|' ("
                            + "; ".join(f"{l.where} leaf {l.arg}" for l in leaves) + ")"}

    def table(self, module: str) -> dict:
        table, list_name = TABLES[module]
        mod = self.modules[module]
        lst = mod.child("container", module).child("container", table).child("list", list_name)
        keys = lst.one("key").arg.split()
        inner = lst.all("list")
        if inner:  # a named map: NAME -> {key: value}
            (entry,) = inner
            (key_name,) = entry.one("key").arg.split()
            values = [l for l in entry.all("leaf") if l.arg != key_name]
            (value,) = values
            entries = {"type": "object", "propertyNames": self.leaf_schema(entry.child("leaf", key_name), table, "(key)"),
                       "additionalProperties": self.leaf_schema(value, table), "$comment": f"{entry.where} list {entry.arg}"}
        else:
            props = {l.arg: self.leaf_schema(l, table) for l in lst.all("leaf") if l.arg not in keys}
            entries = {"type": "object", "properties": props, "additionalProperties": False,
                       "$comment": f"{lst.where} list {lst.arg}"}
        return {"type": "object", "propertyNames": self._key_schema(lst, table), "additionalProperties": entries,
                "$comment": f"{mod.child('container', module).child('container', table).where} container {table}"}

    def schema(self) -> dict:
        tables = {TABLES[m][0]: self.table(m) for m in TABLES}
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "SONiC CONFIG_DB QoS tables rendered by rocetune",
            "$comment": f"Generated by tools/sonic_yang_schema.py from SONiC's YANG models, sonic-buildimage {COMMIT} "
                        "(tests/fixtures/switch/yang). Edit the tool, not this file.",
            "type": "object",
            "properties": tables,
            "x-leafrefs": self.leafrefs,
        }


def build(yang_dir: Path = YANG_DIR) -> dict:
    return Builder(load(yang_dir)).schema()


def text(yang_dir: Path = YANG_DIR) -> str:
    return json.dumps(build(yang_dir), indent=2, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the schema file is stale")
    args = ap.parse_args(argv)
    try:
        want = text()
    except (OSError, YangError) as exc:
        print(f"sonic_yang_schema: {exc}", file=sys.stderr)
        return 2
    if args.check:
        have = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if have != want:
            print(f"{OUT.relative_to(REPO)} is stale: run tools/sonic_yang_schema.py", file=sys.stderr)
            return 1
        return 0
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".schema-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(want)
    os.replace(tmp, OUT)
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
