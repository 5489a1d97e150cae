#!/usr/bin/env python3
"""Write the command-line reference from the parser itself: the generated part of docs/cli.md,
the man page docs/man/rocetune.1, and the bash and zsh completions under completions/ (shtab).

    python3 tools/cli_docs.py          # rewrite them
    python3 tools/cli_docs.py --check  # exit 1 when one is not what the parser gives

Every verb, action and option the parser has is in each, so none can be left out by hand
(the wheel installs the man page and completions: pyproject.toml's data-files).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from rocetune.cli import main as cli  # noqa: E402

CLI_MD = REPO / "docs" / "cli.md"
MAN = REPO / "docs" / "man" / "rocetune.1"
COMPLETIONS = {"bash": REPO / "completions" / "rocetune", "zsh": REPO / "completions" / "_rocetune"}
BEGIN = "<!-- BEGIN generated reference: tools/cli_docs.py writes this part from the parser -->"
END = "<!-- END generated reference -->"


def parser() -> argparse.ArgumentParser:
    os.environ["COLUMNS"] = "100"  # argparse's usage lines wrap at the terminal's width
    os.environ.pop("ROCETUNE_ROOT", None)  # --root's default is printed
    return cli.build_parser()


def commands(p: argparse.ArgumentParser, words: Tuple[str, ...] = ("rocetune",)
             ) -> Iterator[Tuple[Tuple[str, ...], argparse.ArgumentParser]]:
    """(words, parser) of the top level, each verb and each verb's action, in the parser's order."""
    yield words, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, words + (name,))


def options(p: argparse.ArgumentParser, top: bool) -> List[Tuple[str, str, str]]:
    """(flags, argument, help) of each option and positional the parser documents."""
    globals_ = [g for g in p._action_groups if g.title == "global options"]
    skip = set() if top else {a for g in globals_ for a in g._group_actions}
    out = []
    for a in p._actions:
        if a.help == argparse.SUPPRESS or a in skip or isinstance(a, (argparse._HelpAction,
                                                                       argparse._SubParsersAction)):
            continue
        flags = ", ".join(a.option_strings) or (a.metavar or a.dest)
        if a.option_strings and a.nargs != 0:
            arg = a.metavar if isinstance(a.metavar, str) else (
                "{" + ",".join(map(str, a.choices)) + "}" if a.choices else a.dest.upper())
        else:
            arg = ""
        text = p._get_formatter()._expand_help(a) if a.help else ""
        out.append((flags, arg, " ".join(text.split())))
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference_md(p: argparse.ArgumentParser) -> str:
    lines = [BEGIN, "", "## Reference", "",
             "Every verb, action and option, as `rocetune VERB --help` prints them.", ""]
    for words, sub in commands(p):
        top = len(words) == 1
        lines += [f"### {' '.join(words)}", ""]
        if sub.description:
            lines += [" ".join(sub.description.split()), ""]
        lines += ["```", sub.format_usage().strip(), "```", ""]
        rows = options(sub, top)
        if rows:
            lines += ["| option | argument | meaning |", "|---|---|---|"]
            lines += [f"| `{_md_cell(f)}` | {'`' + _md_cell(a) + '`' if a else ''} | {_md_cell(h)} |"
                      for f, a, h in rows]
            lines.append("")
        if sub.epilog:
            lines += ["```", sub.epilog.rstrip(), "```", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_page(p: argparse.ArgumentParser) -> str:
    out = ['.TH ROCETUNE 1 "" "rocetune" "User Commands"', ".SH NAME",
           "rocetune \\- " + _roff(" ".join((p.description or "").split())),
           ".SH SYNOPSIS", ".B rocetune", "[global options] VERB [verb options]"]
    for words, sub in commands(p):
        top = len(words) == 1
        out.append(".SH " + ("GLOBAL OPTIONS" if top else _roff(" ".join(words[1:]).upper())))
        if not top:
            out += [".nf", _roff(sub.format_usage().strip()), ".fi"]
            if sub.description:
                out += [".PP", _roff(" ".join(sub.description.split()))]
        for flags, arg, text in options(sub, top):
            out += [".TP", f".B {_roff(flags)}" + (f" {_roff(arg)}" if arg else ""), _roff(text)]
        if sub.epilog:
            out += [".PP", ".nf", _roff(sub.epilog.rstrip()), ".fi"]
    out += [".SH SEE ALSO", "docs/cli.md in the rocetune source tree, which also describes the JSON envelope."]
    return "\n".join(out) + "\n"


def completion(p: argparse.ArgumentParser, shell: str) -> str:
    import shtab

    return shtab.complete(p, shell=shell).rstrip("\n") + "\n"  # one final newline, as pre-commit keeps files


def wanted() -> Dict[Path, str]:
    p = parser()
    text = CLI_MD.read_text()
    if BEGIN in text:
        head = text[:text.index(BEGIN)]
        tail = text[text.index(END) + len(END):].lstrip("\n") if END in text else ""
    else:
        head, tail = text.rstrip("\n") + "\n\n", ""
    out = {CLI_MD: head + reference_md(p) + (("\n" + tail) if tail else ""), MAN: man_page(p)}
    for shell, path in COMPLETIONS.items():
        out[path] = completion(p, shell)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a file is not what the parser gives")
    args = ap.parse_args()
    stale = []
    for path, text in wanted().items():
        old = path.read_text() if path.exists() else None
        if old != text:
            stale.append(str(path.relative_to(REPO)))
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if args.check and stale:
        print("not what the parser gives (run python3 tools/cli_docs.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
