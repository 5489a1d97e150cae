"""Capture: snapshot what probe and doctor read on a host into a replayable tar.gz."""

from __future__ import annotations

from typing import Optional

from ..errors import ExitCode, RocetuneError
from ..model.finding import Finding
from ..model.record import FrozenRecord, Record


class CaptureRequest(FrozenRecord):
    root: str  # the host to capture ("/" on the host itself)
    out: str  # the tar.gz to write
    _fields = ("root", "out")

    def __init__(self, root: str, out: str) -> None:
        self._set(root, out)


class Captured(Record):
    path: str
    size: int  # bytes written
    fingerprint: str  # of the Features the capture replays to
    partial: Optional[Finding]  # what the host lacked, when the capture is partial
    _fields = ("path", "size", "fingerprint", "partial")

    def __init__(self, path: str, size: int, fingerprint: str, partial: Optional[Finding]) -> None:
        self.path = path
        self.size = size
        self.fingerprint = fingerprint
        self.partial = partial


def capture(request: CaptureRequest) -> Captured:
    """Write the capture; an unwritable `out` is RocetuneError (ExitCode.OUTPUT)."""
    from ..checks import host_findings
    from ..doctor import readings
    from ..model.features import fingerprint
    from ..model.finding import partial
    from ..probe.capture import capture as write_capture

    try:
        # doctor's readings too (lspci's ACS bits, the kernel log's fabric lines, the NIC
        # firmware settings, the PHY, ...): a replayed root answers doctor as the host did
        features, size = write_capture(request.root, request.out, also=lambda ctx, f: readings.read(ctx, f))
    except OSError as exc:
        raise RocetuneError(f"cannot write {request.out}: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
    return Captured(request.out, size, fingerprint(features), partial(host_findings(features)))
