"""Entry point: parse, run one verb, print its Result once, exit with its code."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from typing import List, NoReturn, Optional, Sequence

from .. import __version__
from ..errors import ExitCode, RocetuneError
from ..text import printable, terminal_text
from . import verbs
from .result import Result, error_result


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, with the width found without importing shutil (and the archive
    modules it pulls in): argparse builds a formatter for every option it registers."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: Optional[int] = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width if width is not None else _terminal_columns() - 2)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:  # an epilog laid out by verb_epilog: kept as written
            return "".join(indent + line if line else line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


# What every verb may exit with, beside the codes its module's EXIT_CODES names (docs/cli.md).
COMMON_EXIT_CODES = {
    2: "bad command line",
    3: "bad input (root, features, config, plan, file to read)",
    4: "the output cannot be written",
    70: "a bug: rerun with --debug and report it",
}


def verb_epilog(mod) -> str:
    """The end of a verb's --help: one example and its exit codes."""
    codes = {**COMMON_EXIT_CODES, **mod.EXIT_CODES}
    lines = ["example:", f"  {mod.EXAMPLE}", "", "exit codes:"]
    lines += [f"  {code:>2}  {text}" for code, text in sorted(codes.items())]
    return "\n".join(lines) + "\n"


def _terminal_columns() -> int:
    """What shutil.get_terminal_size().columns says: $COLUMNS, else the terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    """Every parser and subparser of the CLI: long options are never abbreviated (`doctor --sav`
    is an error, not --save-baseline), and a mistyped option, verb or action gets the closest
    one in the error."""

    # The verb the command line names, set on a whole parser built after a one-verb parser
    # refused it: a suggestion comes from that verb's options first.
    prefer_verb: Optional[str] = None
    prefer_action: Optional[str] = None  # and the verb's action (qos check, fleet report ...)

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse would print usage and exit 2 itself
        hint = f"see '{self._help_prog()} --help'"
        close = self._suggestion(message)
        if close:
            message = f"{message} (did you mean {close}?)"
        raise RocetuneError(message, hint=hint, code=ExitCode.USAGE)

    def _suggestion(self, message: str) -> Optional[str]:
        import re

        from ..text import suggest

        m = re.search(r"unrecognized arguments: (\S+)", message)
        if m and m.group(1).startswith("-"):
            word = m.group(1).split("=", 1)[0]
            return suggest(word, self._options_for_suggestion())
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            return suggest(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
        return None

    def _help_prog(self) -> str:
        """The command whose --help the user wants: the verb (and action) the command line
        names when the whole parser reports the error (argparse reports a verb's unknown
        options from the top)."""
        if self.prog == "rocetune" and self.prefer_verb:
            return " ".join(w for w in ("rocetune", self.prefer_verb, self.prefer_action) if w)
        return self.prog

    def _options_for_suggestion(self) -> List[str]:
        verbs = _sub_parsers(self)
        preferred = [verbs[self.prefer_verb]] if self.prefer_verb in verbs else list(verbs.values())
        options = list(self._option_string_actions)
        for p in preferred:
            options += list(p._option_string_actions)
            action = _sub_parsers(p).get(self.prefer_action or "")
            if action is not None:
                options += list(action._option_string_actions)
        return list(dict.fromkeys(options))


def _sub_parsers(parser: argparse.ArgumentParser) -> dict:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: p for a in subs for name, p in a.choices.items()}


def action_in(argv: Sequence[str], verb: str, parser: argparse.ArgumentParser) -> Optional[str]:
    """The verb's action the command line names (`qos check` -> check), if the verb has actions."""
    verb_parser = _sub_parsers(parser).get(verb)
    actions = _sub_parsers(verb_parser) if verb_parser is not None else {}
    if not actions:
        return None
    words = list(argv)
    after = words[words.index(verb) + 1:] if verb in words else []
    return next((w for w in after if w in actions), None)


def _verb_modules(names: Sequence[str] = verbs.NAMES) -> List:
    mods = [importlib.import_module(f"{verbs.__name__}.{name}") for name in names]
    return sorted(mods, key=lambda m: (m.ORDER, m.NAME))


# Global options that take a value: the word after them is not the verb (never abbreviated).
_VALUED = ("--root",)


def verb_in(argv: Sequence[str]) -> Optional[str]:
    """The verb argv names, when it is one of ours; None otherwise (none, unknown, or after --)."""
    return _verb_word(argv)


def _verb_word(argv: Sequence[str]) -> Optional[str]:
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in _VALUED:
            skip = True
        elif a == "--":
            return None
        elif not a.startswith("-"):
            return a if a in verbs.NAMES else None
    return None


