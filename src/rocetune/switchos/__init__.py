"""The switch network operating systems rocetune writes QoS for and reads QoS from: one module per
OS in this package, each defining `OS`, a rocetune.switchos.base.SwitchOs (its parser, its
renderer and templates, its choices). This registry finds them; `qos render`, `qos check`, the
Ansible module (through `qos render --json`) and the docs take the list from here, so a new OS
is one new module here and its tests.
"""

from __future__ import annotations

import importlib
import re
from typing import Dict, List, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.switch_qos import SwitchQos
from ..pkgdata import submodules
from .base import Choice, SwitchOs

_NOT_OS = ("base",)
_FOUND: Dict[str, SwitchOs] = {}
# Ports as switch OSes name them (Ethernet0, swp1, Ethernet1/1, Ethernet3/1/1, swp1s0).
PORT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9/_.:-]{0,63}\Z")


def registry() -> Dict[str, SwitchOs]:
    """name -> OS, in listing order; the package's modules are imported once."""
    if not _FOUND:
        found = []
        for name in submodules(__path__):
            if name.startswith("_") or name in _NOT_OS:
                continue
            module = importlib.import_module(f"{__name__}.{name}")
            os_ = getattr(module, "OS", None)
            if isinstance(os_, SwitchOs):
                found.append(os_)
        for os_ in sorted(found, key=lambda o: (o.order, o.name)):
            if os_.name in _FOUND:
                raise RuntimeError(f"switch OS {os_.name} is defined twice")
            _FOUND[os_.name] = os_
    return _FOUND


def forget() -> None:
    """Look the modules up again on the next call (tests that add an OS module)."""
    _FOUND.clear()


def names() -> Tuple[str, ...]:
    return tuple(registry())


def get(name: str, flag: str = "--os") -> SwitchOs:
    try:
        return registry()[name]
    except KeyError:
        raise RocetuneError(f"{flag} {name!r}: not one of {', '.join(names())}", code=ExitCode.USAGE) from None


def choices() -> Dict[str, List[Tuple[SwitchOs, Choice]]]:
    """Every OS-specific choice by name (two OSes may share a name, e.g. platform)."""
    out: Dict[str, List[Tuple[SwitchOs, Choice]]] = {}
    for os_ in registry().values():
        for c in os_.choices:
            out.setdefault(c.name, []).append((os_, c))
    return out


def detect(text: str) -> Optional[SwitchOs]:
    """The OS whose output this is, when exactly one recognises it (the first in order otherwise)."""
    for os_ in registry().values():
        if os_.looks_like(text):
            return os_
    return None


def ports_from(text: str, flag: str = "--ports") -> List[str]:
    """--ports P1,P2 (or --fabric-ports): each checked, order kept, duplicates refused."""
    ports = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in ports if not PORT_RE.match(p)]
    if bad:
        examples = ", ".join(f"{o.port_example} ({o.title})" for o in registry().values() if o.port_example)
        raise RocetuneError(f"{flag}: {bad[0]!r} is not a port name", hint=f"e.g. {flag} {examples}",
                            code=ExitCode.USAGE)
    if len(set(ports)) != len(ports):
        raise RocetuneError(f"{flag} names a port twice", code=ExitCode.USAGE)
    return ports


def read_file(path: str, name: Optional[str] = None, flag: str = "FILE") -> SwitchQos:
    """A switch output file, read by the OS `name` names or the one that recognises it."""
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input
    from ..model.jsonread import MAX_DOCUMENT_BYTES

    os_ = get(name) if name is not None else None
    try:  # a regular file only, without blocking, capped (rocetune.hostfs.inputs.read_input)
        raw = read_input(path, MAX_DOCUMENT_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"{flag} {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except FileNotFoundError:
        raise RocetuneError(f"{flag} {path}: no such file", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"{flag} {path}: cannot read: {exc.strerror or exc}", code=ExitCode.INPUT) from None
    text = raw.decode("utf-8", errors="replace")
    os_ = os_ or detect(text)
    if os_ is None:
        what = "; ".join(o.reads for o in registry().values())
        raise RocetuneError(f"{flag} {path}: not recognised as a switch's QoS output ({what})",
                            hint=f"name it with --os {'|'.join(names())}", code=ExitCode.INPUT)
    return os_.parse(text, path)


def read_counters(path: str, switch: SwitchQos, flag: str = "--counters") -> None:
    """The counter shows saved in `path` (SONiC: `show pfc counters`, `show queue counters`,
    `show queue wredcounters`), read into `switch.counters` beside what its own file held."""
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input
    from ..model.jsonread import MAX_DOCUMENT_BYTES
    from . import sonic_counters

    if switch.kind != "sonic":
        raise RocetuneError(f"{flag} {path}: a counters file is read for SONiC switches only",
                            hint="NVUE: save `nv show interface IF qos roce counters` in the file with the status "
                                 "show", code=ExitCode.INPUT)
    try:
        raw = read_input(path, MAX_DOCUMENT_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"{flag} {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except FileNotFoundError:
        raise RocetuneError(f"{flag} {path}: no such file", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"{flag} {path}: cannot read: {exc.strerror or exc}", code=ExitCode.INPUT) from None
    read = sonic_counters.parse(raw.decode("utf-8", errors="replace"), path)  # ParseError: one line, exit 3
    for port, counts in read.items():
        switch.counters.setdefault(port, {}).update(counts)
    switch.form = "; ".join(f for f in (switch.form, "counters (" + path + ")") if f)
