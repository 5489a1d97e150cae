"""Lint environment settings: env files, nccl.conf, job scripts, Dockerfiles, Markdown notes.

Each check is declared once in rocetune.checks.lint (id, severity, fix, source; a page
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

import ipaddress
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import nics
from ..checks import finding
from ..envfiles import dialects
from ..envfiles.dialects import nccl_conf
from ..envfiles.parsed import Assignment, ParsedFile
from ..envfiles.read import parse_text
from ..model.finding import SEVERITIES, Finding
from ..model.qos import QosPlan
from ..nccl import releases
from ..nccl.catalog import Catalog, load_catalog
from ..nccl.syntax import list_entries, strtoll
from ..nccl.versions import parse_version

_WATCHED = ("NCCL_", "UCX_", "GLOO_", "TORCH_NCCL_", "OMPI_MCA_btl_tcp_")
MAX_BYTES = 16 << 20
# Names RDMA drivers give their devices (rocetune.nics): UCX wants them as device:port.
_RDMA_NAME = nics.device_name_re()


@dataclass
class HostNames:
    """RDMA devices with their ports and network interfaces of the target host, from its
    Features document (a saved `rocetune probe --json`, or a probe of --root). None: not known,
    so not checked."""

    ib: Optional[Dict[str, List[int]]] = None
    net: Optional[List[str]] = None
    nccl: Optional[Tuple[int, int, int]] = None  # the NCCL release the host's jobs load (kernel.nccl.version)

    @classmethod
    def from_features(cls, features: dict, check_rdma: bool = True, check_netdevs: bool = True) -> HostNames:
        sources = features.get("sources") or {}
        ib = net = None
        if check_rdma and (sources.get("rdma") or {}).get("ok", True) and features.get("rdma", {}).get("devices"):
            ib = {d["name"]: sorted(p["port"] for p in d.get("ports", [])) for d in features["rdma"]["devices"]}
        if check_netdevs and (sources.get("net") or {}).get("ok", True) and features.get("net", {}).get("interfaces"):
            net = sorted(i["name"] for i in features["net"]["interfaces"])
        lib = (features.get("kernel") or {}).get("nccl")
        nccl = parse_version(lib.get("version")) if isinstance(lib, dict) else None
        return cls(ib, net, nccl)

    @property
    def empty(self) -> bool:
        return self.ib is None and self.net is None and self.nccl is None

    @property
    def nccl_text(self) -> str:
        return ".".join(str(x) for x in self.nccl) if self.nccl else "of unknown release"


Add = Callable[..., None]


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
                seen = unlisted.setdefault(fid, [0, line, severity])
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
    return [finding(fid, f"{name}:{line}", f"{count} more {fid} finding(s) in this file from line {line} on, "
                    f"not listed: only the first {MAX_LISTED} of each check are", severity=severity, file=name,
                    line=line, evidence={"file": name, "line": line, "value": str(count)})
            for fid, (count, line, severity) in sorted(unlisted.items())]


def lint_text(text: str, name: str, fmt: str = "auto", qos: Optional[QosPlan] = None,
              host: Optional[HostNames] = None,
              catalog: Optional[Catalog] = None) -> Tuple[ParsedFile, List[Finding]]:
    cat = catalog or load_catalog()
    parsed = parse_text(text, fmt, name)
    out: List[Finding] = []
    unlisted: Dict[str, List] = {}
    add = _adder(out, name, unlisted)

    for line, pid, msg in parsed.problems:
        add(pid, None, line, None, msg)
    _check_dialect(parsed, text, add, host)

    dialect = dialects.get(parsed.fmt)
    for a in parsed.assignments:
        if not a.key.startswith(_WATCHED):
            continue
        if dialect.lint_value:  # the pitfalls of how this dialect's consumer reads a value
            dialect.lint_value(a, add)
        _check_one(cat, a, add, qos, host)
    _check_file(parsed, add)
    out += _unlisted_findings(unlisted, name)
    out.sort(key=lambda f: (f.line or 0, SEVERITIES.index(f.severity), f.id, f.key or ""))
    return parsed, out


def _check_one(cat: Catalog, a: Assignment, add: Add, qos: Optional[QosPlan] = None,
               host: Optional[HostNames] = None) -> None:
    """The checks of one setting: its name, then its value (when known statically)."""
    if a.key.startswith("NCCL_"):
        if not _check_name(cat, a, add):
            return
        if host is not None and host.nccl is not None and releases.reads(a.key, host.nccl) is False:
            add("var-not-in-release", "warning", a.line, a.key,
                f"{a.key} is not read by NCCL {host.nccl_text}, the host's release "
                f"({releases.variable_text(a.key)}): NCCL ignores it",
                "remove it, or give the jobs an NCCL release that reads it")
    if a.value is None or a.dynamic:
        if a.key.startswith("NCCL_"):
            what = a.dynamic or "expansion"
            add("dynamic-value", "info", a.line, a.key,
                f"{a.key}={a.raw}: value comes from a {what}; not checked")
        return
    _check_value(cat, a, add)
    if qos is not None:
        _check_qos(qos, a, add)
    if host is not None:
        _check_host(host, a, add)


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
            add("removed-name", "error", a.line, key,
                f"{key} was removed from NCCL ({r['note']}); it has no effect", fix)
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


def _check_value(cat: Catalog, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key == "GLOO_SOCKET_IFNAME" and v[:1] in ("=", "^"):
        add("gloo-ifname-syntax", "error", a.line, key,
            f"Gloo takes exact interface names: {v!r} names an interface called {v.split(',')[0]!r}",
            f"write {v.lstrip('^=')}")
        return
    if key == "UCX_NET_DEVICES":
        bare = [e for e in v.split(",") if e and ":" not in e and _RDMA_NAME.match(e)]
        if bare:
            add("ucx-port-missing", "warning", a.line, key,
                f"{', '.join(bare)} looks like an RDMA device without its port: UCX lists RDMA devices "
                f"as device:port ({bare[0]}:1), so a bare name selects only a network interface of "
                "that name", f"write {bare[0]}:1 (with --features or --root the ports are checked)")
    info = cat.info(key)
    if info is None:
        return
    if v == "":
        add("empty-value", "warning", a.line, key, f"{key} is empty: NCCL treats it as unset",
            "remove it or give a value")
        return
    if _check_kind(info, a, key, v, add):
        _check_list_syntax(a, key, v, add)


def _check_kind(info: dict, a: Assignment, key: str, v: str, add) -> bool:
    """The value against the catalog's kind (int, enum, path level); False when a finding about
    the number makes the checks of its syntax moot."""
    kind = info.get("kind")
    if kind == "int":
        n, whole = strtoll(v)
        if not whole:
            add("not-a-number", "error", a.line, key,
                f"{key}={v!r} is not an integer: NCCL reads it as {n}", "write a plain integer (0x.. for hex)")
            return False
        lo, hi = info.get("min"), info.get("max")
        if lo is not None and hi is not None and not lo <= n <= hi:
            add("out-of-range", "error", a.line, key, f"{key}={n} is outside {lo}..{hi}",
                f"use a value in {lo}..{hi}")
            return False
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
    return True


def _check_list_syntax(a: Assignment, key: str, v: str, add) -> None:
    """NCCL's address range, interface and device lists: what NCCL ignores or reads as prefixes."""
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
    if key not in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS", "NCCL_IB_FIFO_TC", "NCCL_IB_SL", "NCCL_GIN_IB_TC"):
        return
    n, whole = strtoll(v)
    if not whole or v.lower() == "auto":
        return
    if key == "NCCL_GIN_IB_TC" and n == -1:
        return  # -1: GIN takes NCCL_IB_TC's class (v2.30.7-1 src/transport/net_ib/gin.cc:191, 283)
    src = f"the QoS plan ({qos.source})"
    if key in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS", "NCCL_GIN_IB_TC"):
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
    if key == "NCCL_IB_HCA" and host.nccl is not None:
        railed = [e for e in list_entries(v)[2] if e.count(":") >= 2]
        if railed and releases.gate("rail-ids-in-ib-hca", host.nccl) is False:
            add("hca-rail-ids-ignored", "info", a.line, key,
                f"{', '.join(railed[:3])}{' ...' if len(railed) > 3 else ''}: rail and plane ids after the port "
                f"are read from NCCL 2.30.7; NCCL {host.nccl_text}, the host's, skips them, so NCCL_CROSS_NIC=0 "
                "tells rails apart by asic and port alone (NVIDIA/nccl#2097)",
                "keep them for 2.30.7 and later, or upgrade NCCL")
    if key == "NCCL_IB_HCA" and host.ib is not None:
        _check_host_hca(host, a, key, v, add)
    elif key == "UCX_NET_DEVICES" and v.lower() != "all":
        _check_host_ucx(host, a, key, v, add)
    elif key in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include") \
            and host.net is not None:
        _check_host_ifnames(host, a, key, v, add)


