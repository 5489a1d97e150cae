"""Which plugin file NCCL loads, per kind, from the plugins found and NCCL_<KIND>_PLUGIN, and the
plugin API versions each release takes.

NCCL dlopens `libnccl-<kind>.so` when NCCL_<KIND>_PLUGIN is unset, else the name or path it
gives, else `libnccl-<kind>-<name>.so`; `none` loads none (NVIDIA/nccl v2.30.7-1
src/plugin/plugin_open.cc:79-125, plugin/net.cc:258-301, plugin/env.cc:40-48). The log plugin (2.32)
is loaded only when NCCL_LOG_PLUGIN names it: unset, nothing is probed.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

KINDS = ("net", "tuner", "profiler", "env", "gin", "rma", "log")
NO_DEFAULT = ("log",)  # kinds with no default libnccl-<kind>.so load

# The newest plugin API version of each kind, by the release that first takes it, read as the
# src/plugin/<kind>/<kind>_v<N>.cc files at the tags (from v2.28.3-1, the first with one file per version,
# to v2.30.7-1) and in
# v2.31.2-1's tree at 889806836 (the public code index: profiler_v7.cc, rma_v15.cc); the log plugin's
# ncclLogPlugin_v1 from a 2.32-era tree of the code index (commit not identified). NCCL also takes the
# older versions of each kind (one file per version).
API_VERSIONS: Dict[str, List[Tuple[str, int]]] = {
    "net": [("2.28.3", 11), ("2.30.3", 12)],
    "tuner": [("2.28.3", 5), ("2.30.3", 6)],
    "profiler": [("2.28.3", 5), ("2.29.2", 6), ("2.31.2", 7)],
    "env": [("2.28.7", 1), ("2.30.7", 2)],
    "gin": [("2.29.7", 12), ("2.30.3", 13), ("2.30.7", 14)],
    "rma": [("2.30.7", 14), ("2.31.2", 15)],
    "log": [("2.32.3", 1)],
}


def api_version(kind: str, version: Optional[Tuple[int, ...]]) -> Optional[int]:
    """The newest `kind` plugin API NCCL `version` takes; None when the kind is unknown to it or the
    release is unknown, or older than the table."""
    if version is None:
        return None
    best = None
    for since, api in API_VERSIONS.get(kind, []):
        if tuple(int(x) for x in since.split(".")) <= tuple(version)[:3]:
            best = api
    return best


def variable(kind: str) -> str:
    return f"NCCL_{kind.upper()}_PLUGIN"


def loaded(kind: str, plugins: List[dict], value: Optional[str]) -> Optional[dict]:
    """The plugin entry (Features kernel.nccl.plugins) NCCL loads for `kind` given
    NCCL_<KIND>_PLUGIN=`value` (None: unset); None when it loads none of them."""
    if value is not None and value.strip().lower() == "none":
        return None
    if kind in NO_DEFAULT and not value:
        return None
    mine = [p for p in plugins if p.get("kind") == kind]
    if value:
        wanted = {value, f"libnccl-{kind}-{value}.so"}
        return next((p for p in mine if p["path"] == value or wanted & set(p.get("names") or [])), None)
    return next((p for p in mine if f"libnccl-{kind}.so" in (p.get("names") or [])), None)


def loaded_all(features: dict, declared: Optional[Dict[str, str]] = None) -> Dict[str, dict]:
    """kind -> the plugin NCCL loads, from a Features document: the host owner's declared
    NCCL_<KIND>_PLUGIN first, else the probing process's."""
    nccl = (features.get("kernel") or {}).get("nccl") or {}
    plugins = [p for p in nccl.get("plugins") or [] if isinstance(p, dict)]
    env = dict(nccl.get("plugin_env") or {})
    if declared is None:
        declared = {}
        for f in (features.get("declared") or {}).get("files", []):
            if not f.get("ignored"):
                for k, v in (f.get("values") or {}).items():
                    declared.setdefault(k, v)
    out = {}
    for kind in KINDS:
        var = variable(kind)
        plug = loaded(kind, plugins, declared.get(var, env.get(var)))
        if plug is not None:
            out[kind] = plug
    return out
