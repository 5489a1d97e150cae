"""PHY source: each RDMA port's physical layer -- the speed and FEC it runs, the bit error rate
before and after FEC, the link tool's own recommendation, and the transceiver's temperature and
optical power -- from `mlxlink -d BDF -p PORT -m -c` (NVIDIA MFT; `mstlink` from mstflint where
MFT is absent) on ConnectX ports, and `ethtool --show-fec IF` / `ethtool -m IF` on every netdev.

Read only: mlxlink's -m/-c are queries (no `--port_state`, no counter clear). Present in the
Features only where one of the tools answered; each port keeps what each tool said or why it did
not (`errors`), e.g. a virtio or veth netdev's `Operation not supported`.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ... import nics
from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ...hostfs.runners import start_commands
from ..source import Source

LINK_TOOLS = ("mlxlink", "mstlink")
LINK_TOOL_VENDORS = nics.vendors_read_by("mlxlink")  # the PCI vendors whose NICs mlxlink reads


def ports(rdma: dict, pci: dict) -> List[dict]:
    """One entry per RDMA port: netdev (RoCE) or device/port (IB), and the PCI function mlxlink
    reads when it is a ConnectX one."""
    vendors = {d["bdf"]: d.get("vendor") for d in pci.get("devices", []) if d.get("bdf")}
    out = []
    for dev in rdma.get("devices", []):
        for p in dev.get("ports", []):
            bdf = dev.get("pci") if dev.get("function") == "pci" else None
            out.append({"name": f"{dev['name']}:{p['port']}", "netdev": p.get("netdev"), "port": p["port"],
                        "pci": bdf if bdf and vendors.get(bdf) in LINK_TOOL_VENDORS else None})
    return out


def _link_argv(tool: str, bdf: str, port: int) -> List[str]:
    return [tool, "-d", bdf, "-p", str(port), "-m", "-c"]


def _said(result) -> str:
    line = next((ln.strip() for ln in (result.stderr or result.stdout or "").splitlines() if ln.strip()),
                result.reason or "")
    return f"exit {result.returncode}: {line[:200]}".rstrip(": ")


def probe(ctx: ProbeContext, rdma: dict, pci: dict) -> Optional[dict]:
    todo = ports(rdma, pci)
    if not todo:
        return None
    link_tool = _link_tool(ctx, todo)
    argvs: List[List[str]] = []
    for p in todo:
        if link_tool and p["pci"]:
            argvs.append(_link_argv(link_tool, p["pci"], p["port"]))
        if p["netdev"]:
            argvs.append(["ethtool", "--show-fec", p["netdev"]])
            argvs.append(["ethtool", "-m", p["netdev"]])
    start_commands(ctx.runner, argvs)
    answered = False
    out: Dict[str, dict] = {}
    for p in todo:
        entry = {"netdev": p["netdev"], "pci": p["pci"], "link": None, "fec": None, "module": None, "errors": {}}
        if link_tool and p["pci"]:
            answered |= _read_into(ctx, entry, "link", _link_argv(link_tool, p["pci"], p["port"]), "parse_mlxlink",
                                   link_tool)
        if p["netdev"]:
            for key, argv, parse in (("fec", ["ethtool", "--show-fec", p["netdev"]], "parse_show_fec"),
                                     ("module", ["ethtool", "-m", p["netdev"]], "parse_module_info")):
                answered |= _read_into(ctx, entry, key, argv, parse, " ".join(argv[:2]))
        if entry["module"] is None and entry["link"] and entry["link"].get("module"):
            entry["module"] = entry["link"]["module"]
        if entry["link"] is not None:
            entry["link"].pop("module", None)
        out[p["name"]] = entry
    if not answered:
        return None
    return {"link_tool": link_tool, "ports": out}


def _link_tool(ctx: ProbeContext, todo: List[dict]) -> Optional[str]:
    """The first of LINK_TOOLS the host has, tried on the first port with a PCI address."""
    first = next((p for p in todo if p["pci"]), None)
    if first is None:
        return None
    return next((name for name in LINK_TOOLS
                 if ctx.runner.run(_link_argv(name, first["pci"], first["port"])).found), None)


def _read_into(ctx: ProbeContext, entry: dict, key: str, argv: List[str], parse: str, label: str) -> bool:
    """Run `argv` and put its output, read by parsers.phy's function `parse`, at entry[key], or
    why not in entry["errors"][label]; whether the command was there at all."""
    res = ctx.runner.run(argv)
    if res.found and res.returncode == 0:
        from ..parsers import phy as parsers  # imported where a tool answered: most hosts have none

        try:
            entry[key] = getattr(parsers, parse)(res.stdout)
        except ParseError as exc:
            entry["errors"][label] = exc.message
    elif res.found:
        entry["errors"][label] = _said(res)
    return bool(res.found)


SOURCE = Source("phy", reads="`mlxlink` (or mstlink) per ConnectX port, `ethtool --show-fec` and "
                "`ethtool -m` per netdev",
                needs=("rdma", "pci"), order=120, optional=True)
