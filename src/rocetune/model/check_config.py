"""The check configuration: which checks doctor skips or grades otherwise on a node, each with
the reason an operator gave -- ansible-lint's skip_list and LBNL NHC's per-node check lines are
the models. Read from /etc/rocetune/doctor.yml under the root (the rocetune_env role writes it
from rocetune_env_doctor_config), --doctor-config FILE, and --skip ID=REASON on the command line.

    version: 1
    skip:
      - id: doctor-ecn-off
        reason: Soft-RoCE (rxe) has no ECN sysfs
    grade:
      - id: expect-versions
        severity: warning
        reason: NIC firmware rolling upgrade, until the change window closes
        subjects: [mlx5_*]

The file is YAML checked against data/doctor-config.schema.json; that each id is a registered
check is checked by rocetune.checks.config, which applies the rules to findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, List, Optional, Sequence, Tuple

from ..errors import ExitCode, RocetuneError
from ..pkgdata import package_json
from .yamlread import YamlError, load_yaml

DEFAULT_PATH = "/etc/rocetune/doctor.yml"
SCHEMA_FILE = "data/doctor-config.schema.json"
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class CheckRule:
    """Skip (severity None) or grade one check's findings; `subjects` narrows it to findings about
    those subjects (names or shell patterns); `source` says where the rule was given."""

    id: str
    reason: str
    source: str
    severity: Optional[str] = None
    subjects: Tuple[str, ...] = ()

    @property
    def action(self) -> str:
        return "skip" if self.severity is None else "grade"

    def to_dict(self) -> dict:
        return {"id": self.id, "action": self.action, "severity": self.severity, "reason": self.reason,
                "subjects": list(self.subjects), "source": self.source}


@dataclass
class CheckConfig:
    rules: List[CheckRule] = field(default_factory=list)
    sources: List[str] = field(default_factory=list)

    def merged(self, later: "CheckConfig") -> "CheckConfig":
        """These rules, then `later`'s (the command line after the file): for one id and the same
        subjects, the later rule wins."""
        keys = {(r.id, r.subjects) for r in later.rules}
        return CheckConfig([r for r in self.rules if (r.id, r.subjects) not in keys] + list(later.rules),
                           self.sources + later.sources)


@lru_cache(maxsize=1)
def _checker():
    from .schema import checker

    return checker(package_json(__package__, SCHEMA_FILE))


def _error(message: str) -> RocetuneError:
    return RocetuneError(message, hint="see docs/doctor.md (the check configuration)", code=ExitCode.INPUT)


def validate(doc: Any, where: str) -> CheckConfig:
    if doc is None:
        return CheckConfig([], [where])
    if not isinstance(doc, dict):
        raise _error(f"{where}: expected a mapping (skip, grade), got {type(doc).__name__}")
    problem = _checker()(doc)
    if problem:
        raise _error(f"{where}: {problem}")
    rules = []
    for kind in ("skip", "grade"):
        for i, item in enumerate(doc.get(kind) or []):
            if not item["reason"].strip():
                raise _error(f"{where}: {kind}[{i}].reason: empty; say why, it is shown in every report")
            rules.append(CheckRule(item["id"], item["reason"].strip(), where, item.get("severity"),
                                   tuple(item.get("subjects") or ())))
    return CheckConfig(rules, [where])


def load_text(text: str, where: str) -> CheckConfig:
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise _error(f"{where}: {exc}") from None
    return validate(doc, where)


def load_file(path: str, option: str = "--doctor-config") -> CheckConfig:
    from .expect import read_small_text

    return load_text(read_small_text(path, option, MAX_BYTES), path)


def from_args(skips: Sequence[str]) -> CheckConfig:
    """--skip ID=REASON, each a rule; a --skip without a reason is a usage error."""
    rules = []
    for item in skips:
        check_id, sep, reason = item.partition("=")
        if not sep or not reason.strip() or not check_id.strip():
            raise RocetuneError(f"--skip {item!r}: give the check and why, as --skip ID=REASON",
                                hint="for example --skip 'doctor-ecn-off=Soft-RoCE has no ECN'",
                                code=ExitCode.USAGE)
        rules.append(CheckRule(check_id.strip(), reason.strip(), "--skip"))
    return CheckConfig(rules, ["--skip"] if rules else [])
