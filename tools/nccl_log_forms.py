#!/usr/bin/env python3
"""Check the table of NCCL log line forms (tests/fixtures/nccl-logs/forms.json) against NCCL's
source at every release tag.

    python3 tools/nccl_log_forms.py --repo PATH/TO/nccl            # exit 1 when a span is wrong
    python3 tools/nccl_log_forms.py --repo PATH/TO/nccl --write    # rewrite first/last and sources
    python3 tools/nccl_log_forms.py --repo PATH/TO/nccl --tree nccl-2.31.2   # a release past the tags

Each form names a `marker`: a fixed string of NCCL's source (a format string or the code printing
it) found under `where` (a pathspec) in exactly the releases that print the form. For every tag
v2.X.Y-Z (and the `dev` branch, NCCL's next release) the marker is looked up with `git grep -F`;
the first and last tags holding it are the form's releases, and the file:line at each of them its
source. A form whose marker comes and goes (two spans) is reported: its marker is not specific.
The table's `line` and `args` build, per form, the text that release prints: tests/unit/nccl/
test_log_forms.py reads it with the log reader. Nothing here copies NCCL's code: the table keeps
the format strings (the text NCCL prints) and where they are.

A release past the clone's tags is given as a source tree (`--tree DIR`, read with grep, its release
from makefiles/version.mk). A form whose `read_at` names such a release's tree, read elsewhere, is
reported as not checked until that tree is given.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "tests" / "fixtures" / "nccl-logs" / "forms.json"
_TAG = re.compile(r"^v2\.(\d+)\.(\d+)-(\d+)$")
DEV_BRANCH = "dev"


TREE = "tree:"  # a release given as a source directory (an unpacked release tarball), not a tag


def with_trees(tags: List[str], trees: Optional[List[str]]) -> List[str]:
    """The tags, then each `--tree DIR` as one more release (in the order given, newest last)."""
    return tags + [TREE + str(Path(t).resolve()) for t in trees or []]


def release_tags(git_dir: str) -> List[str]:
    out = subprocess.run(["git", "-C", git_dir, "tag"], capture_output=True, text=True, check=True).stdout.split()
    tags = sorted((t for t in out if _TAG.match(t)), key=lambda t: tuple(int(x) for x in _TAG.match(t).groups()))
    has_dev = subprocess.run(["git", "-C", git_dir, "rev-parse", "--verify", "-q", DEV_BRANCH],
                             capture_output=True).returncode == 0
    return tags + ([DEV_BRANCH] if has_dev else [])


def where_at(git_dir: str, tag: str, marker: str, pathspec: str) -> Optional[str]:
    """`file:line` of the marker's first occurrence at `tag`, or None."""
    if tag.startswith(TREE):
        root = Path(tag[len(TREE):])
        r = subprocess.run(["grep", "-rnF", "-e", marker, "--", pathspec], cwd=root, capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout:
            return None
        path, line = sorted(r.stdout.splitlines())[0].split(":", 2)[:2]
        return f"{path}:{line}"
    r = subprocess.run(["git", "-C", git_dir, "grep", "-n", "-F", "-e", marker, tag, "--", pathspec],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        return None
    _tag, path, line = r.stdout.splitlines()[0].split(":", 3)[:3]
    return f"{path}:{line}"


def release(tag: str, git_dir: str) -> str:
    """`v2.30.7-1` -> `2.30.7`; the dev branch -> its makefiles/version.mk release."""
    m = _TAG.match(tag)
    if m:
        return f"2.{m.group(1)}.{m.group(2)}"
    if tag.startswith(TREE):
        mk_path = Path(tag[len(TREE):]) / "makefiles" / "version.mk"
        mk = mk_path.read_text() if mk_path.is_file() else ""
    else:
        mk = subprocess.run(["git", "-C", git_dir, "show", f"{tag}:makefiles/version.mk"], capture_output=True,
                            text=True).stdout
    parts = dict(re.findall(r"^NCCL_(MAJOR|MINOR|PATCH)\s*:=\s*(\d+)", mk, re.M))
    return f"{parts.get('MAJOR', '2')}.{parts.get('MINOR', '?')}.{parts.get('PATCH', '?')}"


def spans(git_dir: str, tags: List[str], marker: str, pathspec: str) -> List[Tuple[int, int, List[str]]]:
    found = [where_at(git_dir, t, marker, pathspec) for t in tags]
    out, start = [], None
    for i, w in enumerate(found + [None]):
        if w is not None and start is None:
            start = i
        elif w is None and start is not None:
            out.append((start, i - 1, found[start:i]))
            start = None
    return out


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def check(git_dir: str, write: bool, trees: Optional[List[str]] = None) -> int:
    table = json.loads(TABLE.read_text())
    tags = with_trees(release_tags(git_dir), trees)
    newest = _version(release(tags[-1], git_dir))
    problems = 0
    skipped = []
    for form in table["forms"]:
        if form.get("read_at") and _version(form["first"]) > newest:
            # a form first printed by a release past the newest tree scanned: its source was read at that
            # release's tree elsewhere (`read_at`); give that tree with --tree to check it here
            skipped.append(form["id"])
            continue
        got = spans(git_dir, tags, form["marker"], form["where"])
        if len(got) != 1:
            print(f"{form['id']}: marker found in {len(got)} spans of releases: not specific", file=sys.stderr)
            problems += 1
            continue
        first, last, wheres = got[0]
        computed = {"first": release(tags[first], git_dir), "last": release(tags[last], git_dir),
                    "first_source": f"{_label(tags[first], git_dir)} {wheres[0]}",
                    "last_source": f"{_label(tags[last], git_dir)} {wheres[-1]}",
                    "first_scanned": first == 0}
        stale = {k: (form.get(k), v) for k, v in computed.items() if form.get(k) != v}
        if stale and not write:
            print(f"{form['id']}: " + "; ".join(f"{k} {a!r} != {b!r}" for k, (a, b) in stale.items()),
                  file=sys.stderr)
            problems += 1
        form.update(computed)
    table["tags"] = {"first": _label(tags[0], git_dir), "last": _label(tags[-1], git_dir), "count": len(tags)}
    if skipped:
        print(f"not checked (first printed by a release past {release(tags[-1], git_dir)}; give its tree with "
              f"--tree): {', '.join(skipped)}", file=sys.stderr)
    if write:
        TABLE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
        print(f"wrote {TABLE.relative_to(REPO)} ({len(table['forms'])} forms, {len(tags)} tags)")
        return 0
    if not problems:
        print(f"{len(table['forms']) - len(skipped)} forms agree with {len(tags)} releases "
              f"({_label(tags[0], git_dir)} .. {_label(tags[-1], git_dir)})")
    return 1 if problems else 0


def _label(tag: str, git_dir: str) -> str:
    """How a release is named in the table: its tag, or `v<release> (tree)` for a --tree directory."""
    return f"v{release(tag, git_dir)} (tree)" if tag.startswith(TREE) else tag


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, help="a git clone of NVIDIA/nccl with its tags")
    ap.add_argument("--tree", action="append", metavar="DIR",
                    help="a release's source tree past the clone's tags (an unpacked release tarball, "
                         "with makefiles/version.mk); repeatable, oldest first")
    ap.add_argument("--write", action="store_true", help="rewrite each form's first/last release and sources")
    args = ap.parse_args(argv)
    return check(args.repo, args.write, args.tree)


if __name__ == "__main__":
    sys.exit(main())
