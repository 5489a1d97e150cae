"""What a rule gets besides the Features: the QoS plan, the options, shared host analysis, and a
place to leave notes and findings (tagged with the rule that left them; a warning is a finding
of a registered check, so doctor grades it)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..analysis import hostview
from ..checks import declare, finding
from ..checks.binding import emits
from ..model.finding import Finding
from ..model.plan import Decision, Message, PlanFile
from ..model.qos import QosPlan, default_plan

# What the checks of the port choice read and rest on (nccl_ib_hca.py, no_rdma.py declare them).
PORTS_READ = ("The RDMA ports (/sys/class/infiniband/DEV/ports/N: state, link_layer, rate, GID "
              "table), their netdevs' addresses and routes, and each port's PCI path to each GPU "
              "(the Features `rdma`, `net`, `topology.gpu_nic`).")
NCCL_IB_SOURCE = ("NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc ncclIbInit (every ACTIVE IB/RoCE port, "
                  "filtered by NCCL_IB_HCA); NCCL user guide, NCCL_IB_HCA")

declare(
    id="declared-contradicted", kind="rule", severity="warning",
    by=("nccl-ib-hca", "nccl-ib-gid-index", "traffic-class"),
    title="A value the host's owner declared is contradicted by the host",
    checks="A declared NCCL_IB_HCA, NCCL_IB_GID_INDEX or NCCL_IB_TC (in /etc/nccl.conf or a "
           "vendor's env script) against the host's evidence: the ports it selects, a RoCE v2 "
           "GID on every compute port, the DSCP's priority having PFC on the NICs.",
    reads="The declared files (the Features `declared.files`) and the facts the rule behind the key "
          "reads: RDMA ports and their state, GID tables, the NICs' recorded QoS (mlnx_qos).",
    why="rocetune keeps every declared value (vendors encode what no probe sees), so a value that "
        "selects a port that is down, a GID that is not RoCE v2, or a class without PFC stays in "
        "force until someone replaces it.",
    fix="correct the declaration where it lives, or replace it with --set KEY=VALUE "
        "(rocetune_env_set) once the evidence is confirmed",
    source="NVIDIA/nccl v2.30.7-1 src/misc/param.cc (config files: setenv without overwrite, so "
           "the first declaration wins); the deciding rule's page names its NCCL source.",
)

DEFAULT_TOPO_PATH = "/etc/rocetune/nccl-topo.xml"
TOPO_FILE_NAME = "nccl-topo.xml"


class RuleContext:
    def __init__(self, features: dict, qos: Optional[QosPlan] = None,
                 local_rank: Optional[int] = None, topo_path: Optional[str] = None,
                 overridden: Optional[Dict[str, str]] = None):
        self.features = features
        # the values the user's overrides give (the planner applies them after the rules): a rule
        # whose finding asks for one of them need not ask again
        self.overridden: Dict[str, str] = dict(overridden or {})
        self.qos = qos if qos is not None else default_plan()
        self.local_rank = local_rank
        self.topo_path = topo_path
        self.rule_id = "?"
        self.notes: List[Message] = []
        self._said: Set[Tuple[str, str, str]] = set()  # (kind, rule id, message): each said once
        self.findings: List[Finding] = []
        self.ranks: List[Dict[str, Any]] = []
        self.files: List[PlanFile] = []
        self.reports: Dict[str, Any] = {}
        self._view: Optional[hostview.HostView] = None
        self._checks: Dict[str, Callable[[str], Optional[str]]] = {}

    # --- what the host's owner declared (Features "declared") -------------------------------
    @property
    def declared(self) -> Dict[str, Dict[str, str]]:
        """NCCL_* name -> {"value", "source"} the owner declared, the precedence NCCL applies
        (a sourced vendor env script before /etc/nccl.conf; the first declaration wins)."""
        out: Dict[str, Dict[str, str]] = {}
        for f in (self.features.get("declared") or {}).get("files", []):
            if f.get("ignored"):
                continue
            for key, value in sorted((f.get("values") or {}).items()):
                if key.startswith("NCCL_") and key not in out:
                    out[key] = {"value": value, "source": f["path"], "kind": f.get("kind") or ""}
        return out

    def check_declared(self, key: str, check: Callable[[str], Optional[str]]) -> None:
        """Register how this rule's evidence judges a declared value of `key`: `check(value)`
        returns why the host contradicts it, or None when nothing on the host does."""
        self._checks[key] = check

    @emits("declared-contradicted")
    def keep_declared(self, decisions: List[Decision]) -> List[Decision]:
        """Drop the decisions whose key the owner declared (the declared-settings rule carries
        the declared value); a registered check that finds the value contradicted by the host
        leaves a finding with the evidence, any other difference a note."""
        declared = self.declared
        out = []
        for d in decisions:
            mine = declared.get(d.key)
            if mine is None:
                out.append(d)
                continue
            check = self._checks.get(d.key)
            problem = check(mine["value"]) if check else None
            if problem:
                self.finding("declared-contradicted", "warning", d.key,
                             f"{d.key}={mine['value']} declared in {mine['source']} is kept, but {problem} "
                             f"(rocetune would set {d.value}: {d.reason}); replace it only with "
                             f"--set {d.key}=VALUE",
                             evidence={**d.evidence, "file": mine["source"], "value": mine["value"]})
            elif mine["value"] != d.value:
                self.note(f"{d.key}={mine['value']} declared in {mine['source']} is kept "
                          f"(rocetune's own choice would be {d.value}: {d.reason})")
        for key in list(self._checks):
            if key in declared and not any(d.key == key for d in decisions):
                problem = self._checks[key](declared[key]["value"])
                if problem:
                    self.finding("declared-contradicted", "warning", key,
                                 f"{key}={declared[key]['value']} declared in {declared[key]['source']} "
                                 f"is kept, but {problem}; replace it only with --set {key}=VALUE",
                                 file=declared[key]["source"], value=declared[key]["value"])
        self._checks = {}
        return out

    # --- shared analysis (computed once, from the features only) ---------------------------
    @property
    def host(self) -> hostview.HostView:
        if self._view is None:
            self._view = hostview.HostView(self.features)
        return self._view

    # --- output ------------------------------------------------------------------------------
    def begin(self, rule_id: str) -> None:
        self.rule_id = rule_id

    def decision(self, key: str, value: Any, reason: str, **evidence: Any) -> Decision:
        return Decision(key, str(value), self.rule_id, reason, dict(evidence))

    def note(self, message: str) -> None:
        if ("n", self.rule_id, message) not in self._said:
            self._said.add(("n", self.rule_id, message))
            self.notes.append(Message(self.rule_id, message))

    def finding(self, fid: str, severity: str, subject: str, message: str,
                evidence: Optional[Dict[str, Any]] = None, **more: Any) -> None:
        """A finding of a registered check (declared in the rule's module), left by this rule,
        with what it read (`evidence` and keyword arguments); each said once. A rule's warnings
        are findings too: there is no other list of them."""
        if ("f", fid, subject + "\0" + message) in self._said:
            return
        self._said.add(("f", fid, subject + "\0" + message))
        self.findings.append(finding(fid, subject, message, severity=severity, rule=self.rule_id,
                                     evidence={**(evidence or {}), **more} or None))

    def report(self, data: Any) -> None:
        """Structured facts a rule establishes without setting a variable (plan.reports[rule id])."""
        self.reports[self.rule_id] = data

    def add_file(self, name: str, kind: str, data: Any, key: str) -> None:
        """A file the env will point at through `key`; `kind` names its renderer."""
        self.files.append(PlanFile(name, kind, data, key, self.rule_id))
