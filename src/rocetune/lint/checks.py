"""Lint environment settings: env files, nccl.conf, job scripts, Dockerfiles, Markdown notes.

Each check is declared once in rocetune.lint.declarations (id, severity, fix, source; a page
docs/checks/<id>.md); a finding's own fix, when lint can name one for the setting, overrides the
check's. `error` means the setting does not do what its author meant (NCCL ignores it, reads it
as another number, or it contradicts the fabric's QoS plan); `warning` means it probably does
not; `info` is worth knowing. Vendors' published settings lint without errors: plugin variables,
templates (`{{ x }}`) and shell expansions are recognised rather than flagged.

Findings are the one Finding type, made by rocetune.checks, with file, line and key. Device and
interface names are checked against a Features document (HostNames.from_features), so linting
works on a controller from a saved probe. `check_assignment` gives the checks of one setting to
the override readers (`--set`, `--config`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..checks import finding
from ..checks.binding import emits
from ..checks.registry import _ACTIVE
from ..envfiles import dialects
from ..envfiles.dialects import nccl_conf
from ..envfiles.parsed import Assignment, ParsedFile
from ..envfiles.read import parse_text
from ..model.finding import SEVERITIES, Finding
from ..model.qos import QosPlan
from ..nccl import releases
from ..nccl.catalog import Catalog, load_catalog
from ..nccl.syntax import strtoll
from ..nccl.versions import parse_version
from .host import HostNames, check_host
from .setting import Add, check_name, check_value
from .traffic_class import check_nic_qos, check_qos

_WATCHED = ("NCCL_", "UCX_", "GLOO_", "TORCH_NCCL_", "OMPI_MCA_btl_tcp_")
MAX_BYTES = 16 << 20


# Findings of one check listed per file; the rest are counted in one more finding. A file of a
# million unknown names is not an env file: its report stays the size of a real one's.
MAX_LISTED = 100


def _adder(out: List[Finding], name: str, unlisted: Optional[Dict[str, List]] = None) -> Add:
    """add(check id, severity (None: the check's), line, key, message, fix for this setting);
    past MAX_LISTED findings of a check, `unlisted[id]` counts them ([count, first line, worst
    severity]) instead."""
    listed: Dict[str, int] = {}

    def add(fid: str, sev: Optional[str], line: int, key: Optional[str], msg: str,
            fix: Optional[str] = None) -> None:
        if unlisted is not None:
            listed[fid] = listed.get(fid, 0) + 1
            if listed[fid] > MAX_LISTED:
                severity = sev or _registered_severity(fid)
                # the binding in force where the check made it: its summary is made under it
                seen = unlisted.setdefault(fid, [0, line, severity, _ACTIVE.get()])
                seen[0] += 1
                if SEVERITIES.index(severity) < SEVERITIES.index(seen[2]):
                    seen[2] = severity
                return
        out.append(finding(fid, f"{name}:{line}", msg, severity=sev, fix=fix, file=name, line=line, key=key,
                           evidence={"file": name, "line": line}))
    return add


def _registered_severity(fid: str) -> str:
    from ..checks.registry import get

    return get(fid).severity


def _unlisted_findings(unlisted: Dict[str, List], name: str) -> List[Finding]:
    """One finding per check past MAX_LISTED, counting the rest: made under the binding of the
    check that made them (this relays their id; it chooses none), whoever calls lint_text."""
    out = []
    for fid, (count, line, severity, binding) in sorted(unlisted.items()):
        token = _ACTIVE.set(binding)
        try:
            out.append(finding(fid, f"{name}:{line}", f"{count} more {fid} finding(s) in this file from line {line} "
                               f"on, not listed: only the first {MAX_LISTED} of each check are", severity=severity,
                               file=name, line=line, evidence={"file": name, "line": line, "value": str(count)}))
        finally:
            _ACTIVE.reset(token)
    return out


def lint_text(text: str, name: str, fmt: str = "auto", qos: Optional[QosPlan] = None,
              host: Optional[HostNames] = None,
              catalog: Optional[Catalog] = None) -> Tuple[ParsedFile, List[Finding]]:
    cat = catalog or load_catalog()
    parsed = parse_text(text, fmt, name)
    out: List[Finding] = []
    unlisted: Dict[str, List] = {}
    add = _adder(out, name, unlisted)

    _relay_problems(parsed, add)
    _check_dialect(parsed, text, add, host)

    dialect = dialects.get(parsed.fmt)
    for a in parsed.assignments:
        if not a.key.startswith(_WATCHED):
            continue
        if dialect.lint_value:  # the pitfalls of how this dialect's consumer reads a value
            _dialect_pitfalls(dialect.lint_value, a, add)
        _check_one(cat, a, add, qos, host)
    _check_file(parsed, add)
    out += _unlisted_findings(unlisted, name)
    out.sort(key=lambda f: (f.line or 0, SEVERITIES.index(f.severity), f.id, f.key or ""))
    return parsed, out


# What the env-file parsers report (ParsedFile.problems) and the dialects' value pitfalls
# (Dialect.lint_value): lint makes the findings, so it binds their ids.
_PARSE_PROBLEMS = ("conf-bad-name", "conf-ignored-line", "conf-not-nccl", "conf-whitespace",
                   "deepspeed-bad-name", "deepspeed-blank-line", "deepspeed-no-equals", "docker-bad-name",
                   "docker-whitespace", "json-invalid", "k8s-no-configmap", "k8s-not-a-string",
                   "k8s-unreadable", "sh-bad-name", "sh-syntax", "sh-unexported")
_VALUE_PITFALLS = ("conf-not-nccl", "conf-quoted-value", "conf-whitespace", "docker-quoted-value", "docker-whitespace",
                   "k8s-whitespace")


@emits(*_PARSE_PROBLEMS)
def _relay_problems(parsed: ParsedFile, add: Add) -> None:
    for line, pid, msg in parsed.problems:
        add(pid, None, line, None, msg)


@emits(*_VALUE_PITFALLS)
def _dialect_pitfalls(lint_value: Callable[[Assignment, Add], None], a: Assignment, add: Add) -> None:
    lint_value(a, add)


@emits("var-not-in-release", "dynamic-value")
def _check_one(cat: Catalog, a: Assignment, add: Add, qos: Optional[QosPlan] = None,
               host: Optional[HostNames] = None) -> None:
    """The checks of one setting: its name, then its value (when known statically)."""
    if a.key.startswith("NCCL_"):
        if not check_name(cat, a, add):
            return
        if host is not None and host.nccl is not None and releases.reads(a.key, host.nccl) is False:
            added = releases.added_in(a.key)
            newer = added is not None and (parse_version(added) or (0, 0, 0)) > tuple(host.nccl)
            what = (f"{a.key} was added in NCCL {added}, newer than the host's NCCL {host.nccl_text}" if newer else
                    f"{a.key} is not read by NCCL {host.nccl_text}, the host's release "
                    f"({releases.variable_text(a.key)})")
            add("var-not-in-release", "warning", a.line, a.key, f"{what}: NCCL ignores it",
                "remove it, or give the jobs an NCCL release that reads it")
    if a.value is None or a.dynamic:
        if a.key.startswith("NCCL_"):
            what = a.dynamic or "expansion"
            add("dynamic-value", "info", a.line, a.key,
                f"{a.key}={a.raw}: value comes from a {what}; not checked")
        return
    check_value(cat, a, add)
    if qos is not None:
        check_qos(qos, a, add)
    elif host is not None and host.qos:
        check_nic_qos(host.qos, a, add)
    if host is not None:
        check_host(host, a, add)


def check_assignment(key: str, value: str, catalog: Optional[Catalog] = None) -> List[Finding]:
    """Lint's checks of one NAME=value setting given verbatim (an override: `--set`, a config
    file), without a file around it: the name, then the value. Findings have no file or line."""
    out: List[Finding] = []

    def add(fid: str, sev: Optional[str], line: int, k: Optional[str], msg: str, fix: Optional[str] = None) -> None:
        out.append(finding(fid, f"{key}={value}", msg, severity=sev, fix=fix, key=k,
                           evidence={"value": f"{key}={value}"}))

    if key.startswith(_WATCHED):
        _check_one(catalog or load_catalog(), Assignment(key, value, value, 0, "override"), add)
    return out


@emits("format-differs-from-name", "crlf-line-endings")
def _check_dialect(parsed: ParsedFile, text: str, add: Add, host: Optional[HostNames] = None) -> None:
    """How the file was read, when that may not be how it is used; CRLF line endings where the
    consumer keeps the CR."""
    if parsed.name_format and parsed.name_format != parsed.fmt and parsed.detected != "forced":
        warns = dialects.get(parsed.name_format).misread_warns
        specific = "*" in warns or parsed.fmt in warns
        add("format-differs-from-name", "warning" if specific else "info", 1, None,
            f"named like a {parsed.name_format} file, but read as {parsed.fmt} ({parsed.detected}); "
            f"if {parsed.name_format}'s reader takes this file, it reads it differently",
            f"check with --format {parsed.name_format}, or rename the file")
    dialect = dialects.get(parsed.fmt)
    consumer = dialect.consumer if dialect.keeps_cr else None
    if consumer and "\r\n" in text:
        first = text.count("\n", 0, text.index("\r\n")) + 1
        lines = text.count("\r\n")
        version = host.nccl if host is not None else None
        if host is not None and parsed.fmt == nccl_conf.NAME and releases.gate("conf-keeps-cr", version) is False:
            add("crlf-line-endings", "info", first, None,
                f"{lines} line(s) end in CRLF: NCCL {host.nccl_text} (the host's) drops the carriage return "
                f"(releases before 2.30.3 keep it in the value: {releases.fact('conf-keeps-cr').source})",
                "convert the file to LF line endings (dos2unix) if an older NCCL may read it")
            return
        add("crlf-line-endings", "error", first, None,
            f"{lines} line(s) end in CRLF and {consumer} keeps the carriage return: a value such "
            "as =bond0 becomes '=bond0\\r', which matches nothing",
            "convert the file to LF line endings (dos2unix)")





@emits("duplicate", "socket-threads-product", "ib-vars-ignored")
def _check_file(parsed: ParsedFile, add) -> None:
    by_scope: Dict[int, List[Assignment]] = {}
    for a in parsed.assignments:
        by_scope.setdefault(a.scope, []).append(a)
    dialect = dialects.get(parsed.fmt)
    for _scope, items in sorted(by_scope.items()):
        seen: Dict[str, Assignment] = {}
        for a in items:
            if a.key in seen and a.key.startswith(_WATCHED):
                prev = seen[a.key]
                if (prev.value, prev.raw) != (a.value, a.raw):
                    winner = prev if dialect.first_wins else a
                    add("duplicate", "warning", a.line, a.key,
                        f"{a.key} is also set on line {prev.line}; "
                        f"{dialect.consumer + ' keeps the first' if dialect.first_wins else 'the last one wins'} "
                        f"({winner.raw!r})", "keep one")
            elif a.key not in seen:
                seen[a.key] = a
        env = {k: x.value for k, x in seen.items() if x.value is not None}
        nth, nsk = env.get("NCCL_SOCKET_NTHREADS"), env.get("NCCL_NSOCKS_PERTHREAD")
        if nth and nsk:
            t, tw = strtoll(nth)
            s, sw = strtoll(nsk)
            if tw and sw and t * s > 64:
                add("socket-threads-product", "error", seen["NCCL_NSOCKS_PERTHREAD"].line,
                    "NCCL_NSOCKS_PERTHREAD",
                    f"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = {t} x {s} = {t * s} > 64, "
                    "more than NCCL allows", "lower one of them")
        if env.get("NCCL_IB_DISABLE", "").strip() == "1":
            ignored = sorted(k for k in env if k.startswith("NCCL_IB_") and k != "NCCL_IB_DISABLE")
            if ignored:
                add("ib-vars-ignored", "warning", seen["NCCL_IB_DISABLE"].line, "NCCL_IB_DISABLE",
                    f"NCCL_IB_DISABLE=1 turns the verbs transport off, so {', '.join(ignored)} "
                    "have no effect", "drop them, or drop NCCL_IB_DISABLE")


# --- files -----------------------------------------------------------------------------------------

@dataclass
class LintReport:
    files: List[Dict[str, object]] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def read(self) -> int:
        return sum(1 for f in self.files if f["format"] is not None)

    def counts(self) -> Dict[str, int]:
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def to_dict(self) -> Dict[str, object]:
        return {"files": self.files, "findings": [f.to_dict() for f in self.findings],
                "counts": self.counts()}


class Unreadable(Exception):
    """A file lint cannot read as text; the message says why."""


@emits("unreadable-file")
def lint_paths(paths: Sequence[str], fmt: str = "auto", qos: Optional[QosPlan] = None,
               host: Optional[HostNames] = None, read: Optional[Callable[[str], str]] = None) -> LintReport:
    """Lint files; `read(path) -> text` may be given (tests), else the files are read as UTF-8.
    A file that cannot be read is an `unreadable-file` error; the others are still linted."""
    report = LintReport()
    for path in paths:
        try:
            text = read(path) if read else read_file(path)
        except (Unreadable, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            report.files.append({"path": path, "format": None, "detected": None, "assignments": 0,
                                 "unreadable": why})
            report.findings.append(finding("unreadable-file", path, f"cannot read it: {why}",
                                           fix="check the path and its permissions", file=path,
                                           evidence={"file": path, "value": why}))
            continue
        parsed, found = lint_text(text, path, fmt, qos, host)
        report.files.append({"path": path, "format": parsed.fmt, "detected": parsed.detected,
                             "assignments": len(parsed.assignments)})
        report.findings.extend(found)
    return report


def read_file(path: str) -> str:
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input

    try:
        data = read_input(path, MAX_BYTES)
    except HostReadError as exc:
        if exc.reason.startswith("larger than"):
            raise Unreadable(f"larger than {MAX_BYTES >> 20} MiB: not an env file") from None
        raise Unreadable(exc.reason) from None
    if b"\x00" in data:
        raise Unreadable("a binary file (NUL bytes)")
    return data.decode("utf-8", "replace")
