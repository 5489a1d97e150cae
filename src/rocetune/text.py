"""Text that is safe to show: control characters escaped, and aligned tables."""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence


def _is_control(o: int) -> bool:
    return o < 0x20 or o == 0x7f or 0x80 <= o < 0xa0


def printable(text: object) -> str:
    """Escape control characters so a hostile value cannot drive the terminal."""
    out = []
    for ch in str(text):
        o = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif _is_control(o):
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


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
