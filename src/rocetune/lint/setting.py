"""Lint's checks of one setting against NCCL's catalog: its name (removed, misspelled, a plugin's,
unknown to the release), then its value (a number NCCL reads otherwise, out of range, not a
choice, a list NCCL reads as prefixes)."""

from __future__ import annotations

import ipaddress
from typing import Callable, Optional

from .. import nics
from ..checks import finding
from ..checks.binding import emits
from ..envfiles.parsed import Assignment
from ..model.finding import Finding
from ..nccl.catalog import Catalog
from ..nccl.syntax import list_entries, strtoll

Add = Callable[..., None]
# Names RDMA drivers give their devices (rocetune.nics): UCX wants them as device:port.
RDMA_NAME = nics.device_name_re()


@emits("removed-name", "misspelled-name", "pytorch-name", "nonexistent-name", "plugin-name", "unknown-name")
def check_name(cat: Catalog, a: Assignment, add) -> bool:
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
        f"{key} is not read by NCCL up to {cat.newest} (a plugin's, an older or newer release's, "
        "or a typo)", "check the name against the NCCL documentation")
    return False


@emits("gloo-ifname-syntax", "ucx-port-missing", "empty-value")
def check_value(cat: Catalog, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key == "GLOO_SOCKET_IFNAME" and v[:1] in ("=", "^"):
        add("gloo-ifname-syntax", "error", a.line, key,
            f"Gloo takes exact interface names: {v!r} names an interface called {v.split(',')[0]!r}",
            f"write {v.lstrip('^=')}")
        return
    if key == "UCX_NET_DEVICES":
        bare = [e for e in v.split(",") if e and ":" not in e and RDMA_NAME.match(e)]
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


@emits("not-a-number", "out-of-range", "bad-value", "legacy-level")
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


@emits("bad-value", "ifname-ignored", "prefix-match", "forced-algorithm", "gid-index-pinned")
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
    elif key == "NCCL_IB_GID_INDEX" and strtoll(v) == (0, True):
        add("gid-index-pinned", "warning", a.line, key,
            "GID index pinned to 0: in every RoCE port's GID table index 0 is the link-local fe80 GID "
            "(RoCE v1 on mlx5), which does not cross a router; the IPv4 RoCE v2 GID is at another index",
            "leave it unset on NCCL >= 2.21.5; otherwise derive it per node (rule nccl-ib-gid-index)")
    elif key == "NCCL_IB_GID_INDEX":
        add("gid-index-pinned", "info", a.line, key,
            f"GID index pinned to {v}: right while every node's GID table has that layout (per-pod "
            "tables in Kubernetes differ); NCCL >= 2.21.5 selects the IPv4 RoCE v2 GID itself")


@emits("unknown-name")
def unknown_override(cat: Catalog, key: str, origin: Optional[str]) -> Finding:
    """An override (`--set`, a config file) of an NCCL_ name the catalog's release does not read."""
    return finding("unknown-name", key, f"{key} is not read by NCCL up to {cat.newest}: "
                   f"{cat.describe_unknown(key)}", key=key, rule="override", evidence={"origin": origin})
