"""What a person reads in a terminal: the host summary, the plan table, the topology matrix."""

from __future__ import annotations

from typing import List, Sequence

from ..model.finding import Finding, counts_text, finding_lines, shown
from ..model.plan import Plan
from ..text import printable, table


def plan_text(plan: Plan, verbose: int = 0) -> str:
    lines: List[str] = []
    if plan.decisions:
        lines += table([[d.key, d.value, d.rule_id] for d in plan.decisions],
                       ["VARIABLE", "VALUE", "RULE"])
    else:
        lines.append("no variables planned")
    for u in plan.unset:
        lines.append(printable(f"unset {u['key']} ({u['origin']})"))
    for f in plan.files:
        lines.append(printable(f"file {f.name} (for {f.key}, rule {f.rule_id})"))
    if plan.ranks and (verbose or plan.local_rank is not None):
        lines.append("")
        lines += table([[str(r["local_rank"]), f"GPU{r['gpu']}", r["gpu_bus_id"] or "-",
                         str(r["numa_node"]) if r["numa_node"] is not None else "-",
                         r["cpus"] or "-", r["nic"] or "-"] for r in plan.ranks],
                       ["RANK", "GPU", "BUS ID", "NUMA", "CPUS", "NIC"])
    if verbose and plan.notes:
        lines.append("")
        lines += [printable(f"note: {m}") for m in plan.notes]
    return "\n".join(lines) + "\n"


_MAX_PORT_LINES = 32


def _vf_bdfs(f: dict) -> set:
    return {d["bdf"] for d in f["pci"]["devices"] if (d.get("sriov") or {}).get("physfn")}


def host_summary(f: dict, verbose: int = 0) -> str:
    h = f["host"]
    lines = [f"host {h.get('hostname') or '?'}  kernel {h.get('kernel_release') or '?'}  "
             f"cpus {h.get('logical_cpus') or '?'}  numa nodes {len(h.get('numa_nodes', []))}"]
    if h.get("hypervisor"):
        lines.append(f"virtual machine, running under {h['hypervisor']}")
    gpus = f["gpus"]
    ports = [(d, p) for d in f["rdma"]["devices"] for p in d["ports"]]
    if not gpus and not ports:
        lines.append("no NVIDIA GPU and no RDMA device: nothing for NCCL to tune beyond TCP sockets")
    if gpus:
        lines.append(f"{len(gpus)} GPU(s)")
        for g in gpus:
            near = ", ".join(f"{n['device']}:{n['port']}" if n["port"] else n["device"]
                             for n in g["nearest_nics"]) or "none"
            path = g["nearest_nics"][0]["path"] if g["nearest_nics"] else "-"
            lines.append(f"  GPU{g['index']} {g['bdf'] or '?'} numa {g['numa_node']}  nearest NIC {path}: {near}")
    if ports:
        lines.append(f"{len(ports)} RDMA port(s)")
        shown, idle = ports, []
        if len(ports) > _MAX_PORT_LINES and not verbose:
            addressed = {i["name"] for i in f["net"]["interfaces"]
                         if any(not a["address"].startswith("fe80:") for a in i.get("addresses") or [])}
            shown = [(d, p) for d, p in ports if p["state"] == "ACTIVE"
                     and (p["link_layer"] == "InfiniBand" or p["netdev"] in addressed)]
            idle = [(d, p) for d, p in ports if (d, p) not in shown]
        for d, p in shown:
            gids = ",".join(str(i) for i in p["roce_v2_ipv4_gids"]) or "-"
            lines.append(f"  {d['name']}:{p['port']} {p['state'] or '?'} {p['link_layer'] or '?'} "
                         f"{p['rate'] or '?'} netdev {p['netdev'] or '-'} mtu {p['netdev_mtu'] or '-'} "
                         f"roce-v2-ipv4-gids {gids}")
        if idle:
            vfs = sum(1 for d, _ in idle if (d.get("pci") or "") in _vf_bdfs(f))
            lines.append(f"  and {len(idle)} port(s) not ACTIVE or without an address"
                         + (f" ({vfs} on SR-IOV VFs)" if vfs else "") + ": -v lists them")
    named = [d["name"] for d in f["rdma"]["devices"] if d.get("ports_known") is False]
    if named:
        lines.append(f"{len(named)} RDMA device(s) named by {f['rdma'].get('from_tools')} only "
                     "(ports, state, link layer unknown): " + ", ".join(named))
    routes = f["net"].get("default_routes")
    if routes:
        lines.append("default route via " + ", ".join(
            f"{r['interface']} ({'IPv4' if r['family'] == 'inet' else 'IPv6'}, metric {r['metric']})"
            for r in routes))
    elif routes is None:
        nets = [i for i in f["net"]["interfaces"] if i["default_route"]]
        if nets:
            lines.append("default route via " + ", ".join(i["name"] for i in nets))
    nccl = (f.get("kernel") or {}).get("nccl")
    if isinstance(nccl, dict) and (nccl.get("libraries") or nccl.get("basis") == "declared"):
        from ..analysis.hostview import HostView

        lines.append(printable("nccl planned for: " + HostView(f).nccl_basis_text()))
        libs = nccl.get("libraries") or []
        for lib in libs if len(libs) > 1 else []:
            lines.append(printable(f"  {lib.get('version') or '?'} {lib['path']}"
                                   + (f" ({lib['package']})" if lib.get("package") else "")))
    plugins = (nccl or {}).get("plugins") if isinstance(nccl, dict) else None
    for plug in plugins or []:
        version = f" {plug['version']}" if plug.get("version") else ""
        lines.append(printable(f"nccl {plug.get('kind') or '?'} plugin{version}: {plug['path']} "
                               f"({', '.join(plug.get('via') or [])})"))
    if verbose:
        for name, st in sorted(f["sources"].items()):
            lines.append(f"source {name}: {'ok' if st['ok'] else 'FAILED: ' + str(st['reason'])}")
    return "\n".join(lines) + "\n"


def findings_text(findings: Sequence[Finding], verbose: int = 0) -> str:
    """The findings, most severe first (the caller sorts), as every verb shows them
    (model.finding.finding_lines), then their counts; nothing when there are none."""
    if not findings:
        return ""
    lines = [line for f in shown(findings, verbose) for line in finding_lines(f, verbose)]
    return "".join(line + "\n" for line in lines) + f"findings: {counts_text(findings, verbose)}\n"
