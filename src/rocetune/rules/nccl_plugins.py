"""nccl-plugins: the plugins NCCL will load on this host, and NCCL_NET_PLUGIN where a choice must be
made.

NCCL dlopens one plugin per kind: `libnccl-<kind>.so` when NCCL_<KIND>_PLUGIN is unset, else the
name or path it gives, or `libnccl-<kind>-<name>.so`; `none` loads none (v2.30.7-1
src/plugin/plugin_open.cc:79-125; plugin/net.cc:258-301 for net, plugin/env.cc:40-48 for env).
The probe lists the plugin files where dlopen finds them (kernel.nccl.plugins); the variable is
the host owner's declaration (nccl.conf, a vendor env file) or the probing process's.

* env (2.28.7+, release table `env-plugin`): an env plugin answers every variable NCCL reads, so
  what rocetune writes into the env or nccl.conf may not be what NCCL uses: a warning.
* net: a net plugin NCCL loads carries the network traffic. Where the plan runs NCCL over its own
  IB/RoCE transport (compute ports chosen, NCCL_IB_* planned) and a default-named
  `libnccl-net.so` would be loaded without anyone choosing it, the env sets NCCL_NET_PLUGIN=none
  so the transport the plan is made for carries the traffic -- unless the plugin is Mellanox's
  IB plugin (HPC-X's `nccl_rdma_sharp_plugin`, Azure's `nccl-rdma-sharp-plugins`: IBext, which reads
  NCCL_IB_* itself and adds SHARP), which is kept with a note. `none` also drops a tuner, GIN or RMA
  the library provides; the way to keep the plugin is said as the planned release reads the
  variable (a path from 2.21.5). A plugin the owner chose (NCCL_NET_PLUGIN declared) is kept; a plugin on
  some nodes only is what fleet's `nccl.plugins` fact shows (NVIDIA/nccl#1634: such a job hung).
  Hosts whose vendor plugin is the network (AWS EFA, GCP gVNIC) are left alone.
* any kind: a plugin in a place another user controls (`controlled_by`) is a warning: it runs
  inside every job that loads it.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from ..nccl import releases
from ..nccl.plugins import loaded, loaded_all  # noqa: F401 (loaded: the rule's page names it)

ID = "nccl-plugins"


for _id, _sev, _also, _title, _checks, _why, _fix in (
    ("nccl-env-plugin", "warning", (), "NCCL loads an env plugin",
     "An env plugin (libnccl-env.so, or what NCCL_ENV_PLUGIN names) where NCCL's dlopen finds it, for NCCL "
     "2.28.7 and later.",
     "The env plugin answers every variable NCCL reads: the env file and nccl.conf rocetune writes may not be "
     "what NCCL uses, and no NCCL log line says which value came from where.",
     "check what the plugin returns for the plan's variables (doctor --nccl-log shows what NCCL read), or set "
     "NCCL_ENV_PLUGIN=none for jobs that must run with the plan"),
    ("nccl-net-plugin", "warning", ("info",), "A net plugin takes the traffic the plan gives NCCL's IB transport",
     "A net plugin NCCL loads (libnccl-net.so by default, or what NCCL_NET_PLUGIN names) on a host whose plan runs "
     "NCCL over its own IB/RoCE transport.",
     "The plugin carries every network byte: NCCL_IB_* settings apply only if it reads them, and a plugin "
     "present on some nodes only has hung jobs (NVIDIA/nccl#1634).",
     "keep NCCL_NET_PLUGIN=none from the env (info: the env sets it), or plan for the plugin and --set "
     "NCCL_NET_PLUGIN=<path>"),
    ("nccl-plugin-other-user", "warning", (), "An NCCL plugin in a place another user controls",
     "Each NCCL plugin found: under /home/<user>, below a directory writable by a group or everyone, or owned "
     "by another user than root.",
     "A plugin is code NCCL runs inside every job that loads it; whoever can write it runs code in everyone's jobs.",
     "install plugins where only root writes, or keep them out of the loader's path (LD_LIBRARY_PATH, "
     "ld.so.cache) of other users' jobs"),
):
    declare(
        id=_id, kind="rule", severity=_sev,
        also=_also,
        severity_note="info where the env sets NCCL_NET_PLUGIN=none" if _also else "",
        by=("nccl-plugins",),
        title=_title,
        checks=_checks,
        reads="The plugins the probe found (Features `kernel.nccl.plugins`, `plugin_env`) and the "
              "NCCL_<KIND>_PLUGIN the host's owner declared.",
        why=_why,
        fix=_fix,
        source="NVIDIA/nccl v2.30.7-1 src/plugin/plugin_open.cc:79-125 (names tried), src/plugin/net.cc"
               ":258-301 (NCCL_NET_PLUGIN, 'none'), src/plugin/env.cc:40-48 (NCCL_ENV_PLUGIN); "
               "docs/rules/nccl-plugins.md.",
    )
# Mellanox's nccl-rdma-sharp-plugins (IBext), as HPC-X installs it (`nccl_rdma_sharp_plugin`) and as Azure's
# HPC images do (`/usr/local/nccl-rdma-sharp-plugins/lib`: the Azure ND A100 v4 benchmark command of
# tests/fixtures/expert/azure-nd96asr-v4); compared with '-' read as '_', case aside
_IB_PLUGIN_HINTS = ("nccl_rdma_sharp_plugin", "hpcx")


def _ib_plugin(path: str) -> bool:
    norm = path.lower().replace("-", "_")
    return any(h in norm for h in _IB_PLUGIN_HINTS)


@emits("nccl-plugin-other-user", "nccl-env-plugin")
def rule(features: dict, ctx) -> List[Decision]:
    nccl = (features.get("kernel") or {}).get("nccl") or {}
    plugins = [p for p in nccl.get("plugins") or [] if isinstance(p, dict)]
    env = dict(nccl.get("plugin_env") or {})
    declared = {k: v["value"] for k, v in ctx.declared.items()}
    version = ctx.host.nccl_version()
    chosen = loaded_all(features, declared)
    ctx.report({"loaded": {k: p["path"] for k, p in sorted(chosen.items())}, "plugins": len(plugins)})
    for plug in plugins:
        if plug.get("controlled_by"):
            ctx.finding("nccl-plugin-other-user", "warning", plug["path"],
                        f"the NCCL {plug.get('kind') or ''} plugin {plug['path']} lies where {plug['controlled_by']} "
                        "controls it: it runs inside every job that loads it", plugin=plug)
    env_plug = chosen.get("env")
    if env_plug is not None and releases.gate("env-plugin", version) is not False:
        release = f"NCCL {ctx.host.nccl_version_text()}" if version else "an NCCL 2.28.7 or later"
        ctx.finding("nccl-env-plugin", "warning", env_plug["path"],
                    f"{release} loads the env plugin {env_plug['path']}: it answers every variable NCCL reads, "
                    "so the env and nccl.conf rocetune writes may not be what NCCL uses",
                    plugin=env_plug, source=releases.fact("env-plugin").source)
    return _net(ctx, chosen.get("net"), declared, env)


@emits("nccl-net-plugin")
def _net(ctx, plug: Optional[dict], declared: Dict[str, str], env: Dict[str, str]) -> List[Decision]:
    if plug is None:
        return []
    sel = ctx.host.selection()
    if not sel.chosen or sel.names_only or ctx.host.plugin_cloud():
        return []
    if "NCCL_NET_PLUGIN" in declared or "NCCL_NET" in declared:
        ctx.note(f"the net plugin {plug['path']} is loaded as the host's owner declared (NCCL_NET_PLUGIN/NCCL_NET)")
        return []
    if _ib_plugin(plug["path"]):
        ctx.note(f"NCCL loads HPC-X's IB plugin {plug['path']} (IBext: NCCL's IB transport with SHARP, which "
                 "reads NCCL_IB_* itself): kept")
        return []
    if "NCCL_NET_PLUGIN" in env:
        ctx.finding("nccl-net-plugin", "warning", plug["path"],
                    f"NCCL_NET_PLUGIN={env['NCCL_NET_PLUGIN']} in the probing environment loads {plug['path']}, "
                    "which carries the traffic the plan gives NCCL's IB transport (NCCL_IB_* may not apply)",
                    plugin=plug)
        return []
    ports = ", ".join(p.name for p in sel.chosen[:4]) + (" ..." if len(sel.chosen) > 4 else "")
    ctx.finding("nccl-net-plugin", "info", plug["path"],
                f"{plug['path']} would be loaded by default and carry the network traffic instead of NCCL's IB "
                "transport the plan is made for: the env sets NCCL_NET_PLUGIN=none", plugin=plug)
    return [ctx.decision("NCCL_NET_PLUGIN", "none",
                         f"{plug['path']} ({', '.join(plug.get('names') or [])}) is where NCCL's dlopen of "
                         "libnccl-net.so finds it, so every job would load it and send its traffic through it; "
                         "the plan "
                         f"is for NCCL's own IB/RoCE transport over {ports}. 'none' keeps NCCL's transports "
                         "(v2.30.7-1 src/plugin/net.cc:262-264)" + _also_dropped(ctx.host.nccl_version())
                         + "; to use the plugin instead, " + _keep_plugin(plug, ctx.host.nccl_version()),
                         plugin=plug)]


def _also_dropped(version) -> str:
    """What else NCCL_NET_PLUGIN=none takes away: NCCL looks for a tuner, GIN and RMA in the net plugin's
    library when no plugin of their own is loaded (v2.28.9-1 src/plugin/tuner.cc:61-66; v2.30.7-1
    src/plugin/gin.cc, src/plugin/rma.cc)."""
    kinds = [k for k, fact in (("tuner", None), ("GIN", "gin-needs-peermem-or-dmabuf"), ("RMA", "rma-plugin"))
             if fact is None or releases.gate(fact, version) is not False]
    return f", and with it any {', '.join(kinds)} this library provides"


def _keep_plugin(plug: dict, version) -> str:
    """How to keep the plugin: leave NCCL's default load of libnccl-net.so alone. Naming it instead
    would depend on the release: a library path only from 2.21.5, before that only
    libnccl-net-<value>.so (release table `net-plugin-path-value`)."""
    return "--unset NCCL_NET_PLUGIN (NCCL then loads libnccl-net.so by default, in every release)"
