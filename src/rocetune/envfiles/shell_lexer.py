"""Split shell text into simple commands of words, the way bash does, without running anything:
quotes removed (single, double, ANSI-C `$'...'`), backslash escapes and line continuations,
comments, operators, here-documents skipped. A word whose value depends on expansion (`$VAR`,
`$(cmd)`, backticks, `~`) keeps its text and says why its value is unknown; `$((...))` with only
numbers is evaluated as the shell would."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from .shell_arith import arith


@dataclass
class Word:
    raw: str
    value: Optional[str]
    line: int
    dynamic: Optional[str] = None


_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_HEREDOC_WORD = re.compile(r"""(?:[^\s;&|()<>'"\\]|\\.|'[^']*'|"[^"]*")+""")
_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")


def _balanced(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index after the `close_ch` matching the `open_ch` at text[i] (quotes respected)."""
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and open_ch == "(":
            k = text.find("'", j + 1)
            j = len(text) if k < 0 else k + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(text)


def _dollar(text: str, i: int) -> Tuple[int, Optional[str], Optional[str]]:
    """At text[i] == '$': (end, static value or None, why dynamic)."""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if text.startswith("$((", i):
        end = _balanced(text, i + 1, "(", ")")
        inner = text[i + 3:end - 2]
        value = arith(inner)
        if value is None:
            return end, None, "shell arithmetic"
        return end, str(value), None
    if nxt == "(":
        return _balanced(text, i + 1, "(", ")"), None, "command substitution"
    if nxt == "{":
        return _balanced(text, i + 1, "{", "}"), None, "variable expansion"
    m = _PARAMETER.match(text, i + 1)
    if m:
        return m.end(), None, "variable expansion"
    return i + 1, "$", None


def shell_commands(text: str) -> Tuple[List[List[Word]], List[Tuple[int, str]], List[Tuple[int, str]]]:
    """Split shell text into simple commands of words. Returns (commands, comments, problems);
    comments are (line, text). Never raises: unbalanced quotes run to the end of the text."""
    commands: List[List[Word]] = []
    comments: List[Tuple[int, str]] = []
    problems: List[Tuple[int, str]] = []
    cur: List[Word] = []
    raw: List[str] = []
    val: List[str] = []
    dyn: Optional[str] = None
    in_word = False
    word_line = 1
    line = 1
    i = 0
    n = len(text)
    heredocs: List[Tuple[str, bool]] = []  # (delimiter, strip leading tabs) of `<<` on this line

    def end_word() -> None:
        nonlocal raw, val, dyn, in_word
        if in_word:
            cur.append(Word("".join(raw), None if dyn else "".join(val), word_line, dyn))
        raw, val, dyn, in_word = [], [], None, False

    def end_command() -> None:
        nonlocal cur
        end_word()
        if cur:
            commands.append(cur)
        cur = []

    def start() -> None:
        nonlocal in_word, word_line
        if not in_word:
            in_word, word_line = True, line

    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if not in_word and c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((line, text[i + 1:j]))
            i = j
            continue
        if c in " \t":  # bash keeps a carriage return: it is part of the word
            end_word()
            i += 1
            continue
        if text.startswith("<<<", i):  # a here-string: the next word is input, not a delimiter
            end_word()
            i += 3
            continue
        if text.startswith("<<", i):
            end_word()
            i = _heredoc_operator(text, i, heredocs)
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op:
            end_command()
            i += len(op)
            if op == "\n":
                line += 1
                if heredocs:
                    i, line = _skip_heredocs(text, i, line, heredocs, problems)
                    heredocs = []
            continue
        start()
        if c == "\\":
            if i + 1 < n:
                raw.append(text[i:i + 2])
                val.append(text[i + 1])
            i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                problems.append((line, "unterminated single quote"))
                j = n
            piece = text[i + 1:j]
            raw.append(text[i:j + 1])
            val.append(piece)
            line += piece.count("\n")
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    if text[j + 1] in '$`"\\':
                        val.append(text[j + 1])
                    elif text[j + 1] == "\n":
                        pass
                    else:
                        val.append(text[j:j + 2])
                    j += 2
                    continue
                if text[j] == "$":
                    end, static, why = _dollar(text, j)
                    if static is None:
                        dyn = dyn or why
                    else:
                        val.append(static)
                    j = end
                    continue
                if text[j] == "`":
                    k = text.find("`", j + 1)
                    j = n if k < 0 else k + 1
                    dyn = dyn or "command substitution"
                    continue
                val.append(text[j])
                j += 1
            if j >= n:
                problems.append((line, "unterminated double quote"))
            raw.append(text[i:j + 1])
            line += text[i:j].count("\n")
            i = j + 1
        elif text.startswith("$'", i):
            end, static, closed = ansi_c_string(text, i)
            if not closed:
                problems.append((line, "unterminated $'...' quote"))
            raw.append(text[i:end])
            val.append(static)
            line += text[i:end].count("\n")
            i = end
        elif text.startswith('$"', i):
            raw.append("$")  # locale translation: read as a double-quoted string
            i += 1
        elif c == "$":
            end, static, why = _dollar(text, i)
            raw.append(text[i:end])
            if static is None:
                dyn = dyn or why
            else:
                val.append(static)
            line += text[i:end].count("\n")
            i = end
        elif c == "`":
            k = text.find("`", i + 1)
            end = n if k < 0 else k + 1
            raw.append(text[i:end])
            dyn = dyn or "command substitution"
            line += text[i:end].count("\n")
            i = end
        elif c == "~" and (not raw or raw[-1].endswith(("=", ":"))):
            raw.append(c)
            dyn = dyn or "tilde expansion"
            i += 1
        else:
            raw.append(c)
            val.append(c)
            i += 1
    end_command()
    return commands, comments, problems


_QUOTE_PIECE = re.compile(r"\\(.)|'([^']*)'|\"([^\"]*)\"")


def _heredoc_operator(text: str, i: int, heredocs: List[Tuple[str, bool]]) -> int:
    """At `<<` or `<<-`: read the delimiter word (quotes removed), note it, return the index after."""
    i += 2
    strip = text.startswith("-", i)
    i += 1 if strip else 0
    while i < len(text) and text[i] in " \t":
        i += 1
    m = _HEREDOC_WORD.match(text, i)
    word = m.group(0) if m else ""
    delimiter = _QUOTE_PIECE.sub(lambda g: next(x for x in g.groups() if x is not None), word)
    if word:
        heredocs.append((delimiter, strip))
    return i + len(word)


def _skip_heredocs(text: str, i: int, line: int, heredocs: List[Tuple[str, bool]],
                   problems: List[Tuple[int, str]]) -> Tuple[int, int]:
    """Skip the bodies of the here-documents started on the line that just ended: they are
    input to a command, not settings. Returns (index, line) after the last delimiter line."""
    for delimiter, strip in heredocs:
        start = line
        while True:
            if i >= len(text):
                problems.append((start, f"here-document runs to the end of the file (no line {delimiter!r})"))
                return i, line
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            body = text[i:j].lstrip("\t") if strip else text[i:j]
            i, line = j + 1, line + 1
            if body == delimiter:
                break
    return i, line


_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
           "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def ansi_c_string(text: str, i: int) -> Tuple[int, str, bool]:
    """At `$'`: bash's ANSI-C quoting. Returns (index after the closing quote, value, closed).
    Escapes as bash expands them; a NUL ends the value (bash's strings are C strings)."""
    out: List[str] = []
    j, n = i + 2, len(text)
    ended = False
    while j < n:
        c = text[j]
        if c == "'":
            return j + 1, "".join(out), True
        ch, size = c, 1
        if c == "\\" and j + 1 < n:
            e = text[j + 1]
            ch, size = "\\" + e, 2
            if e in _ANSI_C:
                ch = _ANSI_C[e]
            elif e in "01234567":
                octal = text[j + 1:j + 4]
                digits = octal[:len(octal) - len(octal.lstrip("01234567"))]
                ch, size = chr(int(digits, 8) & 0xFF), 1 + len(digits)
            elif e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                m = re.match(r"[0-9a-fA-F]{1,%d}" % width, text[j + 2:j + 2 + width])
                if m:
                    code = int(m.group(0), 16)
                    ch, size = (chr(code) if code <= 0x10FFFF else "\ufffd"), 2 + len(m.group(0))
            elif e == "c" and j + 2 < n:
                ch, size = chr(ord(text[j + 2]) & 0x1F), 3
        if ch == "\0":
            ended = True
        if not ended:
            out.append(ch)
        j += size
    return n, "".join(out), False
