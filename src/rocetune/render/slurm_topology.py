"""Slurm's topology.conf (topology/tree, slurm.conf TopologyPlugin=topology/tree) from a
fleet.topology.Topology: one `SwitchName=... Nodes=...` line per leaf set, one
`SwitchName=... Switches=...` line per switch above, node and switch lists in Slurm's hostlist
form. The names were held to what Slurm's lists carry (fleet.topology.NAME) before this runs."""

from __future__ import annotations

from typing import List, Optional

from .fleet_html import host_ranges


def topology_conf(topology, version: str, source: str, top: Optional[str] = None) -> str:
    above = f"the top switch, {_comment(top)}, is named by --top" if top else "the switches above come from their LLDP"
    lines: List[str] = [
        f"# Slurm topology.conf (topology/tree), written by rocetune {version} `fleet topology`",
        f"# from the LLDP cabling of the results in {_comment(source)}: each leaf below is the set of",
        f"# leaf switches a node's rails reach; {above}.",
    ]
    for s in topology.switches:
        if s.level == 0 and len(s.physical) > 1 and "+".join(s.physical) != s.name:
            lines.append(f"# {s.name}: {_comment(' '.join(s.physical))}")
        if s.nodes:
            lines.append(f"SwitchName={s.name} Nodes={host_ranges(s.nodes)}")
        else:
            lines.append(f"SwitchName={s.name} Switches={host_ranges(s.children)}")
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() and c != "\n" else "?" for c in text)
