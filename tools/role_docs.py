#!/usr/bin/env python3
"""Write each role's variable table into its README from meta/argument_specs.yml.

    python3 tools/role_docs.py          # rewrite the tables
    python3 tools/role_docs.py --check  # exit 1 when a README's table is not what the specs give

The table sits between `<!-- variables:begin -->` and `<!-- variables:end -->`; the defaults come
from the specs (which a test keeps equal to defaults/main.yml), so the README cannot drift.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- variables:begin -->", "<!-- variables:end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
_MARKUP = re.compile(r"\b[CIB]\(([^)]*)\)")


def _cell(text: str) -> str:
    text = _MARKUP.sub(lambda m: f"`{m.group(1)}`", text)
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _default(value) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    return f"`{json.dumps(value)}`"


def table(role: Path) -> str:
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"].get("options") or {}
    rows = ["| Variable | Default | Description |", "|---|---|---|"]
    for name in sorted(options):
        opt = options[name]
        desc = opt.get("description") or []
        desc = " ".join(desc) if isinstance(desc, list) else str(desc)
        if opt.get("choices"):
            desc += " One of: " + ", ".join(f"`{c}`" for c in opt["choices"]) + "."
        rows.append(f"| `{name}` | {_default(opt.get('default'))} | {_cell(desc)} |")
    return "\n".join([BEGIN, *rows, END])


def render(role: Path) -> str:
    """The README with its table regenerated; unchanged when it has no table block."""
    readme = (role / "README.md").read_text()
    return _BLOCK.sub(lambda _m: table(role), readme)


def missing_block(role: Path) -> bool:
    return not _BLOCK.search((role / "README.md").read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="only check; exit 1 when a table is stale")
    args = p.parse_args()
    stale = []
    roles = sorted(d for d in (REPO / "roles").iterdir() if (d / "meta" / "argument_specs.yml").is_file())
    lacking = [str(r / "README.md") for r in roles if missing_block(r)]
    if lacking:
        print(f"no {BEGIN} ... {END} block in: " + ", ".join(lacking), file=sys.stderr)
    for role in roles:
        new = render(role)
        if new != (role / "README.md").read_text():
            stale.append(str(role / "README.md"))
            if not args.check:
                (role / "README.md").write_text(new)
    if args.check and (stale or lacking):
        print("stale variable tables (run python3 tools/role_docs.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
