"""Lint: env files, nccl.conf, job scripts and notes checked for settings that misfire, against
the QoS plan and the target host's names when those are known."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.record import FrozenRecord, Record
from .inputs import planned_features, qos_plan


class LintRequest(FrozenRecord):
    files: Tuple[str, ...]
    format: str  # an env dialect for every file, or "auto"
    root: str
    qos_path: Optional[str]  # None: the root's /etc/rocetune/qos.yml when present
    features_path: Optional[str]  # the target host's Features; None: a probe of `root`
    host_check: str  # auto | yes | no
    _fields = ("files", "format", "root", "qos_path", "features_path", "host_check")

    def __init__(self, files: Tuple[str, ...], format: str = "auto", root: str = "/",
                 qos_path: Optional[str] = None, features_path: Optional[str] = None,
                 host_check: str = "auto") -> None:
        self._set(files, format, root, qos_path, features_path, host_check)


class Linted(Record):
    report: Any  # rocetune.lint.checks.LintReport
    qos: Any  # the QoS plan checked against, or None
    host: Any  # rocetune.lint.host.HostNames checked against, or None
    host_source: Optional[str]  # where those names came from
    _fields = ("report", "qos", "host", "host_source")

    def __init__(self, report: Any, qos: Any, host: Any, host_source: Optional[str]) -> None:
        self.report = report
        self.qos = qos
        self.host = host
        self.host_source = host_source


def formats() -> Tuple[str, ...]:
    """What --format takes: auto, or an env dialect."""
    from ..envfiles import dialects

    return ("auto",) + dialects.names()


def host_names(request: LintRequest) -> Tuple[Any, Optional[str]]:
    """(HostNames or None, where they came from) as the request's Features, root and host check say."""
    from ..hostfs.root import HostRoot
    from ..lint.host import HostNames

    if request.host_check == "no":
        return None, None
    live = not request.features_path and HostRoot(request.root).is_live
    features = planned_features(request.root, request.features_path)  # the node settings' NCCL release too
    source = f"features {request.features_path}" if request.features_path else f"probe of {request.root}"
    host = HostNames.from_features(features, check_netdevs=not live or request.host_check == "yes")
    if host.empty:
        if request.host_check == "yes":
            raise RocetuneError(f"--host-check yes: the {source} shows no RDMA device and no network "
                                "interface to check names against",
                                hint="give the target host's Features with --features FILE",
                                code=ExitCode.INPUT)
        return None, None
    return host, source


def lint(request: LintRequest) -> Linted:
    """Lint the files; none readable is RocetuneError (ExitCode.INPUT)."""
    from ..lint.checks import lint_paths

    qos = qos_plan(request.root, request.qos_path, fallback=False)
    host, host_source = host_names(request)
    report = lint_paths(list(request.files), request.format, qos, host)
    if not report.read:
        first = report.files[0]
        raise RocetuneError(f"{first['path']}: cannot read it: {first['unreadable']}"
                            + (f" (nor {len(request.files) - 1} other file(s))" if len(request.files) > 1 else ""),
                            hint="check the paths; nothing was linted", code=ExitCode.INPUT)
    return Linted(report, qos, host, host_source)
