"""The Plan: every variable rocetune emits, the rule that decided it, and why.

The planner (rocetune.planner) runs every rule over one Features document and fills a Plan; the
env writers (rocetune.envfiles) turn it into files and `rocetune explain` into prose.

Overrides come from `--set KEY=VALUE`, `--unset KEY` and a config file (`--config FILE`):

    # rocetune overrides: one per line
    NCCL_IB_QPS_PER_CONNECTION=4     # set (the value is the rest of the line, verbatim)
    NCCL_DEBUG=WARN
    unset NCCL_IB_GID_INDEX          # remove a planned key

`#` starts a comment at the beginning of a line or after whitespace; values are not quoted or
expanded (write `KEY=a b` for a value with a space). Command-line options win over the file.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import ExitCode, RocetuneError
from .finding import Finding
from .qos import QosPlan
from .record import Record

MAX_CONFIG_BYTES = 1 << 20  # an override file is a few lines
KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


class Decision(Record):
    """One variable: its value, the rule that chose it, a one-line reason and the evidence."""

    key: str
    value: str
    rule_id: str
    reason: str
    evidence: Dict[str, Any]
    _fields = ("key", "value", "rule_id", "reason", "evidence")

    def __init__(self, key: str, value: str, rule_id: str, reason: str = "",
                 evidence: Optional[Dict[str, Any]] = None) -> None:
        if not KEY_RE.match(key):
            raise ValueError(f"not an environment variable name: {key!r}")
        if not isinstance(value, str):
            raise TypeError(f"{key}: values are strings, got {type(value).__name__}")
        self.key = key
        self.value = value
        self.rule_id = rule_id
        self.reason = reason
        self.evidence = {} if evidence is None else evidence

    def to_dict(self) -> Dict[str, Any]:
        return {"key": self.key, "value": self.value, "rule_id": self.rule_id,
                "reason": self.reason, "evidence": self.evidence}


class Message(Record):
    rule_id: str
    message: str
    _fields = ("rule_id", "message")

    def __init__(self, rule_id: str, message: str) -> None:
        self.rule_id = rule_id
        self.message = message

    def to_dict(self) -> Dict[str, str]:
        return {"rule_id": self.rule_id, "message": self.message}

    def __str__(self) -> str:
        return f"{self.rule_id}: {self.message}"


class PlanFile(Record):
    """A file the env points at (the NCCL topology XML): `key` names it, `data` is what a
    renderer turns into its content, `kind` says which renderer."""

    name: str
    kind: str
    data: Any
    key: str  # the variable that points at it
    rule_id: str
    _fields = ("name", "kind", "data", "key", "rule_id")

    def __init__(self, name: str, kind: str, data: Any, key: str, rule_id: str) -> None:
        self.name = name
        self.kind = kind
        self.data = data
        self.key = key
        self.rule_id = rule_id

    def to_dict(self) -> Dict[str, str]:
        return {"name": self.name, "kind": self.kind, "key": self.key, "rule_id": self.rule_id}


class Plan(Record):
    """The decisions, and what the planner found while making them: every warning is a finding
    of a registered check (`findings`); `warnings` is the same findings as one line each."""

    decisions: List[Decision]
    notes: List[Message]
    findings: List[Finding]
    ranks: List[Dict[str, Any]]
    files: List[PlanFile]
    unset: List[Dict[str, Optional[str]]]
    rules_run: List[str]
    reports: Dict[str, Any]
    qos: Optional[QosPlan]
    local_rank: Optional[int]
    # The expectations the plan was held to: {"source", "document", "facts" (NodeFacts)}; None
    # when the node has none.
    expect: Optional[Dict[str, Any]]
    _fields = ("decisions", "notes", "findings", "ranks", "files", "unset", "rules_run", "reports",
               "qos", "local_rank", "expect")

    def __init__(self, decisions: Optional[List[Decision]] = None, notes: Optional[List[Message]] = None,
                 findings: Optional[List[Finding]] = None, ranks: Optional[List[Dict[str, Any]]] = None,
                 files: Optional[List[PlanFile]] = None, unset: Optional[List[Dict[str, Optional[str]]]] = None,
                 rules_run: Optional[List[str]] = None, reports: Optional[Dict[str, Any]] = None,
                 qos: Optional[QosPlan] = None, local_rank: Optional[int] = None,
                 expect: Optional[Dict[str, Any]] = None) -> None:
        self.decisions = [] if decisions is None else decisions
        self.notes = [] if notes is None else notes
        self.findings = [] if findings is None else findings
        self.ranks = [] if ranks is None else ranks
        self.files = [] if files is None else files
        self.unset = [] if unset is None else unset
        self.rules_run = [] if rules_run is None else rules_run
        self.reports = {} if reports is None else reports
        self.qos = qos
        self.local_rank = local_rank
        self.expect = expect

    def get(self, key: str) -> Optional[Decision]:
        for d in self.decisions:
            if d.key == key:
                return d
        return None

    @property
    def warnings(self) -> List[Message]:
        """The plan's findings that are not informational, one line each (the rule that left
        it, or the finding's kind)."""
        return [Message(f.rule or f.kind, f.message) for f in self.findings if f.severity != "info"]

    def drop(self, key: str, finding: Finding) -> None:
        """Take a planned variable (and any file it points at) out; `finding` says why."""
        self.decisions = [d for d in self.decisions if d.key != key]
        self.files = [f for f in self.files if f.key != key]
        self.findings.append(finding)

    @property
    def env(self) -> Dict[str, str]:
        return {d.key: d.value for d in self.decisions}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "env": self.env,
            "decisions": [d.to_dict() for d in self.decisions],
            "warnings": [m.to_dict() for m in self.warnings],
            "notes": [m.to_dict() for m in self.notes],
            "findings": [f.to_dict() for f in self.findings],
            "ranks": self.ranks,
            "local_rank": self.local_rank,
            "files": [f.to_dict() for f in self.files],
            "unset": self.unset,
            "rules": self.rules_run,
            "reports": self.reports,
            "qos": self.qos.to_dict() if self.qos else None,
            "expect": None if self.expect is None else {
                "source": self.expect["source"], "document": self.expect["document"]},
        }


