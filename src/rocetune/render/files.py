"""The content of a file the env points at, from the data a rule planned for it."""

from __future__ import annotations

from ..errors import ExitCode, RocetuneError
from ..model.plan import PlanFile
from .topo_xml import render_topology


def render_file(f: PlanFile) -> str:
    if f.kind == "nccl-topo-xml":
        return render_topology(f.data["tree"], f.data.get("comment", ""))
    raise RocetuneError(f"rule {f.rule_id} planned a file of unknown kind {f.kind!r}",
                        code=ExitCode.INTERNAL)
