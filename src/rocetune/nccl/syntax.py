"""How NCCL reads a value: integers through strtoll(text, NULL, 0), lists with `^` (exclude) and
`=` (exact names) prefixes."""

from __future__ import annotations

import re
from typing import List, Tuple

LLONG_MAX = (1 << 63) - 1
LLONG_MIN = -(1 << 63)
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
        value = _saturated(digits[2:], 16)
    elif digits.startswith("0") and len(digits) > 1:
        value = _saturated(digits, 8)
    else:
        value = _saturated(digits, 10)
    if sign == "-":
        value = max(-value, LLONG_MIN)
    else:
        value = min(value, LLONG_MAX)
    rest = text[m.end():]
    return value, rest == ""


def _saturated(digits: str, base: int) -> int:
    """int(digits, base), or LLONG_MAX + 1 when that is past it (strtoll saturates on overflow,
    and 4300 decimal digits are more than Python's int() converts)."""
    significant = digits.lstrip("0")
    if len(significant) > 22:  # past 2**63 in base 8, 10 or 16 alike
        return LLONG_MAX + 1
    return int(significant or "0", base)


def atoi(digits: str) -> int:
    """C's atoi of a run of decimal digits on glibc: (int) strtol, so a value past LONG_MAX
    saturates and keeps its low 32 bits (-1), and one past INT_MAX wraps."""
    value = min(_saturated(digits, 10), LLONG_MAX)
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


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


def ib_hca_entries(value: str, empty_port_any: bool = False) -> Tuple[bool, bool, List[Tuple[str, int]]]:
    """NCCL_IB_HCA as NCCL parses it: (exclude?, exact?, [(name, port)]), port -1 for "any port".

    src/misc/utils.cc parseStringList (v2.18.3-1 .. v2.30.4-1 :212): a `:port` suffix is read with
    atoi -- an empty one (`mlx5_0::0`, `mlx5_0:`) is port 0, which matches no port -- and anything after
    a further `:` (rail, plane) is skipped up to the next `,`. From v2.30.7-1 (:203-204) an empty port
    is -1, any port: `empty_port_any` (release table `ib-hca-empty-port-any`).
    """
    exclude, exact, entries = list_entries(value)
    out: List[Tuple[str, int]] = []
    for entry in entries:
        name, sep, rest = entry.partition(":")
        if not name:
            continue
        port = -1
        if sep:
            digits = rest[:len(rest) - len(rest.lstrip("0123456789"))]  # atoi: leading digits, 0 when none
            empty = rest == "" or rest.startswith(":")
            port = -1 if empty and empty_port_any else atoi(digits)
        out.append((name, port))
    return exclude, exact, out


def ib_hca_selects(value: str, device: str, port: int, empty_port_any: bool = False) -> bool:
    """Whether NCCL_IB_HCA=`value` lets NCCL use port `port` of `device`.

    NCCL 2.28.9 src/transport/net_ib.cc:704-740 with src/misc/utils.cc matchIfList: an empty list
    selects every port; a name matches by prefix, or whole with `=`; a port of -1 on either side
    matches any port; `^` turns the result around (so a bare `^` selects nothing).
    """
    exclude, exact, entries = ib_hca_entries(value, empty_port_any)
    hit = not entries or any((device == name if exact else device.startswith(name))
                             and (p == -1 or port == -1 or p == port) for name, p in entries)
    return hit != exclude


def ifname_selects(value: str, ifname: str) -> bool:
    """Whether NCCL_SOCKET_IFNAME=`value` lets NCCL use interface `ifname`.

    NCCL 2.28.9 src/misc/socket.cc findInterfaces with src/misc/utils.cc matchIfList: prefixes,
    or whole names after `=`; `^` excludes what the list matches.
    """
    exclude, exact, entries = list_entries(value)
    hit = any((ifname == e if exact else ifname.startswith(e)) for e in entries)
    return hit != exclude
