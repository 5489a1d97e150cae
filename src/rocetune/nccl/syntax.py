"""How NCCL reads a value: integers through strtoll(text, NULL, 0), lists with `^` (exclude) and
`=` (exact names) prefixes."""

from __future__ import annotations

import re
from typing import List, Tuple


_STRTOLL_RE = re.compile(r"^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def strtoll(text: str) -> Tuple[int, bool]:
    """What C's strtoll(text, NULL, 0) returns, and whether the whole text was a number.

    NCCL reads integer variables this way: `4k` reads as 4, `abc` as 0, `0x10` as 16, `010` as 8.
    """
    m = _STRTOLL_RE.match(text)
    if not m:
        return 0, False
    sign, digits = m.group(1), m.group(2)
    if digits.lower().startswith("0x"):
        value = int(digits, 16)
    elif digits.startswith("0") and len(digits) > 1:
        value = int(digits, 8)
    else:
        value = int(digits, 10)
    if sign == "-":
        value = -value
    rest = text[m.end():]
    return value, rest == ""


def list_entries(value: str) -> Tuple[bool, bool, List[str]]:
    """NCCL's list syntax (NCCL_IB_HCA, NCCL_SOCKET_IFNAME): (exclude?, exact?, entries)."""
    v = value
    exclude = v.startswith("^")
    if exclude:
        v = v[1:]
    exact = v.startswith("=")
    if exact:
        v = v[1:]
    return exclude, exact, [e for e in v.split(",") if e]
