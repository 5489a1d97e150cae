"""Which plugin file NCCL loads, per kind, from the plugins found and NCCL_<KIND>_PLUGIN.

NCCL dlopens `libnccl-<kind>.so` when NCCL_<KIND>_PLUGIN is unset, else the name or path it
gives, else `libnccl-<kind>-<name>.so`; `none` loads none (NVIDIA/nccl v2.30.7-1
src/plugin/plugin_open.cc:79-125, plugin/net.cc:258-301, plugin/env.cc:40-48).
"""

from __future__ import annotations

from typing import Dict, List, Optional

KINDS = ("net", "tuner", "profiler", "env", "gin")


def variable(kind: str) -> str:
    return f"NCCL_{kind.upper()}_PLUGIN"


def loaded(kind: str, plugins: List[dict], value: Optional[str]) -> Optional[dict]:
    """The plugin entry (Features kernel.nccl.plugins) NCCL loads for `kind` given
    NCCL_<KIND>_PLUGIN=`value` (None: unset); None when it loads none of them."""
    if value is not None and value.strip().lower() == "none":
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