def _unknown_leading_option(argv: Sequence[str], parser: argparse.ArgumentParser) -> None:
    """An option before the verb that the top parser does not know (`--ro DIR probe`): said as
    such, with the one meant; argparse would take the next word for the verb and say that."""
    known = set(parser._option_string_actions)
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--" or not a.startswith("-"):
            return
        skip = a in _VALUED
        name = a.split("=", 1)[0]
        if name.startswith("--") and name not in known:
            parser.error(f"unrecognized arguments: {name}")


def _add_common(parser: argparse.ArgumentParser, top: bool) -> None:
    # Subcommands accept the global options too; SUPPRESS keeps them from resetting the top values.
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    g = parser.add_argument_group("global options")
    g.add_argument("--root", metavar="DIR", default=d(os.environ.get("ROCETUNE_ROOT", "/")),
                   help="host root to read (default: / or $ROCETUNE_ROOT)")
    g.add_argument("--json", action="store_true", default=d(False),
                   help="print the result as one JSON object (the envelope in docs/cli.md)")
    g.add_argument("-v", "--verbose", action="count", default=d(0), help="more detail")
    g.add_argument("-q", "--quiet", action="store_true", default=d(False), help="no warnings")
    g.add_argument("--debug", action="store_true", default=d(False),
                   help="show tracebacks of unexpected errors")


def build_parser(verb: Optional[str] = None) -> _Parser:
    """The whole parser; with `verb`, only that verb's subparser (each verb module is imported
    and its options registered only when it runs: what `rocetune probe` starts with)."""
    parser = _Parser(prog="rocetune", description="Probe GPU/RDMA hosts and emit tuned NCCL/UCX env.")
    parser.add_argument("--version", action="version", version=f"rocetune {__version__}")
    _add_common(parser, top=True)
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for mod in _verb_modules((verb,) if verb else verbs.NAMES):
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP, epilog=verb_epilog(mod))
        _add_common(p, top=False)
        mod.register(p)
        p.set_defaults(_run=mod.run)
    return parser


def _emit(result: Result, as_json: bool, quiet: bool) -> None:
    result.warnings = list(dict.fromkeys(result.warnings))
    if as_json:
        from ..render.json_text import envelope_text

        sys.stdout.write(envelope_text(result.envelope()))
        sys.stdout.flush()
        return
    if result.raw is not None:
        # An env file's bytes, for a file or a pipe exactly; on a terminal, shown like any text.
        sys.stdout.write(terminal_text(result.raw) if _is_terminal(sys.stdout) else result.raw)
    elif result.human:
        # Every renderer's text leaves here: whatever a node or a file put in it is escaped.
        human = terminal_text(result.human)
        sys.stdout.write(human if human.endswith("\n") else human + "\n")
    sys.stdout.flush()  # a full disk says so here, where it can be reported, not at exit
    if not quiet:
        for w in result.warnings:
            sys.stderr.write(f"rocetune: warning: {printable(w)}\n")
    for e in result.errors:
        sys.stderr.write(f"rocetune: error: {printable(e['message'])}\n")
        if e.get("hint"):
            sys.stderr.write(f"  hint: {printable(e['hint'])}\n")


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _wants(argv: Sequence[str], flag: str) -> bool:
    return flag in argv


def _old_output_option(argv: Sequence[str]) -> None:
    for a in argv:
        if a == "--" :
            return
        if a == "--output" or a.startswith("--output="):
            raise RocetuneError("--output is gone: --json prints the JSON result, -o FILE writes a file",
                                hint="e.g. rocetune probe --json", code=ExitCode.USAGE)


def main(argv: Optional[Sequence[str]] = None) -> int:
    # One command, then exit: the cycle collector only walks the growing heap (70 passes, 35-100
    # ms on a 522-device host's 280k-cell matrix); reference counting frees what a run drops.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if collecting:
            gc.enable()