# --- overrides ------------------------------------------------------------------------------

class Overrides(Record):
    """User choices that win over every rule. `origin` says where each came from."""

    set: Dict[str, Tuple[str, str]]    # key -> (value, origin)
    unset: Dict[str, str]              # key -> origin
    _fields = ("set", "unset")

    def __init__(self, set: Optional[Dict[str, Tuple[str, str]]] = None,
                 unset: Optional[Dict[str, str]] = None) -> None:
        self.set = {} if set is None else set
        self.unset = {} if unset is None else unset

    @property
    def empty(self) -> bool:
        return not self.set and not self.unset

    def add_set(self, key: str, value: str, origin: str) -> None:
        _check_key(key, origin)
        self.unset.pop(key, None)
        self.set[key] = (value, origin)

    def add_unset(self, key: str, origin: str) -> None:
        _check_key(key, origin)
        self.set.pop(key, None)
        self.unset[key] = origin

    def merged(self, later: Overrides) -> Overrides:
        """These overrides, then `later` on top (the command line over a config file)."""
        out = Overrides(dict(self.set), dict(self.unset))
        for k, (v, o) in later.set.items():
            out.add_set(k, v, o)
        for k, o in later.unset.items():
            out.add_unset(k, o)
        return out

    @classmethod
    def from_args(cls, sets: Optional[Sequence[str]] = None,
                  unsets: Optional[Sequence[str]] = None) -> Overrides:
        out = cls()
        for item in sets or ():
            key, sep, value = item.partition("=")
            if not sep:
                raise RocetuneError(f"--set {item!r}: expected KEY=VALUE",
                                    hint="for example --set NCCL_IB_QPS_PER_CONNECTION=4",
                                    code=ExitCode.USAGE)
            out.add_set(key.strip(), value, "--set")
        for key in unsets or ():
            out.add_unset(key.strip(), "--unset")
        return out

    @classmethod
    def from_text(cls, text: str, source: str) -> Overrides:
        out = cls()
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            origin = f"{source}:{lineno}"
            m = re.match(r"^unset\s+(\S+)\s*(?:#.*)?\Z", line)
            if m:
                out.add_unset(m.group(1), origin)
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise RocetuneError(f"{origin}: expected KEY=VALUE or 'unset KEY', got {line!r}",
                                    hint="see the override file format in docs/env-formats.md",
                                    code=ExitCode.INPUT)
            value = re.sub(r"\s+#.*$", "", value).strip()
            out.add_set(key.strip(), value, origin)
        return out

    @classmethod
    def from_file(cls, path: str) -> Overrides:
        from ..errors import HostReadError
        from ..hostfs.inputs import read_input

        try:
            text = read_input(path, MAX_CONFIG_BYTES).decode("utf-8")
        except HostReadError as exc:
            raise RocetuneError(f"--config {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
        except OSError as exc:
            raise RocetuneError(f"--config {path}: cannot read: {exc.strerror or exc}",
                                code=ExitCode.INPUT) from None
        except UnicodeDecodeError:
            raise RocetuneError(f"--config {path}: not UTF-8 text", code=ExitCode.INPUT) from None
        return cls.from_text(text, path)


def _check_key(key: str, origin: str) -> None:
    if not KEY_RE.match(key or ""):
        raise RocetuneError(f"{origin}: {key!r} is not an environment variable name",
                            hint="names are letters, digits and '_', not starting with a digit",
                            code=ExitCode.USAGE if origin.startswith("--") else ExitCode.INPUT)
