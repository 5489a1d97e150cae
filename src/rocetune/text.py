"""Text that is safe to show: control characters escaped, and aligned tables.

The one output sanitizer (docs/security.md). A host name, a device name, a node's stderr, a log
line: whatever a node or a file supplied may hold C0 or C1 control characters (ESC, CSI: escape
sequences that move the cursor, rewrite a line, set the window title) or bidirectional overrides
(U+202E and kin: text shown in another order than it reads). None reaches a terminal raw:
`printable` escapes them in one value (a newline too); `terminal_text` in a whole rendered text,
keeping only the renderer's own newlines and tabs (cli.main prints every human text, warning and
error through them); `json_text` escapes in JSON what json's encoder leaves raw with
ensure_ascii=False (C1 controls, DEL, the overrides, U+2028/9), so `--json` stays valid JSON
whose strings are the values themselves.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence

# Shown in another order than they read: the bidirectional embeddings, overrides and isolates,
# the implicit marks, and the line/paragraph separators some terminals take as newlines.
_FORMAT_CHARS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE_IN_VALUE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT_CHARS}]")
_UNSAFE_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT_CHARS}]")
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f{_FORMAT_CHARS}]")  # json escapes C0 itself


def _is_control(o: int) -> bool:
    return o < 0x20 or o == 0x7f or 0x80 <= o < 0xa0


def _escape(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def _escape_match(m: re.Match[str]) -> str:
    return _escape(m.group())


def printable(text: object) -> str:
    """Escape control characters and bidirectional overrides (a newline too) so a hostile value
    cannot drive the terminal or reorder what it shows."""
    text = str(text)
    if text.isprintable() and text.isascii():
        return text
    return _UNSAFE_IN_VALUE.sub(_escape_match, text.replace("\n", "\\n"))


def terminal_text(text: str) -> str:
    """A whole rendered text with every control character but newline and tab, and every
    bidirectional override, escaped (`printable`'s escapes)."""
    return _UNSAFE_IN_TEXT.sub(_escape_match, text) if _UNSAFE_IN_TEXT.search(text) else text


def html_text(value: object) -> str:
    """A value for an HTML page: control characters (but newline and tab) and bidirectional
    overrides shown as visible escapes (`terminal_text`'s), then escaped for HTML."""
    from html import escape

    return escape(terminal_text(str(value)), quote=True)


def json_text(text: str) -> str:
    """JSON text written with ensure_ascii=False, its C1 controls, DEL and bidirectional
    overrides written as \\uXXXX escapes (they can only be inside strings: still the same JSON)."""
    if not _UNSAFE_IN_JSON.search(text):
        return text
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line(text: object) -> str:
    """Text for inside a one-line `#` comment of any format: no newline, no escape, no separator."""
    return "".join("?" if _is_control(ord(ch)) or ch in "\\\u2028\u2029" else ch
                   for ch in str(text)).strip()


def table(rows: Sequence[Sequence[str]], header: Optional[Sequence[str]] = None) -> List[str]:
    """Left-aligned columns two spaces apart; every cell escaped; trailing blanks trimmed."""
    body = [[printable(c) for c in r] for r in rows]
    if header is not None:
        body.insert(0, [printable(h) for h in header])
    if not body:
        return []
    ncols = max(len(r) for r in body)
    widths = [max(len(r[i]) for r in body if i < len(r)) for i in range(ncols)]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in body]


def suggest(word: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate closest to a mistyped `word` (`--sav` -> `--save-baseline`), or None."""
    import difflib

    names = sorted(set(candidates))
    starts = [n for n in names if len(word.strip("-")) >= 2 and n.startswith(word)]
    if len(starts) == 1:  # an abbreviation of one name is what was meant
        return starts[0]
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return close[0] if close else None
