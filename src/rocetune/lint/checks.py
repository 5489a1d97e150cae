"""Lint environment settings: env files, nccl.conf, job scripts, Dockerfiles, Markdown notes.

Each check has a stable id (docs/lint.md), a severity and a fix. `error` means the setting does
not do what its author meant (NCCL ignores it, reads it as another number, or it contradicts the
fabric's QoS plan); `warning` means it probably does not; `info` is worth knowing. Vendors'
published settings lint without errors: plugin variables, templates (`{{ x }}`) and shell
expansions are recognised rather than flagged.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..envfiles.read import Assignment, ParsedFile, parse_text
from ..model.qos import QosPlan
from ..nccl.catalog import Catalog, load_catalog
from ..nccl.syntax import list_entries, strtoll

SEVERITIES = ("error", "warning", "info")
_WATCHED = ("NCCL_", "UCX_", "GLOO_", "TORCH_NCCL_", "OMPI_MCA_btl_tcp_")

# Problems the parsers report, by id: severity and fix.
_PARSE_PROBLEMS = {
    "conf-whitespace": ("error", "write NAME=value with no spaces around '='"),
    "conf-bad-name": ("error", "each line is NAME=value; comments start with '#' in column 1"),
    "conf-ignored-line": ("info", "remove the line or make it a '#' comment"),
    "docker-bad-name": ("error", "each line is NAME=value"),
    "deepspeed-blank-line": ("error", "remove blank lines from .deepspeed_env"),
    "deepspeed-no-equals": ("error", "only NAME=value lines: .deepspeed_env allows no comments"),
    "deepspeed-bad-name": ("error", "each line is NAME=value"),
    "k8s-unreadable": ("error", "write data entries as NAME: \"value\""),
    "json-invalid": ("error", "write a flat JSON object of strings"),
    "sh-syntax": ("warning", "close the quote"),
}


@dataclass
class LintFinding:
    id: str
    severity: str
    file: str
    line: int
    key: Optional[str]
    message: str
    fix: Optional[str] = None

    def to_dict(self) -> Dict[str, object]:
        return {"id": self.id, "severity": self.severity, "file": self.file, "line": self.line,
                "key": self.key, "message": self.message, "fix": self.fix}

    def text(self) -> str:
        where = f"{self.file}:{self.line}"
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{where}: {self.severity} {self.id}: {self.message}{fix}"


class HostNames:
    """RDMA devices/ports and network interfaces of the host under --root, for name checks."""

    def __init__(self, root: HostRoot, check_netdevs: bool):
        self.root = root
        self.ib: Optional[Dict[str, List[int]]] = None
        if root.is_dir("/sys/class/infiniband"):
            self.ib = {}
            for dev in root.listdir("/sys/class/infiniband"):
                ports = [int(p) for p in root.listdir(f"/sys/class/infiniband/{dev}/ports") if p.isdigit()]
                self.ib[dev] = sorted(ports)
        self.net: Optional[List[str]] = None
        if check_netdevs and root.is_dir("/sys/class/net"):
            self.net = root.listdir("/sys/class/net")


def lint_text(text: str, name: str, fmt: str = "auto", qos: Optional[QosPlan] = None,
              host: Optional[HostNames] = None,
              catalog: Optional[Catalog] = None) -> Tuple[ParsedFile, List[LintFinding]]:
    cat = catalog or load_catalog()
    parsed = parse_text(text, fmt, name)
    out: List[LintFinding] = []

    def add(fid: str, sev: str, line: int, key: Optional[str], msg: str, fix: Optional[str] = None):
        out.append(LintFinding(fid, sev, name, line, key, msg, fix))

    for line, pid, msg in parsed.problems:
        sev, fix = _PARSE_PROBLEMS.get(pid, ("warning", None))
        add(pid, sev, line, None, msg, fix)

    for a in parsed.assignments:
        if not a.key.startswith(_WATCHED):
            continue
        _check_format_value(parsed.fmt, a, add)
        if parsed.fmt == "nccl-conf" and not a.key.startswith("NCCL_"):
            add("conf-not-nccl", "warning", a.line, a.key,
                f"{a.key} in an NCCL config file: only NCCL reads it, when a communicator starts; "
                "UCX, Gloo and MPI have read their settings by then", "set it in the job environment")
        if a.key.startswith("NCCL_"):
            known = _check_name(cat, a, add)
            if not known:
                continue
        if a.value is None or a.dynamic:
            if a.key.startswith("NCCL_"):
                what = a.dynamic or "expansion"
                add("dynamic-value", "info", a.line, a.key,
                    f"{a.key}={a.raw}: value comes from a {what}; not checked")
            continue
        _check_value(cat, a, add)
        if qos is not None:
            _check_qos(qos, a, add)
        if host is not None:
            _check_host(host, a, add)
    _check_file(parsed, add)
    out.sort(key=lambda f: (f.line, SEVERITIES.index(f.severity), f.id, f.key or ""))
    return parsed, out


# --- checks ---------------------------------------------------------------------------------------

def _check_name(cat: Catalog, a: Assignment, add) -> bool:
    key = a.key
    if cat.known(key):
        return True
    r = cat.retired(key)
    if r:
        repl = r.get("replacement")
        status = r["status"]
        fix = f"use {repl}" if repl else "remove it"
        if status == "removed":
            add("removed-name", "error", a.line, key, f"{key} was removed from NCCL ({r['note']}); it has no effect", fix)
        elif status == "misspelled":
            add("misspelled-name", "error", a.line, key, f"{key} does not exist ({r['note']}); NCCL ignores it",
                f"rename it {repl}")
        elif status == "pytorch":
            add("pytorch-name", "warning", a.line, key,
                f"{key} is {r['note']}; current PyTorch reads {repl}", f"rename it {repl}")
        else:
            add("nonexistent-name", "error", a.line, key, f"{key} is not an NCCL variable: {r['note']}", fix)
        return False
    plugin = cat.plugin(key)
    if plugin:
        add("plugin-name", "info", a.line, key, f"{key} is read by the {plugin}, not by libnccl")
        return False
    s = cat.suggest(key)
    if s:
        add("misspelled-name", "error", a.line, key,
            f"{key} is not an NCCL variable; NCCL ignores it", f"did you mean {s[0]}?")
        return False
    add("unknown-name", "warning", a.line, key,
        f"{key} is not read by NCCL {cat.nccl_version} (a plugin's, an older or newer release's, "
        "or a typo)", "check the name against the NCCL documentation")
    return False


def _check_format_value(fmt: str, a: Assignment, add) -> None:
    v = a.raw
    if fmt in ("nccl-conf", "docker"):
        consumer = "NCCL" if fmt == "nccl-conf" else "docker"
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            add(f"{'conf' if fmt == 'nccl-conf' else 'docker'}-quoted-value", "error", a.line, a.key,
                f"{consumer} keeps the quotes: {a.key} becomes {v!r}", "remove the quotes")
        elif v != v.strip():
            add(f"{'conf' if fmt == 'nccl-conf' else 'docker'}-whitespace", "error", a.line, a.key,
                f"{consumer} keeps the surrounding whitespace of {v!r}"
                + (" (a CRLF line ending?)" if v.endswith("\r") else ""),
                "remove it (and convert CRLF line endings)")


def _check_value(cat: Catalog, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key == "GLOO_SOCKET_IFNAME" and v[:1] in ("=", "^"):
        add("gloo-ifname-syntax", "error", a.line, key,
            f"Gloo takes exact interface names: {v!r} names an interface called {v.split(',')[0]!r}",
            f"write {v.lstrip('^=')}")
        return
    info = cat.info(key)
    if info is None:
        return
    if v == "":
        add("empty-value", "warning", a.line, key, f"{key} is empty: NCCL treats it as unset", "remove it or give a value")
        return
    kind = info.get("kind")
    if kind == "int":
        n, whole = strtoll(v)
        if not whole:
            add("not-a-number", "error", a.line, key,
                f"{key}={v!r} is not an integer: NCCL reads it as {n}", "write a plain integer (0x.. for hex)")
            return
        lo, hi = info.get("min"), info.get("max")
        if lo is not None and not lo <= n <= hi:
            add("out-of-range", "error", a.line, key, f"{key}={n} is outside {lo}..{hi}",
                f"use a value in {lo}..{hi}")
            return
        if key == "NCCL_IB_TIMEOUT" and n == 0:
            add("out-of-range", "warning", a.line, key,
                "NCCL_IB_TIMEOUT=0 disables the transport timeout: a lost peer hangs the job forever",
                "use NCCL's default 20 (about 4 s) or more")
    elif kind == "enum" and info.get("choices"):
        choices = info["choices"]
        ok = v in choices if info.get("case_sensitive") else v.upper() in [c.upper() for c in choices]
        if not ok:
            fallback = " (NCCL silently uses AF_INET)" if "FAMILY" in key else ""
            add("bad-value", "error", a.line, key, f"{key}={v!r} is not one of {', '.join(choices)}{fallback}",
                f"use one of {', '.join(choices)}")
    elif kind == "path-level":
        if v.upper() in info["choices"]:
            pass
        else:
            n, whole = strtoll(v)
            if whole and 0 <= n <= info.get("max_legacy_int", 5):
                level = ["LOC", "PIX", "PXB", "PHB", "SYS", "SYS"][n]
                add("legacy-level", "info", a.line, key, f"{key}={v} is a legacy number meaning {level}",
                    f"write {level}")
            else:
                add("bad-value", "error", a.line, key,
                    f"{key}={v!r} is not a path level ({', '.join(info['choices'])})", "use a level name")
    if key == "NCCL_IB_ADDR_RANGE":
        try:
            if "/" not in v:
                raise ValueError
            ipaddress.ip_network(v, strict=False)
        except ValueError:
            add("bad-value", "error", a.line, key,
                f"NCCL_IB_ADDR_RANGE={v!r} is not a CIDR range; NCCL ignores a value without '/'",
                "write it like 10.0.0.0/16")
    elif key == "NCCL_SOCKET_IFNAME":
        if len(v) <= 1:
            add("ifname-ignored", "error", a.line, key,
                f"NCCL ignores NCCL_SOCKET_IFNAME values of one character ({v!r})", "give the full interface name")
        else:
            excl, exact, _ = list_entries(v)
            if not exact and not excl:
                first = v.split(",")[0]
                add("prefix-match", "info", a.line, key,
                    f"interface names are prefixes: {first!r} also selects {first}.100, {first}1 ... "
                    "if they exist", f"write ={v} for exact names")
    elif key == "NCCL_IB_HCA":
        excl, exact, entries = list_entries(v)
        if not exact and not excl and entries:
            first = entries[0].split(":")[0]
            add("prefix-match", "info", a.line, key,
                f"device names are prefixes: {first!r} also selects every device whose name starts "
                f"with it ({first}0, {first}1 ... if they exist)", f"write ={v} for exact names")
    elif key in ("NCCL_ALGO", "NCCL_PROTO"):
        add("forced-algorithm", "info", a.line, key,
            f"{key}={v} applies to every collective and message size; NCCL otherwise tunes per size",
            "keep it only if a benchmark on this fabric shows a gain")
    elif key == "NCCL_IB_GID_INDEX":
        add("gid-index-pinned", "info", a.line, key,
            f"GID index pinned to {v}: right while every node's GID table has that layout (per-pod "
            "tables in Kubernetes differ); NCCL >= 2.21.5 selects the IPv4 RoCE v2 GID itself")


def _check_qos(qos: QosPlan, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key not in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS", "NCCL_IB_FIFO_TC", "NCCL_IB_SL"):
        return
    n, whole = strtoll(v)
    if not whole or v.lower() == "auto":
        return
    src = f"the QoS plan ({qos.source})"
    if key in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS"):
        if n >> 2 != qos.data.dscp:
            add("tc-contradicts-qos", "error", a.line, key,
                f"{key}={n} sends DSCP {n >> 2}; {src} has RoCE data on DSCP {qos.data.dscp}",
                f"set {key}={qos.traffic_class}")
        elif n & 3 != qos.ecn:
            add("tc-ecn-differs", "warning", a.line, key,
                f"{key}={n} marks ECN {n & 3}, {src} uses {qos.ecn} ({qos.ecn_text})",
                f"set {key}={qos.traffic_class}")
    elif key == "NCCL_IB_FIFO_TC" and qos.cts_dscp is not None and n >> 2 != qos.cts_dscp:
        add("tc-contradicts-qos", "error", a.line, key,
            f"NCCL_IB_FIFO_TC={n} sends DSCP {n >> 2}; {src} puts credit messages on DSCP {qos.cts_dscp}",
            f"set NCCL_IB_FIFO_TC={qos.fifo_traffic_class}")
    elif key == "NCCL_IB_SL" and qos.trust == "pcp" and (n & 7) != qos.data.priority:
        add("tc-contradicts-qos", "error", a.line, key,
            f"NCCL_IB_SL={n} gives VLAN priority {n & 7}; {src} trusts PCP with data on priority "
            f"{qos.data.priority}", f"set NCCL_IB_SL={qos.data.priority}")


def _check_host(host: HostNames, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key == "NCCL_IB_HCA" and host.ib is not None:
        excl, exact, entries = list_entries(v)
        names = sorted(host.ib)
        for e in entries:
            parts = e.split(":")
            dev = parts[0]
            port = parts[1] if len(parts) > 1 and parts[1] else None
            matches = [n for n in names if (n == dev if exact else n.startswith(dev))]
            sev = "warning" if excl else "error"
            if not matches:
                add("hca-not-found", sev, a.line, key,
                    f"no RDMA device {'named' if exact else 'starting with'} {dev!r} on this host "
                    f"(has {', '.join(names) or 'none'})", "use the names in /sys/class/infiniband")
                continue
            if not exact and len(matches) > 1 and dev in matches:
                extra = [m for m in matches if m != dev]
                add("prefix-match", "warning", a.line, key,
                    f"{dev!r} also selects {', '.join(extra)} on this host", f"write ={v.lstrip('^=')}")
            if port is not None and port.isdigit():
                for m in matches:
                    if int(port) not in host.ib[m]:
                        add("hca-port-not-found", sev, a.line, key,
                            f"{m} has no port {port} (ports {host.ib[m]})", "fix the port number")
    elif key == "UCX_NET_DEVICES" and v.lower() != "all":
        for e in [x for x in v.split(",") if x]:
            dev, _, port = e.partition(":")
            if host.ib is not None and port:
                if dev not in host.ib:
                    add("ucx-device-not-found", "error", a.line, key,
                        f"UCX_NET_DEVICES names {dev!r}, not an RDMA device here", "use device:port from /sys/class/infiniband")
                elif port.isdigit() and int(port) not in host.ib[dev]:
                    add("ucx-device-not-found", "error", a.line, key, f"{dev} has no port {port}", "fix the port")
            elif not port and host.net is not None and dev not in host.net:
                add("ifname-not-found", "error", a.line, key, f"no interface {dev!r} on this host",
                    "use a name from /sys/class/net")
    elif key in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include") \
            and host.net is not None:
        excl, exact, entries = list_entries(v) if key == "NCCL_SOCKET_IFNAME" else (False, True, v.split(","))
        if excl:
            return
        for e in [x.split(":")[0] for x in entries if x]:
            ok = e in host.net if exact else any(n.startswith(e) for n in host.net)
            if not ok:
                add("ifname-not-found", "error", a.line, key,
                    f"no interface {'named' if exact else 'starting with'} {e!r} on this host",
                    "use a name from /sys/class/net")


def _check_file(parsed: ParsedFile, add) -> None:
    by_scope: Dict[int, List[Assignment]] = {}
    for a in parsed.assignments:
        by_scope.setdefault(a.scope, []).append(a)
    first_wins = parsed.fmt == "nccl-conf"
    for scope, items in sorted(by_scope.items()):
        seen: Dict[str, Assignment] = {}
        for a in items:
            if a.key in seen and a.key.startswith(_WATCHED):
                prev = seen[a.key]
                if (prev.value, prev.raw) != (a.value, a.raw):
                    winner = prev if first_wins else a
                    add("duplicate", "warning", a.line, a.key,
                        f"{a.key} is also set on line {prev.line}; "
                        f"{'NCCL keeps the first' if first_wins else 'the last one wins'} "
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
    files: List[Dict[str, object]]
    findings: List[LintFinding]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    def counts(self) -> Dict[str, int]:
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def to_dict(self) -> Dict[str, object]:
        return {"files": self.files, "findings": [f.to_dict() for f in self.findings],
                "counts": self.counts()}


def lint_paths(paths: Sequence[str], fmt: str = "auto", qos: Optional[QosPlan] = None,
               host: Optional[HostNames] = None, read=None) -> LintReport:
    """Lint files; `read(path) -> text` may be given (tests), else the files are read as UTF-8."""
    files: List[Dict[str, object]] = []
    findings: List[LintFinding] = []
    for path in paths:
        text = read(path) if read else _read(path)
        parsed, found = lint_text(text, path, fmt, qos, host)
        files.append({"path": path, "format": parsed.fmt, "assignments": len(parsed.assignments)})
        findings.extend(found)
    return LintReport(files, findings)


def _read(path: str) -> str:
    from ..errors import ExitCode, RocetuneError

    try:
        with open(path, "rb") as fh:
            data = fh.read(16 << 20)
    except OSError as exc:
        raise RocetuneError(f"{path}: cannot read: {exc.strerror or exc}", code=ExitCode.INPUT) from None
    if b"\x00" in data:
        raise RocetuneError(f"{path}: binary file", code=ExitCode.INPUT)
    return data.decode("utf-8", "replace")
