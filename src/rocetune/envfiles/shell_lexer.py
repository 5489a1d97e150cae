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
    lexer = _Lexer(text)
    lexer.run()
    return lexer.commands, lexer.comments, lexer.problems


class _Lexer:
    """One pass over the text: separators end words and commands, the rest builds words."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.i = 0
        self.line = 1
        self.commands: List[List[Word]] = []
        self.comments: List[Tuple[int, str]] = []
        self.problems: List[Tuple[int, str]] = []
        self.cur: List[Word] = []
        self.raw: List[str] = []
        self.val: List[str] = []
        self.dyn: Optional[str] = None
        self.in_word = False
        self.word_line = 1
        self.heredocs: List[Tuple[str, bool]] = []  # (delimiter, strip leading tabs) of `<<` on this line

    def run(self) -> None:
        while self.i < self.n:
            if not self._separator():
                if not self.in_word:
                    self.in_word, self.word_line = True, self.line
                self._word_part()
        self._end_command()

    def _end_word(self) -> None:
        if self.in_word:
            self.cur.append(Word("".join(self.raw), None if self.dyn else "".join(self.val),
                                 self.word_line, self.dyn))
        self.raw, self.val, self.dyn, self.in_word = [], [], None, False

    def _end_command(self) -> None:
        self._end_word()
        if self.cur:
            self.commands.append(self.cur)
        self.cur = []

    def _dynamic(self, why: Optional[str]) -> None:
        self.dyn = self.dyn or why

    def _separator(self) -> bool:
        """Consume what at text[i] is no part of a word (blank, comment, continuation,
        redirection of a here-document, operator); False when a word goes on."""
        text, i, c = self.text, self.i, self.text[self.i]
        if c == "\\" and i + 1 < self.n and text[i + 1] == "\n":
            self.i += 2
            self.line += 1
        elif not self.in_word and c == "#":
            j = text.find("\n", i)
            j = self.n if j < 0 else j
            self.comments.append((self.line, text[i + 1:j]))
            self.i = j
        elif c in " \t":  # bash keeps a carriage return: it is part of the word
            self._end_word()
            self.i += 1
        elif text.startswith("<<<", i):  # a here-string: the next word is input, not a delimiter
            self._end_word()
            self.i += 3
        elif text.startswith("<<", i):
            self._end_word()
            self.i = _heredoc_operator(text, i, self.heredocs)
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if not op:
                return False
            self._operator(op)
        return True

    def _operator(self, op: str) -> None:
        self._end_command()
        self.i += len(op)
        if op == "\n":
            self.line += 1
            if self.heredocs:
                self.i, self.line = _skip_heredocs(self.text, self.i, self.line, self.heredocs, self.problems)
                self.heredocs = []

    def _word_part(self) -> None:
        text, i, c = self.text, self.i, self.text[self.i]
        if c == "\\":
            if i + 1 < self.n:
                self.raw.append(text[i:i + 2])
                self.val.append(text[i + 1])
            self.i += 2
        elif c == "'":
            self._single_quoted()
        elif c == '"':
            self._double_quoted()
        elif text.startswith("$'", i):
            end, static, closed = ansi_c_string(text, i)
            if not closed:
                self.problems.append((self.line, "unterminated $'...' quote"))
            self.raw.append(text[i:end])
            self.val.append(static)
            self._advance_to(end)
        elif text.startswith('$"', i):
            self.raw.append("$")  # locale translation: read as a double-quoted string
            self.i += 1
        elif c == "$":
            end, value, why = _dollar(text, i)
            self.raw.append(text[i:end])
            if value is None:
                self._dynamic(why)
            else:
                self.val.append(value)
            self._advance_to(end)
        elif c == "`":
            k = text.find("`", i + 1)
            end = self.n if k < 0 else k + 1
            self.raw.append(text[i:end])
            self._dynamic("command substitution")
            self._advance_to(end)
        elif c == "~" and (not self.raw or self.raw[-1].endswith(("=", ":"))):
            self.raw.append(c)
            self._dynamic("tilde expansion")
            self.i += 1
        else:
            self.raw.append(c)
            self.val.append(c)
            self.i += 1

    def _advance_to(self, end: int) -> None:
        self.line += self.text[self.i:end].count("\n")
        self.i = end

    def _single_quoted(self) -> None:
        text, i = self.text, self.i
        j = text.find("'", i + 1)
        if j < 0:
            self.problems.append((self.line, "unterminated single quote"))
            j = self.n
        piece = text[i + 1:j]
        self.raw.append(text[i:j + 1])
        self.val.append(piece)
        self.line += piece.count("\n")
        self.i = j + 1

    def _double_quoted(self) -> None:
        text, n, i, val = self.text, self.n, self.i, self.val
        j = i + 1
        while j < n and text[j] != '"':
            ch = text[j]
            if ch == "\\" and j + 1 < n:
                if text[j + 1] in '$`"\\':
                    val.append(text[j + 1])
                elif text[j + 1] != "\n":
                    val.append(text[j:j + 2])
                j += 2
            elif ch == "$":
                end, static, why = _dollar(text, j)
                if static is None:
                    self._dynamic(why)
                else:
                    val.append(static)
                j = end
            elif ch == "`":
                k = text.find("`", j + 1)
                j = n if k < 0 else k + 1
                self._dynamic("command substitution")
            else:
                val.append(ch)
                j += 1
        if j >= n:
            self.problems.append((self.line, "unterminated double quote"))
        self.raw.append(text[i:j + 1])
        self.line += text[i:j].count("\n")
        self.i = j + 1


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
