"""The per-host result files of a fleet directory (docs/fleet.md): one `HOST.json` per host,
either the gathered form `{"schema", "host", "probe", "doctor", "gathered_at", "error"}`, or
what `rocetune --json doctor` (or `probe`) printed on the host, as it is.

A file comes from a node and travels by whatever gathered it: it is untrusted input, and so is
the directory: one that another user owns, or that its group or everyone may write (not sticky),
is refused. Only regular files that belong to root or to the user
running rocetune are read -- never through a link, never blocking on a FIFO, at most
MAX_BYTES, their values counted before they are parsed (rocetune.hostfs.inputs.read_input,
rocetune.model.jsonread). A file that cannot be read, is not JSON, or holds no usable Features
is that host's failure, never the report's: the other hosts are still compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..core.fleet_host_doc import SCHEMA
from ..errors import ExitCode, HostReadError, RocetuneError
from ..hostfs.inputs import read_input, trusted_owners
from ..model.jsonread import MAX_DOCUMENT_BYTES, load_json
from ..model.vocab import natural_key

ENVELOPE = "rocetune.result/1"  # a verb's --json output (cli/result.py)
# What a node may send and a result file may weigh: a 522-device host's doctor --json is 6.2 MB,
# an 8-NIC host's 90 KB.
MAX_BYTES = MAX_DOCUMENT_BYTES


@dataclass
class HostResult:
    host: str
    error: Optional[str] = None  # the gather failed, or its file cannot be used
    gathered_at: Optional[str] = None
    features: Optional[dict] = None
    plan_env: Optional[Dict[str, str]] = None  # None: no plan in the result
    # What jobs get from the node's deployed env files (doctor's data.deployed_env): {"files",
    # "values"}; None where the result does not say (a probe, no file deployed).
    deployed_env: Optional[Dict[str, Any]] = None
    plan_ranks: Optional[List[dict]] = None  # the plan's local ranks: GPU, its bus id, its NIC
    plan_reports: Optional[dict] = None  # the plan's reports (gpudirect-rdma: the GDR route)
    doctor_findings: Optional[List[dict]] = None  # None: no doctor run in the result
    doctor_skipped: List[dict] = field(default_factory=list)  # what the node's check configuration skipped
    warnings: List[str] = field(default_factory=list)
    fleet_facts: Optional[Dict[str, Any]] = None  # the Features' facts (fleet.facts), once known
    expect_facts: Optional[dict] = None  # doctor's data.expect.facts (model.expect.NodeFacts), raw
    named: Optional[str] = None  # the host the result itself names (its `host`, doctor's or the Features')

    @property
    def ok(self) -> bool:
        return self.error is None

    def node_facts(self) -> Dict[str, Any]:
        """The facts read from the Features (fleet.facts.FEATURE_KEYS): the node's own copy,
        else computed here from the Features as they are now."""
        if self.fleet_facts is not None:
            return self.fleet_facts
        from .facts import features_facts

        deployed = (self.deployed_env or {}).get("values")  # what jobs get, else the plan
        return features_facts(self.features or {}, deployed if deployed is not None else self.plan_env)


def load_dir(directory: str, keep_features: bool = True) -> List[HostResult]:
    """Every `*.json` of `directory`, in natural host order. Without `keep_features` each result
    keeps only its facts (what a fleet report compares), not its Features: a result carrying the
    node's own facts is not even checked against the Features schema, and one that holds only
    Features has its facts computed as it is read, so a thousand hosts never sit in memory."""
    if not os.path.isdir(directory):
        raise RocetuneError(f"{directory}: not a directory", hint="give the directory of HOST.json results",
                            code=ExitCode.INPUT)
    why = directory_problem(directory)
    if why:
        raise RocetuneError(f"{directory}: {why}: another user could remove or swap the results in it",
                            hint="keep the results in a directory of root's or yours that no one else may write "
                                 "(docs/fleet.md)", code=ExitCode.INPUT)
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith(".")]
    except OSError as exc:
        raise RocetuneError(f"{directory}: cannot list: {exc.strerror}", code=ExitCode.INPUT) from None
    if not names:
        raise RocetuneError(f"{directory}: no HOST.json result in it",
                            hint="docs/fleet.md describes the result files", code=ExitCode.INPUT)
    names.sort(key=lambda n: natural_key(n[:-5]))
    return [load_file(os.path.join(directory, n), keep_features) for n in names]


def directory_problem(directory: str) -> Optional[str]:
    """Why the results in `directory` could be another user's choice, or None: the directory
    (as resolved) belongs to another user than those whose files are read (trusted_owners), or
    its group or everyone may write it and it is not sticky (anyone could remove a host's result
    or rename an old one into its place)."""
    try:
        st = os.stat(directory)
    except OSError as exc:
        return f"cannot read it ({exc.strerror})"
    if st.st_uid not in trusted_owners():
        return f"it belongs to uid {st.st_uid}"
    if st.st_mode & 0o022 and not st.st_mode & 0o1000:
        return f"its mode {st.st_mode & 0o7777:04o} lets {'everyone' if st.st_mode & 0o002 else 'its group'} write it"
    return None


def load_file(path: str, keep_features: bool = True) -> HostResult:
    host = os.path.basename(path)[:-5]
    if not _utf8(host):  # a name no page or JSON can carry as it is: shown with U+FFFD, not read
        shown = os.fsencode(host).decode("utf-8", "replace")
        return HostResult(shown, error="result file name is not UTF-8: not read")
    try:
        data = read_input(path, MAX_BYTES, follow=False, owners=trusted_owners())
        doc = load_json(data.decode("utf-8"))
    except HostReadError as exc:
        return HostResult(host, error=f"result file not read: {exc.reason}")
    except OSError as exc:
        return HostResult(host, error=f"result file unreadable: {exc.strerror}")
    except ValueError as exc:
        return HostResult(host, error=f"result file is not JSON: {str(exc)[:200]}")
    res = from_doc(host, doc, need_features=keep_features)
    if res.ok and not keep_features:
        res.fleet_facts = res.node_facts()
        res.features = None
    return res


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.listdir's surrogate escapes of undecodable bytes
        return False
    return True


def from_doc(host: str, doc: Any, need_features: bool = True) -> HostResult:
    """The result of `host` from its parsed file: the gathered form, or a verb's --json output
    (doctor or probe) as it is. Without `need_features`, a doctor result's own facts stand in
    for its Features."""
    if not isinstance(doc, dict):
        return HostResult(host, error="result file is not a JSON object")
    if doc.get("schema") == ENVELOPE:
        doc = _from_envelope(doc)
        if isinstance(doc, str):
            return HostResult(host, error=doc)
    res = HostResult(host, gathered_at=_text(doc.get("gathered_at")))
    schema = doc.get("schema", SCHEMA)
    if schema != SCHEMA:
        res.error = f"result schema {str(schema)[:80]!r}, this rocetune reads {SCHEMA}"
        return res
    named = doc.get("host")
    if isinstance(named, str) and named and named != host:
        res.warnings.append(f"{host}.json names host {named!r}; reported as {host}")
    res.named = named if isinstance(named, str) and named else None
    if doc.get("error") is not None:
        res.error = "gather failed: " + (_text(doc["error"]) or "(no reason given)")
        return res
    probe, doctor = _data(doc.get("probe")), _data(doc.get("doctor"))
    if probe is None and doctor is None:
        res.error = "result holds neither a probe nor a doctor run"
        return res
    plan = (probe or {}).get("plan") or (doctor or {}).get("plan")
    env = plan.get("env") if isinstance(plan, dict) else (doctor or {}).get("env")
    if isinstance(env, dict):
        res.plan_env = {str(k): str(v) for k, v in env.items()}
    if isinstance(plan, dict) and isinstance(plan.get("ranks"), list):
        res.plan_ranks = [r for r in plan["ranks"] if isinstance(r, dict)]
    if isinstance(plan, dict) and isinstance(plan.get("reports"), dict):
        res.plan_reports = plan["reports"]
    deployed = (doctor or {}).get("deployed_env")
    if isinstance(deployed, dict) and isinstance(deployed.get("values"), dict):
        res.deployed_env = {"files": [str(f) for f in deployed.get("files") or [] if isinstance(f, str)],
                            "values": {str(k): str(v) for k, v in deployed["values"].items()}}
    if doctor is not None and isinstance(doctor.get("findings"), list):
        res.doctor_findings = [f for f in doctor["findings"] if isinstance(f, dict)]
        skipped = doctor.get("skipped")
        res.doctor_skipped = [f for f in skipped if isinstance(f, dict)] if isinstance(skipped, list) else []
    expect = (doctor or {}).get("expect")
    if isinstance(expect, dict) and isinstance(expect.get("facts"), dict):
        res.expect_facts = expect["facts"]
    features = (probe or {}).get("features") or (doctor or {}).get("features")
    if res.named is None:
        res.named = _named_inside(doctor, features)
    carried = (doctor or {}).get("fleet_facts") if not (probe or {}).get("features") else None
    if carried is not None and (not need_features or features is None):
        from .facts import from_json

        try:
            res.fleet_facts = from_json(carried)
        except ValueError as exc:
            res.error = f"doctor's fleet facts not valid: {str(exc)[:300]}"
        if res.error or not need_features:
            return res
    if features is None and carried is not None:
        res.error = ("the result holds doctor's facts but no Features (rocetune --json doctor -v "
                     "gives them)")
        return res
    problem = _features_problem(features)
    if problem:
        res.error = problem
        return res
    res.features = features
    return res


def _named_inside(doctor: Optional[dict], features: Any) -> Optional[str]:
    """The host name a doctor or probe run recorded: doctor's summary, else the Features'."""
    summary = (doctor or {}).get("summary")
    name = summary.get("host") if isinstance(summary, dict) else None
    if not name and isinstance(features, dict) and isinstance(features.get("host"), dict):
        name = features["host"].get("hostname")
    return str(name)[:253] if isinstance(name, str) and name else None


def short_name(name: str) -> str:
    return name.split(".")[0].lower() if not name.replace(".", "").isdigit() else name


def copies(results: List[HostResult]) -> None:
    """Mark as failed each result that is another host's: it names a host (inside it) that another
    file is named after, not its own file's host. Such a file would otherwise vote as a healthy
    host (`cp gpu01.json gpu09.json`). A name inside that no file has (an inventory alias beside
    the host name) is left as it is."""
    files = {short_name(r.host) for r in results}
    for r in results:
        if not r.ok or not r.named or short_name(r.named) == short_name(r.host):
            continue
        if short_name(r.named) in files:
            r.error = (f"{r.host}.json holds the result of host {r.named!r}, not of {r.host} (a copy or a "
                       "misnamed file): not compared")


def _from_envelope(doc: dict) -> Any:
    """A verb's --json output as the gathered form, or why it cannot be used (text)."""
    command = doc.get("command")
    if command not in ("doctor", "probe"):
        return f"a rocetune {str(command)[:40]!r} result: fleet report reads doctor's or probe's"
    if doc.get("status") == "error" or not isinstance(doc.get("data"), dict):
        listed = doc.get("errors")
        errors: List[Any] = listed if isinstance(listed, list) else []
        why = next((str(e.get("message"))[:300] for e in errors if isinstance(e, dict) and e.get("message")), "")
        return f"{command} failed on the host (exit {doc.get('exit_code')}){': ' + why if why else ''}"
    return {"schema": SCHEMA, command: doc["data"]}


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
        return "result holds no Features (probe data.features) and no doctor facts"
    if features.get("schema_version") != SCHEMA_VERSION:
        return f"Features schema_version {features.get('schema_version')!r}, this rocetune reads {SCHEMA_VERSION}"
    problem = check(features)
    return f"Features not valid: {problem}" if problem else None


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    return str(value)[:500]