def _check_host_hca(host, a: Assignment, key: str, v: str, add) -> None:
    """NCCL_IB_HCA's devices and ports against the host's RDMA devices."""
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
                f"(has {', '.join(names) or 'none'})", "use a device the host has ('rocetune topo' lists them)")
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


def _check_host_ucx(host, a: Assignment, key: str, v: str, add) -> None:
    """UCX_NET_DEVICES's device:port entries and interfaces against the host."""
    for e in [x for x in v.split(",") if x]:
        dev, _, port = e.partition(":")
        if not port and host.ib is not None and dev in host.ib:
            add("ucx-port-missing", "error", a.line, key,
                f"UCX_NET_DEVICES names the RDMA device {dev!r} without its port: UCX lists RDMA "
                f"devices as device:port, so {dev!r} selects nothing",
                f"write {', '.join(f'{dev}:{p}' for p in host.ib[dev]) or dev + ':1'}")
        elif host.ib is not None and port:
            if dev not in host.ib:
                add("ucx-device-not-found", "error", a.line, key,
                    f"UCX_NET_DEVICES names {dev!r}, not an RDMA device here "
                    f"(has {', '.join(sorted(host.ib)) or 'none'})",
                    "use device:port of a device the host has")
            elif port.isdigit() and int(port) not in host.ib[dev]:
                add("ucx-device-not-found", "error", a.line, key, f"{dev} has no port {port}", "fix the port")
        elif not port and host.net is not None and dev not in host.net:
            add("ifname-not-found", "error", a.line, key, f"no interface {dev!r} on this host",
                f"use one of {_few(host.net)}")


def _check_host_ifnames(host, a: Assignment, key: str, v: str, add) -> None:
    """Socket interface lists (NCCL, Gloo, Open MPI's TCP BTL) against the host's interfaces."""
    excl, exact, entries = list_entries(v) if key == "NCCL_SOCKET_IFNAME" else (False, True, v.split(","))
    if excl:
        return
    for e in [x.split(":")[0] for x in entries if x]:
        ok = e in host.net if exact else any(n.startswith(e) for n in host.net)
        if not ok:
            add("ifname-not-found", "error", a.line, key,
                f"no interface {'named' if exact else 'starting with'} {e!r} on this host",
                f"use one of {_few(host.net)}")


def _few(names: List[str], n: int = 8) -> str:
    return ", ".join(names[:n]) + (f" ... ({len(names)} in all)" if len(names) > n else "")


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
