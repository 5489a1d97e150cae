"""How systemd reads back a unit line, written from systemd.syntax(7) ("Quoting"),
systemd.unit(5) (specifiers) and systemd.service(5) ("Command lines": $VAR, ${VAR}, $$), to
check that what the roles write runs exactly what they meant."""

from __future__ import annotations

import re

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "s": " "}
# What systemd would put in place of a specifier or a variable: visible markers, so a value it
# expanded differs from the value meant.
_EXPANDED = re.compile(r"%(.)|\$\$|\$\{(\w+)\}|\$(\w+)")


def words(line: str) -> list[str]:
    """A command line split and unquoted as systemd does."""
    out, i = [], 0
    while i < len(line):
        if line[i] in " \t":
            i += 1
            continue
        word, quote = [], None
        while i < len(line) and (quote or line[i] not in " \t"):
            ch = line[i]
            if ch == quote:
                quote = None
            elif ch in "\"'" and quote is None:
                quote = ch
            elif ch == "\\":
                nxt = line[i + 1]
                if nxt == "x":
                    word.append(chr(int(line[i + 2:i + 4], 16)))
                    i += 4
                    continue
                word.append(_ESCAPES[nxt])
                i += 1
            else:
                word.append(ch)
            i += 1
        assert quote is None, f"unterminated quote in {line!r}"
        out.append("".join(word))
    return out


def expanded(word: str) -> str:
    """The word after systemd's specifier (load time) and variable (exec time) expansion."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        if m.group(1) is not None:
            return "%" if m.group(1) == "%" else f"<specifier {m.group(1)}>"
        return f"<variable {m.group(2) or m.group(3)}>"
    return _EXPANDED.sub(sub, word)


def exec_argv(value: str) -> list[str]:
    """The argv an ExecStart= value runs."""
    return [expanded(w) for w in words(value)]


def setting(unit: str, key: str) -> list[str]:
    """Every value of `key=` in the unit text."""
    return [ln.split("=", 1)[1] for ln in unit.splitlines() if ln.startswith(key + "=")]
