"""Parse ``nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv,noheader``.

One line per GPU: ``0, 00000000:0F:00.0, NVIDIA H100 80GB HBM3``. Result, sorted by index::

    [{"index": 0, "bus_id": "0000:0f:00.0", "name": "NVIDIA H100 80GB HBM3"}]

nvidia-smi prints PCI domains with 8 hex digits and upper-case hex; bus ids are normalised to the
Linux sysfs spelling (``%04x`` domain, lower case), so they compare equal to ``/sys/bus/pci``
names. A bus id that cannot be read gives ``"bus_id": None`` and a warning; ``[N/A]`` names give
``None``. A header line (``--format=csv`` without ``noheader``) is skipped.

``No devices were found`` gives ``[]`` with a warning. A GPU the driver lost is a line of its own,
``Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error`` (or ``... GPU is
lost.  Reboot the system to recover this GPU``; some releases print no space before the bus id):
``lost_gpus`` reads those. Lines that are not GPU rows are reported
as warnings; ParseError when nothing usable is there (empty output, an nvidia-smi error message).
Pass a list as ``warnings`` to collect the warnings.
"""

from __future__ import annotations

import re
from typing import List, Optional

from ...errors import ParseError
from ._common import add_warning, as_text, clean, first_line, guarded, require_content, snippet

WHAT = "nvidia-smi --query-gpu"

_BUS_ID_RE = re.compile(r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])\Z")
_INDEX_RE = re.compile(r"^\d{1,6}\Z")
_NO_DEVICES = "no devices were found"
_NOT_AVAILABLE = {"", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]"}


def normalize_bus_id(raw: Optional[str]) -> Optional[str]:
    """``00000000:0F:00.0`` -> ``0000:0f:00.0``; None when the text is not a PCI address."""
    if not isinstance(raw, str):
        return None
    m = _BUS_ID_RE.match(raw.strip())
    if not m:
        return None
    domain = int(m.group(1), 16) if m.group(1) else 0
    return f"{domain:04x}:{int(m.group(2), 16):02x}:{int(m.group(3), 16):02x}.{m.group(4)}"


@guarded(WHAT)
def parse_gpu_query(text: str, warnings: Optional[List[str]] = None) -> List[dict]:
    """Parse the query output; see the module docstring."""
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    warns: List[str] = [] if warnings is None else warnings
    rows = {}
    no_devices = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.lower().startswith(_NO_DEVICES):
            no_devices = True
            continue
        fields = [f.strip() for f in stripped.split(",", 2)]
        if fields[0].lower() == "index":
            continue  # csv header
        if len(fields) < 3 or not _INDEX_RE.match(fields[0]):
            add_warning(warns, f"ignored line {snippet(line)}")
            continue
        index = int(fields[0])
        bus_id = normalize_bus_id(fields[1])
        if bus_id is None:
            add_warning(warns, f"GPU {index}: unreadable bus id {snippet(fields[1], 30)}")
        name = None if fields[2] in _NOT_AVAILABLE else fields[2]
        if index in rows:
            add_warning(warns, f"GPU {index} listed twice; kept the first")
            continue
        rows[index] = {"index": index, "bus_id": bus_id, "name": name}
    if not rows:
        if no_devices:
            add_warning(warns, "nvidia-smi: No devices were found")
            return []
        raise ParseError(WHAT, f"no GPU rows found; first line: {first_line(text)}")
    return [rows[i] for i in sorted(rows)]


_LOST_RE = re.compile(r"^Unable to determine the device handle for GPU\s*"
                      r"(?P<bus>(?:[0-9A-Fa-f]{1,8}:)?[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7])"
                      r":\s*(?P<why>\S.*?)\s*$")


def lost_gpus(text: str) -> List[dict]:
    """[{"bus_id", "why"}] for each GPU nvidia-smi says it cannot reach, in the order printed;
    the bus id in sysfs spelling where it reads as one, else as printed."""
    out = []
    for line in (text or "").splitlines():
        m = _LOST_RE.match(line.strip())
        if m:
            bus = m.group("bus")
            out.append({"bus_id": normalize_bus_id(bus) or bus, "why": " ".join(m.group("why").split())[:200]})
    return out
