"""The per-host result files of a fleet directory (docs/fleet.md): one `HOST.json` per host,
`{"schema", "host", "probe", "doctor", "gathered_at", "error"}`.

A file comes from a node and travels by whatever gathered it: it is untrusted input. A file
that cannot be read, is not JSON, or holds no usable Features is that host's failure, never the
report's: the other hosts are still compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..errors import ExitCode, RocetuneError
from ..model.jsonread import load_json
from ..model.vocab import natural_key

SCHEMA = "rocetune.fleet-host/1"
MAX_BYTES = 64 * 1024 * 1024  # a 522-device host's probe and doctor together are ~10 MB


@dataclass
class HostResult:
    host: str
    error: Optional[str] = None  # the gather failed, or its file cannot be used
    gathered_at: Optional[str] = None
    features: Optional[dict] = None
    plan_env: Optional[Dict[str, str]] = None  # None: no plan in the result
    plan_ranks: Optional[List[dict]] = None  # the plan's local ranks: GPU, its bus id, its NIC
    plan_reports: Optional[dict] = None  # the plan's reports (gpudirect-rdma: the GDR route)
    doctor_findings: Optional[List[dict]] = None  # None: no doctor run in the result
    warnings: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


def load_dir(directory: str) -> List[HostResult]:
    """Every `*.json` of `directory`, in natural host order."""
    if not os.path.isdir(directory):
        raise RocetuneError(f"{directory}: not a directory", hint="give the directory of HOST.json results",
                            code=ExitCode.INPUT)
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith(".")]
    except OSError as exc:
        raise RocetuneError(f"{directory}: cannot list: {exc.strerror}", code=ExitCode.INPUT) from None
    if not names:
        raise RocetuneError(f"{directory}: no HOST.json result in it",
                            hint="docs/fleet.md describes the result files", code=ExitCode.INPUT)
    names.sort(key=lambda n: natural_key(n[:-5]))
    return [load_file(os.path.join(directory, n)) for n in names]


def load_file(path: str) -> HostResult:
    host = os.path.basename(path)[:-5]
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return HostResult(host, error=f"result file larger than {MAX_BYTES // (1024 * 1024)} MiB")
        with open(path, encoding="utf-8") as fh:
            doc = load_json(fh.read())
    except OSError as exc:
        return HostResult(host, error=f"result file unreadable: {exc.strerror}")
    except ValueError as exc:
        return HostResult(host, error=f"result file is not JSON: {str(exc)[:200]}")
    return from_doc(host, doc)


def from_doc(host: str, doc: Any) -> HostResult:
    """The result of `host` from its parsed file."""
    if not isinstance(doc, dict):
        return HostResult(host, error="result file is not a JSON object")
    res = HostResult(host, gathered_at=_text(doc.get("gathered_at")))
    schema = doc.get("schema", SCHEMA)
    if schema != SCHEMA:
        res.error = f"result schema {str(schema)[:80]!r}, this rocetune reads {SCHEMA}"
        return res
    named = doc.get("host")
    if isinstance(named, str) and named and named != host:
        res.warnings.append(f"{host}.json names host {named!r}; reported as {host}")
    if doc.get("error") is not None:
        res.error = "gather failed: " + (_text(doc["error"]) or "(no reason given)")
        return res
    probe, doctor = _data(doc.get("probe")), _data(doc.get("doctor"))
    if probe is None and doctor is None:
        res.error = "result holds neither a probe nor a doctor run"
        return res
    features = (probe or {}).get("features") or (doctor or {}).get("features")
    problem = _features_problem(features)
    if problem:
        res.error = problem
        return res
    res.features = features
    plan = (probe or {}).get("plan") or (doctor or {}).get("plan")
    if isinstance(plan, dict) and isinstance(plan.get("env"), dict):
        res.plan_env = {str(k): str(v) for k, v in plan["env"].items()}
    if isinstance(plan, dict) and isinstance(plan.get("ranks"), list):
        res.plan_ranks = [r for r in plan["ranks"] if isinstance(r, dict)]
    if isinstance(plan, dict) and isinstance(plan.get("reports"), dict):
        res.plan_reports = plan["reports"]
    if doctor is not None and isinstance(doctor.get("findings"), list):
        res.doctor_findings = [f for f in doctor["findings"] if isinstance(f, dict)]
    return res


def _data(part: Any) -> Optional[dict]:
    """A verb's `data`, from the data itself or from the whole `--json` envelope."""
    if not isinstance(part, dict):
        return None
    if isinstance(part.get("data"), dict) and "schema" in part:
        return part["data"]
    return part


def _features_problem(features: Any) -> Optional[str]:
    from ..model.features import SCHEMA_VERSION
    from ..model.schema import check

    if not isinstance(features, dict):
        return "result holds no Features (probe data.features)"
    if features.get("schema_version") != SCHEMA_VERSION:
        return f"Features schema_version {features.get('schema_version')!r}, this rocetune reads {SCHEMA_VERSION}"
    problem = check(features)
    return f"Features not valid: {problem}" if problem else None


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    return str(value)[:500]
