#!/usr/bin/env python3
"""Write src/rocetune/nccl/data/nccl_var_releases.json: the first and last NCCL release that reads
each variable of rocetune's catalog (and of its retired names).

    python3 tools/nccl_var_releases.py --repo PATH/TO/nccl            # rewrite the file
    python3 tools/nccl_var_releases.py --repo PATH/TO/nccl --check    # exit 1 when it is stale
    python3 tools/nccl_var_releases.py --repo PATH/TO/nccl --tree nccl-2.31.2   # a release past the tags

At every release tag v2.X.Y-Z of NVIDIA/nccl (and the dev branch, the next release) the names
NCCL's source under src/ reads are collected: `NCCL_PARAM(Name, "SUFFIX", ...)` (NCCL_SUFFIX),
`DEFINE_NCCL_PARAM(..., NCCL_X, ...)`, and every string literal "NCCL_X" (getenv/ncclGetEnv and
the path-level readers take the name as a literal). A variable's `since` is the first tag holding
it, `last` the last one (null while the newest tag still reads it); a name that comes and goes
lists its spans. The oldest tag scanned is v2.3.5-5: `since` equal to it means "2.3.5 or older".
`rocetune lint` reads the file to flag a variable the host's NCCL release does not read.

A release past the clone's tags is scanned from its source tree (`--tree DIR`, an unpacked release
tarball). A catalog name that no scanned release reads but that the catalog says a later release
added (`since`, `source`: tools/build_nccl_catalog.py NEWER) is kept under `read_elsewhere` with that
release and source; once a tree of that release is scanned, the scan decides, and a name it does not
find there is an error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "src" / "rocetune" / "nccl" / "data" / "nccl_var_releases.json"
CATALOG = REPO / "src" / "rocetune" / "nccl" / "data" / "nccl_vars.json"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nccl_log_forms import TREE, release, release_tags, with_trees  # noqa: E402

_PATTERN = (r'NCCL_PARAM\(\s*[A-Za-z0-9_]+\s*,\s*"[A-Z0-9_]+"|DEFINE_NCCL_PARAM\([^,]+,[^,]+,\s*NCCL_[A-Z0-9_]+'
            r'|"NCCL_[A-Z0-9_]+"')
_PARAM = re.compile(r'NCCL_PARAM\(\s*[A-Za-z0-9_]+\s*,\s*"([A-Z0-9_]+)"')
_DEFINE = re.compile(r"DEFINE_NCCL_PARAM\([^,]+,[^,]+,\s*(NCCL_[A-Z0-9_]+)")
_LITERAL = re.compile(r'"(NCCL_[A-Z0-9_]+)"')


def names_at(git_dir: str, tag: str) -> Set[str]:
    if tag.startswith(TREE):
        r = subprocess.run(["grep", "-rhoE", _PATTERN, "--", "src"], cwd=tag[len(TREE):], capture_output=True,
                           text=True)
    else:
        r = subprocess.run(["git", "-C", git_dir, "grep", "-h", "-o", "-E", _PATTERN, tag, "--", "src"],
                           capture_output=True, text=True)
    out: Set[str] = set()
    for hit in r.stdout.splitlines():
        m = _PARAM.match(hit)
        if m:
            out.add("NCCL_" + m.group(1))
            continue
        m = _DEFINE.match(hit) or _LITERAL.fullmatch(hit)
        if m:
            out.add(m.group(1))
    return out


def _version(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def build(git_dir: str, trees: Optional[List[str]] = None) -> dict:
    catalog = json.loads(CATALOG.read_text())
    wanted = sorted(set(catalog["variables"]) | set(catalog["retired"]))
    tags = with_trees(release_tags(git_dir), trees)
    seen = [names_at(git_dir, t) for t in tags]
    variables: Dict[str, dict] = {}
    for name in wanted:
        spans: List[List[Optional[str]]] = []
        start: Optional[int] = None
        for i, names in enumerate(seen + [set()]):
            if name in names and start is None:
                start = i
            elif name not in names and start is not None:
                last = None if i == len(tags) else release(tags[i - 1], git_dir)
                spans.append([release(tags[start], git_dir), last])
                start = None
        if spans:
            variables[name] = {"since": spans[0][0], "last": spans[-1][1]}
            if len(spans) > 1:
                variables[name]["spans"] = spans
    newest = release(tags[-1], git_dir)
    elsewhere: Dict[str, dict] = {}
    problems = []
    for name, info in sorted(catalog["variables"].items()):
        if "since" not in info:
            continue
        if name in variables:
            if variables[name]["since"] != info["since"]:
                problems.append(f"{name}: the catalog says {info['since']}, the scan {variables[name]['since']}")
        elif _version(info["since"]) <= _version(newest):
            problems.append(f"{name}: the catalog says {info['since']} reads it; no scanned release does")
        else:
            elsewhere[name] = {"since": info["since"], "last": None, "source": info["source"]}
    if problems:
        raise SystemExit("the catalog's newer names disagree with the scan:\n  " + "\n  ".join(problems))
    last = tags[-1] if not tags[-1].startswith(TREE) else f"v{newest} (tree)"
    return {"source": {"repo": "NVIDIA/nccl", "tags": {"first": tags[0], "last": last, "count": len(tags)},
                       "oldest": release(tags[0], git_dir), "newest": newest,
                       "how": "tools/nccl_var_releases.py"},
            "variables": variables, "read_elsewhere": elsewhere}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, help="a git clone of NVIDIA/nccl with its tags")
    ap.add_argument("--tree", action="append", metavar="DIR",
                    help="a release's source tree past the clone's tags (an unpacked release tarball); repeatable")
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args(argv)
    text = json.dumps(build(args.repo, args.tree), indent=1, sort_keys=True) + "\n"
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT.relative_to(REPO)} is stale: rerun without --check", file=sys.stderr)
            return 1
        print(f"{OUT.relative_to(REPO)} agrees with the tags")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
