"""What doctor reads beyond the Features, through the same root and runner as the probe: the
memlock a job's environment gets, the ACS Control of PCI bridges, global pause and ECN of each
RoCE netdev, the env files deployed on the node and the rocetune boot units' last result.

Each reading is absent (None) when the node does not have what it reads (no unit, no file), so
a check can say "not checked" instead of guessing; unreadable files are warnings.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

from ..core import pcie_p2p as p2p
from ..envfiles import dialects
from ..hostfs.context import ProbeContext

UNITS = ("rocetune-env.service", "rocetune-qos.service", "rocetune-pcie-p2p.service")
UNIT_DIR = "/etc/systemd/system"
# systemd's manager configuration: the main file, then drop-ins from these directories, sorted by
# file name with a later directory's file of the same name replacing an earlier one
# (systemd-system.conf(5)).
SYSTEM_CONF = "/etc/systemd/system.conf"
SYSTEM_CONF_DIRS = ("/usr/lib/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d",
                    "/run/systemd/system.conf.d", "/etc/systemd/system.conf.d")
LIMITS_CONF = "/etc/security/limits.conf"
LIMITS_DIR = "/etc/security/limits.d"
# The env files the rocetune_env role writes, by the dialect their names give them.
ENV_DIR = "/etc/rocetune"
NCCL_CONF = "/etc/nccl.conf"  # read by NCCL itself in every process, below the job's environment
ENV_FILES = {dialects.for_output(path): path for path in (f"{ENV_DIR}/nccl.env", NCCL_CONF)}


def read(ctx: ProbeContext, features: dict, since: Optional[str] = None, env_files: Sequence[str] = (),
         mark: Optional[dict] = None) -> dict:
    from . import kernel_log

    netdevs = sorted({p["netdev"] for d in features["rdma"]["devices"] for p in d["ports"]
                      if p.get("netdev") and p.get("link_layer") == "Ethernet"})
    role = pcie_p2p(ctx)
    return {
        "memlock": memlock(ctx),
        "acs": acs(ctx, features, (role or {}).get("acs")),
        "pause": {n: pause(ctx, n) for n in netdevs},
        "ecn": {n: ecn(ctx, n) for n in netdevs},
        "env_files": {fmt: ctx.text(path) for fmt, path in ENV_FILES.items()},
        "deployed_env": deployed_env(ctx, env_files),
        "units": units(ctx),
        "env_refused": env_refused(ctx),
        "modules_load": modules_load(ctx),
        "kernel_log": kernel_log.read(ctx, since, mark=mark),
        "gpu_lost": gpu_lost(ctx),
        "pcie_p2p": role,
        "warnings": ctx.status.warnings,
    }


def deployed_env(ctx: ProbeContext, extra: Sequence[str] = ()) -> List[dict]:
    """Every env file jobs source, as it is on the node: rocetune's two (whoever wrote them)
    and the ones the node settings list (env.files), each with the dialect its name gives
    ("auto": its content decides)."""
    paths = list(dict.fromkeys(list(ENV_FILES.values()) + list(extra)))
    by_path = {path: fmt for fmt, path in ENV_FILES.items()}
    return [{"path": path, "format": by_path.get(path, "auto"), "text": ctx.text(path),
             "read_by": "nccl" if path == NCCL_CONF else "job"} for path in paths]


def gpu_lost(ctx: ProbeContext) -> Optional[List[dict]]:
    """The GPUs nvidia-smi says it cannot reach (`Unable to determine the device handle for GPU
    ...`): a GPU that fell off the bus, whether or not the driver logged an Xid for it. None
    where nvidia-smi is not there."""
    from ..probe.parsers.nvsmi_query import lost_gpus
    from ..probe.sources.gpu import QUERY_ARGV

    result = ctx.runner.run(QUERY_ARGV)
    if not result.found:
        return None
    return lost_gpus(f"{result.stdout or ''}\n{result.stderr or ''}")


def memlock(ctx: ProbeContext) -> dict:
    """The memlock limit services get (systemd's DefaultLimitMEMLOCK, last setting wins) and the
    one pam_limits gives logins (limits.conf then limits.d/*.conf for `*`)."""
    default, where, systemd_seen = None, None, False
    for path in [SYSTEM_CONF] + _dropins(ctx):
        text = ctx.text(path)
        systemd_seen |= text is not None
        for line in (text or "").splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and key.strip() == "DefaultLimitMEMLOCK":
                default, where = value.strip(), path
    limits: Dict[str, Optional[str]] = {"soft": None, "hard": None}
    limit_files: Dict[str, str] = {}
    files = [LIMITS_CONF] + [os.path.join(LIMITS_DIR, n) for n in sorted(ctx.root.listdir(LIMITS_DIR))
                             if n.endswith(".conf")]
    limits_seen = False
    for path in files:
        text = ctx.text(path)
        limits_seen |= text is not None
        for line in (text or "").splitlines():
            cols = line.split("#", 1)[0].split()
            if len(cols) == 4 and cols[0] == "*" and cols[2] == "memlock":
                for kind in (("soft", "hard") if cols[1] == "-" else (cols[1],)):
                    if kind in limits:
                        limits[kind], limit_files[kind] = cols[3], path
    return {"systemd_default": default, "systemd_file": where, "limits": limits, "limits_files": limit_files,
            "systemd_seen": systemd_seen, "limits_seen": limits_seen}


def _dropins(ctx: ProbeContext) -> List[str]:
    by_name: Dict[str, str] = {}
    for directory in SYSTEM_CONF_DIRS:
        for name in ctx.root.listdir(directory):
            if name.endswith(".conf"):
                by_name[name] = os.path.join(directory, name)
    return [by_name[n] for n in sorted(by_name)]


def acs(ctx: ProbeContext, features: dict, unit: Optional[dict]) -> Dict[str, object]:
    """The ACS Control of every PCI bridge, and of every function the pcie_p2p unit holds, read
    from its configuration space with the role's own reader (core.pcie_p2p.read_control):
    {bdf: [offset, control]}, or "no ACS", or "unreadable" (the extended space is root's)."""
    devices = features["pci"]["devices"]
    wanted = {d["bdf"] for d in devices if d.get("kind") == "bridge"}
    if unit:
        wanted.update(str(b) for b in unit["devices"] if p2p.is_bdf(str(b)))
        if unit["scope"] == "all":
            wanted.update(d["bdf"] for d in devices)
    out: Dict[str, object] = {}
    for bdf in sorted(wanted):
        control = p2p.read_control(ctx.root.read_bytes(f"/sys/bus/pci/devices/{bdf}/config"))
        out[bdf] = list(control) if isinstance(control, tuple) else control
    return out


def pause(ctx: ProbeContext, netdev: str) -> Optional[Dict[str, bool]]:
    """802.3x global pause of a netdev (`ethtool -a`): {"rx", "tx"}; None unknown."""
    from ..core.qos_tool_outputs import parse_pause  # the roce_qos role's own reader

    result = ctx.runner.run(["ethtool", "-a", netdev])
    if not result.found or result.returncode != 0:
        return None
    found = parse_pause(result.stdout)
    return {"rx": found.get("rx"), "tx": found.get("tx")} if found else None


def ecn(ctx: ProbeContext, netdev: str) -> Optional[Dict[str, Dict[int, bool]]]:
    """ECN (DCQCN) per priority from mlx5's /sys/class/net/IF/ecn/roce_{np,rp}/enable/N: the
    notification point (marks -> CNPs) and reaction point (rate cut); None without the tree."""
    from ..probe.sources.qos import ecn_enables  # the probe's reader of the same files

    return ecn_enables(ctx, netdev)


def modules_load(ctx: ProbeContext) -> Dict[str, dict]:
    """Each module a modules-load.d file asks for at boot ({name: {"file", "loaded"}}): loaded
    is /sys/module/NAME (a loaded or built-in module has it)."""
    out: Dict[str, dict] = {}
    for directory in ("/usr/lib/modules-load.d", "/etc/modules-load.d"):
        for name in sorted(ctx.root.listdir(directory)):
            if not name.endswith(".conf"):
                continue
            path = f"{directory}/{name}"
            for line in (ctx.text(path) or "").splitlines():
                module = line.split("#", 1)[0].strip()
                if module and not module.startswith(";"):
                    module = module.replace("-", "_")
                    out[module] = {"file": path, "loaded": ctx.root.is_dir(f"/sys/module/{module}")}
    return out


def env_refused(ctx: ProbeContext) -> Optional[dict]:
    """The record `rocetune env --no-degrade` (the boot unit) left when it refused a degraded
    env: {"reasons", "files"}; None when there is none."""
    from ..envfiles.degrade import RECORD_PATH, read_record

    return read_record(ctx.text(RECORD_PATH))


def units(ctx: ProbeContext) -> Dict[str, Optional[dict]]:
    """Each rocetune boot unit installed under the root: its last result from `systemctl show`
    (None when systemctl did not answer: a capture without it, a container without systemd)."""
    installed = [u for u in UNITS if ctx.root.exists(f"{UNIT_DIR}/{u}")]
    if not installed:
        return {}
    result = ctx.runner.run(["systemctl", "show", *installed, "-p", "Id,LoadState,ActiveState,Result,ExecMainStatus"])
    if not result.found or result.returncode != 0:
        return {u: None for u in installed}
    shown: Dict[str, Optional[dict]] = {u: None for u in installed}
    for block in result.stdout.strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id") in shown:
            shown[props["Id"]] = {k: v for k, v in props.items() if k != "Id"}
    return shown


# The pcie_p2p role's boot unit, its script and its boot loader drop-in.
PCIE_P2P_UNIT = f"{UNIT_DIR}/rocetune-pcie-p2p.service"
PCIE_P2P_SCRIPT = "/usr/local/lib/rocetune/rocetune_pcie_p2p_boot.py"
PCIE_P2P_DROPIN = "/etc/default/grub.d/rocetune-pcie-p2p.cfg"


def pcie_p2p(ctx: ProbeContext) -> Optional[dict]:
    """What the pcie_p2p role left on the node: what its boot unit is told to hold ("acs": the
    script's arguments, core.pcie_p2p.unit_arguments) and what the boot loader was given (the
    drop-in). None where the role never ran."""
    import shlex

    unit = ctx.text(PCIE_P2P_UNIT)
    dropin = ctx.text(PCIE_P2P_DROPIN)
    if unit is None and dropin is None:
        return None
    out: dict = {"unit": unit is not None, "dropin": dropin, "acs": None, "error": None}
    if unit is None:
        return out
    line = next((ln.split("=", 1)[1] for ln in unit.splitlines() if ln.startswith("ExecStart=")), "")
    try:
        argv = shlex.split(line)
        if argv[:2] != ["/usr/bin/python3", PCIE_P2P_SCRIPT]:
            raise p2p.P2PError("not the role's script")
        out["acs"] = p2p.unit_arguments(argv[2:])
    except (ValueError, p2p.P2PError) as exc:
        out["error"] = f"unexpected ExecStart in {PCIE_P2P_UNIT} ({exc}): {line[:200]}"
    return out
    line = next((ln.split("=", 1)[1] for ln in unit.splitlines() if ln.startswith("ExecStart=")), "")
    argv = shlex.split(line)
    if argv[:2] != ["/usr/bin/python3", PCIE_P2P_SCRIPT]:
        out["error"] = f"unexpected ExecStart in {PCIE_P2P_UNIT}: {line[:200]}"
        return out
    res = ctx.runner.run(argv + ["--check"])
    if not res.found:
        out["error"] = f"{PCIE_P2P_SCRIPT} did not run ({res.reason})"
        return out
    for text in res.stdout.splitlines():
        bdf, sep, rest = text.partition(": ")
        if not sep:
            continue
        if rest.startswith("ACS would clear"):
            out["bridges"][bdf] = {"state": "redirect on", "said": rest}
        elif rest.startswith("ACS already clear"):
            out["bridges"][bdf] = {"state": "clear", "said": rest}
        elif "not readable" in rest:
            out["unreadable"].append(bdf)
    if res.returncode != 0 and not out["bridges"]:
        out["error"] = (res.stderr or res.stdout).strip()[:300] or f"exit {res.returncode}"
    return out