def _main(argv: Optional[Sequence[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # what argparse prints, without building any verb's parser
        sys.stdout.write(f"rocetune {__version__}\n")
        return 0
    debug = _wants(argv, "--debug")
    as_json = _wants(argv, "--json")
    command = "rocetune"
    try:
        _old_output_option(argv)
        argv = dash_values_joined(argv)
        verb = verb_in(argv)  # only that verb's parser is built (and its module imported)
        parser = build_parser(verb)
        named = _verb_word(argv)  # whose help an error names
        _unknown_leading_option(argv, parser)
        if named is not None:
            parser.prefer_verb, parser.prefer_action = named, action_in(argv, named, parser)
        try:
            args = parser.parse_args(argv)
        except RocetuneError:
            if verb is None:
                raise
            whole = build_parser()  # the error, or what the one-verb parser misread, as before
            whole.prefer_verb, whole.prefer_action = parser.prefer_verb, parser.prefer_action
            parser = whole
            args = parser.parse_args(argv)
        as_json, command = args.json, args.verb or "rocetune"
        if not args.verb:
            parser.print_help()
            return int(ExitCode.USAGE)
        if not os.path.isdir(args.root):
            raise RocetuneError(f"--root {args.root}: not a directory",
                                hint="point --root at a host root or a capture", code=ExitCode.INPUT)
        result = args._run(args)
    except RocetuneError as exc:
        result = error_result(command, exc.message, exc.hint, exc.code)
    except KeyboardInterrupt:
        result = error_result(command, "interrupted", None, ExitCode.INTERNAL)
    except BrokenPipeError:
        return int(ExitCode.OUTPUT)
    except Exception as exc:  # the one place an unexpected error is turned into a message
        if debug:
            import traceback

            traceback.print_exc()
        result = error_result(command, f"unexpected {type(exc).__name__}: {exc}",
                              "rerun with --debug and report it", ExitCode.INTERNAL)
    try:
        _emit(result, as_json, quiet=getattr(result, "quiet", False) or _wants(argv, "-q") or _wants(argv, "--quiet"))
    except BrokenPipeError:  # the reader went away (`| head`): what is left goes nowhere
        _stdout_to_devnull()
        return int(ExitCode.OUTPUT)
    except (UnicodeEncodeError, OSError) as exc:
        _stdout_to_devnull()
        _say_error(_stdout_problem(exc))
        return int(ExitCode.OUTPUT)
    gate = _gate_mode(argv)
    if result.errors and gate:
        return _tool_error_at_the_gate(result, gate)
    return int(result.code)


# Options whose value may start with a dash (`--since -2h`, as journalctl takes it): argparse
# reads such a word as an option unless it is joined to its flag, so it is joined here.
DASH_VALUE_OPTIONS = ("--since",)


def dash_values_joined(argv: Sequence[str]) -> List[str]:
    """argv with `--since -2h` written as `--since=-2h` (up to a `--`)."""
    out: List[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return out + words[i:]
        if word in DASH_VALUE_OPTIONS and i + 1 < len(words) and words[i + 1].startswith("-") \
                and len(words[i + 1]) > 1 and words[i + 1][1:2].isdigit():
            out.append(f"{word}={words[i + 1]}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def _gate_mode(argv: Sequence[str]) -> Optional[str]:
    """The mode of `doctor --gate MODE` on the command line, however the rest of it parsed."""
    for a, b in zip(argv, list(argv[1:]) + [""]):
        if a.startswith("--gate="):
            return a[len("--gate="):]
        if a == "--gate":
            return b
    return None


def _tool_error_at_the_gate(result: Result, gate: str) -> int:
    """rocetune's own error (a bad option, an unreadable root, a bug) is not the node's: said as
    such on stderr and to syslog, and as a Prolog it exits 0, since a Prolog's non-zero exit
    drains the node (slurm.conf(5), Prolog); as a HealthCheckProgram its code stands (slurmd only
    logs it)."""
    spared = gate == "prolog"
    line = f"rocetune: TOOL ERROR, node not judged: {printable(result.errors[0]['message'])}"
    if spared:
        line += f" (exit {int(result.code)} withheld: a prolog's non-zero exit would drain the node)"
    sys.stderr.write(line + "\n")
    try:
        import syslog

        syslog.openlog("rocetune", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_ERR, line)
        syslog.closelog()
    except (ImportError, OSError):
        pass
    return int(ExitCode.OK) if spared else int(result.code)


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null: what is left in its buffer would fail again at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _stdout_problem(exc: Exception) -> str:
    if isinstance(exc, UnicodeEncodeError):
        ch = exc.object[exc.start:exc.start + 1]
        return (f"cannot write to stdout: its encoding ({sys.stdout.encoding}) cannot carry "
                f"{ch!r} (U+{ord(ch):04X}) in the output; run with a UTF-8 locale (LANG=C.UTF-8) "
                "or PYTHONIOENCODING=utf-8")
    return f"cannot write to stdout: {getattr(exc, 'strerror', None) or exc}"


def _say_error(message: str) -> None:
    try:
        sys.stderr.write(f"rocetune: error: {printable(message)}\n")
        sys.stderr.flush()
    except OSError:  # stderr is gone as well: the exit code is all that is left
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
