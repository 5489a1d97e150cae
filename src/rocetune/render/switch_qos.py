"""A ToR switch's QoS configuration from the QoS plan, from jinja2 templates shipped in
rocetune/render/templates/switch: SONiC CONFIG_DB JSON for `config load`, NVUE commands, an
EOS configuration. jinja2 is a controller dependency; the node agent never imports this module.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Sequence

from ..errors import ExitCode, RocetuneError
from ..model.qos import QosPlan
from ..model.switch_qos import KINDS, TRAFFIC_CLASSES, SwitchIntent
from ..pkgdata import package_data
from ..text import one_line

TEMPLATES = {"sonic": "sonic.json.j2", "nvue": "nvue.sh.j2", "eos": "eos.cfg.j2"}
NAME = "ROCETUNE"  # SONiC map, scheduler and WRED names, EOS qos profile: beside the switch's own
# Ports as the three systems name them (Ethernet0, swp1, Ethernet1/1, Ethernet3/1/1).
_PORT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9/_.:-]{0,63}\Z")
# NVUE's RoCE mode (the page the nvue template cites).
NVUE_DEFAULT = {"data": (26, 3), "cnp": (48, 6), "lossless": (3,), "ecn": (150000, 1500000, 100)}


def ports_from(text: str) -> List[str]:
    """--ports P1,P2: each checked, order kept, duplicates refused."""
    ports = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in ports if not _PORT_RE.match(p)]
    if bad:
        raise RocetuneError(f"--ports: {bad[0]!r} is not a port name", hint="e.g. --ports Ethernet0,Ethernet4 "
                            "(SONiC), swp1,swp2 (NVUE), Ethernet1/1 (EOS)", code=ExitCode.USAGE)
    if len(set(ports)) != len(ports):
        raise RocetuneError("--ports names a port twice", code=ExitCode.USAGE)
    return ports


def render(plan: QosPlan, kind: str, ports: Sequence[str] = ()) -> str:
    if kind not in KINDS:
        raise RocetuneError(f"--switch {kind!r}: not one of {', '.join(KINDS)}", code=ExitCode.USAGE)
    intent = SwitchIntent.from_plan(plan)
    context = _context(plan, intent, kind, list(ports))
    text = _template(TEMPLATES[kind]).render(**context)
    if kind == "sonic":
        text = _canonical_json(text)
    return text if text.endswith("\n") else text + "\n"


def _context(plan: QosPlan, intent: SwitchIntent, kind: str, ports: List[str]) -> Dict[str, Any]:
    ctx: Dict[str, Any] = {
        "source": one_line(plan.source), "trust": intent.trust, "ports": ports, "classes": list(TRAFFIC_CLASSES),
        "data_dscp": intent.data_dscp, "data_class": intent.data_class,
        "cnp_dscp": intent.cnp_dscp, "cnp_class": intent.cnp_class,
        "lossless": list(intent.lossless), "ecn": intent.ecn, "profile": f"{NAME}_ROCE",
        "map_name": NAME, "strict_scheduler": f"{NAME}_STRICT", "dwrr_scheduler": f"{NAME}_DWRR",
        "dwrr_weight": 50, "wred_profile": f"{NAME}_ECN",
        "dscp_map": sorted(intent.dscp_map().items()),
        "tc_to_pg": [(tc, tc if tc in intent.lossless else 0) for tc in TRAFFIC_CLASSES],
    }
    if kind == "nvue":
        ctx["overrides"] = nvue_overrides(intent)
    return ctx


def nvue_overrides(intent: SwitchIntent) -> List[str]:
    """The NVUE commands that move RoCE mode's defaults to the plan (the commands NVIDIA's RoCE page
    gives for remapping a DSCP and moving the lossless switch priority)."""
    out: List[str] = []
    g = "default-global"
    data, cnp = (intent.data_dscp, intent.data_class), (intent.cnp_dscp, intent.cnp_class)
    if data != NVUE_DEFAULT["data"] or cnp != NVUE_DEFAULT["cnp"]:
        out.append(f"nv set qos mapping {g} trust both")
    if data != NVUE_DEFAULT["data"]:
        out.append(f"nv set qos mapping {g} dscp {intent.data_dscp} switch-priority {intent.data_class}")
        if intent.data_class != 3:
            out.append(f"nv set qos egress-queue-mapping {g} switch-priority {intent.data_class} traffic-class {intent.data_class}")
            out.append(f"nv set qos egress-queue-mapping {g} switch-priority 3 traffic-class 0")
    if intent.lossless and tuple(intent.lossless) != NVUE_DEFAULT["lossless"]:
        out.append(f"nv set qos pfc {g} switch-priority {','.join(map(str, intent.lossless))}")
    if cnp != NVUE_DEFAULT["cnp"]:
        out.append(f"nv set qos mapping {g} dscp {intent.cnp_dscp} switch-priority {intent.cnp_class}")
        out.append(f"nv set qos egress-queue-mapping {g} switch-priority {intent.cnp_class} traffic-class {intent.cnp_class}")
        out.append(f"nv set qos egress-scheduler {g} traffic-class {intent.cnp_class} mode strict")
    ecn = (intent.ecn.min_threshold, intent.ecn.max_threshold, intent.ecn.probability)
    if ecn != NVUE_DEFAULT["ecn"] or intent.data_class != 3:
        tc = f"nv set qos congestion-control {g} traffic-class {intent.data_class}"
        out += [f"{tc} ecn enable", f"{tc} min-threshold {ecn[0]}", f"{tc} max-threshold {ecn[1]}",
                f"{tc} probability {ecn[2]}"]
    return out


def _template(name: str):
    try:
        import jinja2
    except ImportError:
        raise RocetuneError("rendering switch configurations needs jinja2, which is not installed here",
                            hint="pip install jinja2 (on the controller: pip install rocetune)",
                            code=ExitCode.INPUT) from None
    try:
        source = package_data("rocetune.render", f"templates/switch/{name}").decode("utf-8")
    except OSError:
        raise RocetuneError(f"the switch template {name} is missing from this installation",
                            hint="reinstall rocetune (the templates are package data)", code=ExitCode.INTERNAL) from None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    return env.from_string(source)


def _canonical_json(text: str) -> str:
    """The SONiC template's output checked as JSON and printed with sorted keys: one plan, one byte string."""
    try:
        doc = json.loads(text)
    except ValueError as exc:  # a template bug, never the user's input
        raise RocetuneError(f"the SONiC template gave invalid JSON: {exc}", code=ExitCode.INTERNAL) from None
    return json.dumps(doc, indent=4, sort_keys=True) + "\n"
