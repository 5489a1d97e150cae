"""What a rule gets besides the Features: the QoS plan, the options, shared host analysis, and a
place to leave warnings, notes and findings (tagged with the rule that left them)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..analysis import hostview
from ..model.finding import Finding
from ..model.plan import Decision, Message, PlanFile
from ..model.qos import QosPlan, default_plan

DEFAULT_TOPO_PATH = "/etc/rocetune/nccl-topo.xml"
TOPO_FILE_NAME = "nccl-topo.xml"


class RuleContext:
    def __init__(self, features: dict, qos: Optional[QosPlan] = None,
                 local_rank: Optional[int] = None, topo_path: Optional[str] = None):
        self.features = features
        self.qos = qos if qos is not None else default_plan()
        self.local_rank = local_rank
        self.topo_path = topo_path
        self.rule_id = "?"
        self.warnings: List[Message] = []
        self.notes: List[Message] = []
        self.findings: List[Finding] = []
        self.ranks: List[Dict[str, Any]] = []
        self.files: List[PlanFile] = []
        self.reports: Dict[str, Any] = {}
        self._view: Optional[hostview.HostView] = None

    # --- shared analysis (computed once, from the features only) ---------------------------
    @property
    def host(self) -> "hostview.HostView":
        if self._view is None:
            self._view = hostview.HostView(self.features)
        return self._view

    # --- output ------------------------------------------------------------------------------
    def begin(self, rule_id: str) -> None:
        self.rule_id = rule_id

    def decision(self, key: str, value: Any, reason: str, **evidence: Any) -> Decision:
        return Decision(key, str(value), self.rule_id, reason, dict(evidence))

    def warn(self, message: str) -> None:
        if not any(m.rule_id == self.rule_id and m.message == message for m in self.warnings):
            self.warnings.append(Message(self.rule_id, message))

    def note(self, message: str) -> None:
        if not any(m.rule_id == self.rule_id and m.message == message for m in self.notes):
            self.notes.append(Message(self.rule_id, message))

    def finding(self, fid: str, severity: str, subject: str, message: str) -> None:
        self.findings.append(Finding(fid, severity, subject, message, self.rule_id))

    def report(self, data: Any) -> None:
        """Structured facts a rule establishes without setting a variable (plan.reports[rule id])."""
        self.reports[self.rule_id] = data

    def add_file(self, name: str, kind: str, data: Any, key: str) -> None:
        """A file the env will point at through `key`; `kind` names its renderer."""
        self.files.append(PlanFile(name, kind, data, key, self.rule_id))
