"""doctor's result as Prometheus metrics for node_exporter's textfile collector.

node_exporter reads every `*.prom` file of the directory given to `--collector.textfile.directory`
at each scrape; a file written in place can be read half-written, so doctor writes it to a
temporary name in the same directory and renames it (the collector's own advice). The text is
the exposition format (HELP, TYPE, samples; label values escaped) that `promtool check metrics`
accepts. node_exporter adds `node_textfile_mtime_seconds{file=...}`, the time of the last run.

Metrics (gauges):
- rocetune_doctor_check_status{check}: per check doctor grades (host, rule, doctor, expect
  checks): 0 nothing found (notes only), 1 warning, 2 failure, -1 skipped by the node's check
  configuration, -2 not checked (a reader that failed, no expectations, no counter window): a
  check that did not run is never shown as a pass;
- rocetune_doctor_findings{check,severity}: findings per check and severity, where there are any;
- rocetune_doctor_failures, rocetune_doctor_warnings, rocetune_doctor_exit_code;
- rocetune_expect_verdict{verdict}: 1 for the expectations' verdict (met, short, none), 0 else;
- rocetune_expect_differences: the differences from the expectations;
- rocetune_env_drift_variables{file}: variables of a deployed env file that differ from the plan now;
- rocetune_env_refused: 1 while the boot unit's refusal of a degraded env stands;
- rocetune_nic_events_per_hour, rocetune_nic_events_per_gigabyte, rocetune_nic_paused_ratio
  {check,subject}: the highest counter rate of each NIC health check over the counters' window
  (docs/health.md), one family per unit, where doctor has an earlier reading of this boot;
- rocetune_info{version}: 1.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Tuple

from ..model.finding import Finding

GRADED_KINDS = ("host", "rule", "doctor", "expect")
_STATUS = {"error": 2, "warning": 1, "info": 0}
VERDICTS = ("met", "short", "none")
NOT_CHECKED = -2
# One family per unit: a metric mixes no units, and names no type (promtool's lint).
RATE_FAMILIES = {"per_hour": ("rocetune_nic_events_per_hour", "events an hour"),
                 "per_gb": ("rocetune_nic_events_per_gigabyte", "events per 10^9 bytes moved"),
                 "paused_fraction": ("rocetune_nic_paused_ratio", "share of the time paused (0 to 1)")}
# The "not checked" note of a reader that failed, and the checks it leaves without input.
UNREAD = {"doctor-kernel-log-unread": "doctor-kernel-", "doctor-fw-unread": "doctor-fw-",
          "doctor-phy-unread": "doctor-phy-"}


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return format(value, ".10g")


class _Text:
    def __init__(self) -> None:
        self.lines: List[str] = []

    def family(self, name: str, help_text: str, samples: Iterable[Tuple[Dict[str, object], float]]) -> None:
        rows = list(samples)
        self.lines.append(f"# HELP {name} {_help(help_text)}")
        self.lines.append(f"# TYPE {name} gauge")
        for labels, value in rows:
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in sorted(labels.items()))
            self.lines.append(f"{name}{{{inner}}} {_number(value)}" if inner else f"{name} {_number(value)}")


def textfile(findings: Sequence[Finding], data: dict, check_ids: Sequence[str], exit_code: int,
             version: str) -> str:
    """The metrics of one doctor run: `findings` as graded, `data` doctor's result data,
    `check_ids` the checks doctor grades."""
    skipped = {f.id for f in (_finding_like(x) for x in data.get("skipped") or [])}
    worst: Dict[str, int] = {}
    counts: Dict[Tuple[str, str], int] = {}
    for f in findings:
        worst[f.id] = max(worst.get(f.id, 0), _STATUS.get(f.severity, 0))
        counts[(f.id, f.severity)] = counts.get((f.id, f.severity), 0) + 1
    out = _Text()
    unchecked = not_checked(findings, data, check_ids)

    def status(check: str) -> int:
        if check in worst and worst[check] > 0:
            return worst[check]
        if check in skipped:
            return -1
        return NOT_CHECKED if check in unchecked else worst.get(check, 0)

    out.family("rocetune_doctor_check_status",
               "Worst finding of each check doctor grades: 0 nothing found (notes only), 1 warning, "
               "2 failure, -1 skipped by the node's check configuration, -2 not checked (what it reads "
               "could not be read, or there is nothing to hold the node to).",
               (({"check": c}, status(c)) for c in sorted(set(check_ids) | set(worst))))
    out.family("rocetune_doctor_findings", "Findings of a check by severity, as graded on this node.",
               (({"check": c, "severity": s}, n) for (c, s), n in sorted(counts.items())))
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    out.family("rocetune_doctor_failures", "Failures doctor found.", [({}, errors)])
    out.family("rocetune_doctor_warnings", "Warnings doctor found.", [({}, warnings)])
    out.family("rocetune_doctor_exit_code",
               "doctor's exit code: 0 clean, 1 failures, 5 warnings (docs/cli.md).", [({}, exit_code)])
    expect = data.get("expect") or {}
    verdict = expect.get("verdict") or "none"
    out.family("rocetune_expect_verdict",
               "1 for the verdict of the node's expectations (met, short, none declared), 0 for the others.",
               (({"verdict": v}, int(v == verdict)) for v in VERDICTS))
    out.family("rocetune_expect_differences", "Differences between the node and its expectations.",
               [({}, len(expect.get("differences") or []))])
    out.family("rocetune_env_drift_variables",
               "Variables of a deployed env file rocetune wrote that differ from the plan of the node now.",
               (({"file": path}, n) for path, n in sorted(_drift(findings, data).items())))
    out.family("rocetune_env_refused",
               "1 while the boot unit's refusal of a degraded env stands (the previous env is in place).",
               [({}, int(bool((data.get("readings") or {}).get("env_refused"))))])
    rates = (data.get("counters") or {}).get("rates") or []
    for unit, (name, what) in RATE_FAMILIES.items():
        out.family(name, f"Highest {what} of each NIC health check over the counters' window (docs/health.md).",
                   (({"check": r["check"], "subject": r["subject"]}, r["rate"]) for r in rates if r["unit"] == unit))
    out.family("rocetune_info", "The rocetune that wrote these metrics.", [({"version": version}, 1)])
    return "\n".join(out.lines) + "\n"


def not_checked(findings: Sequence[Finding], data: dict, check_ids: Sequence[str]) -> set:
    """The checks that did not run on this node: those a failed reader leaves without input, the
    expectations' checks without expectations, the NIC counter checks without counters or without
    an earlier reading to take a rate from."""
    out = set()
    for f in findings:
        prefix = UNREAD.get(f.id)
        if prefix:
            out |= {c for c in check_ids if c.startswith(prefix) and c != f.id}
    if (data.get("expect") or {}).get("verdict", "none") == "none":
        out |= {c for c in check_ids if c.startswith("expect-") and c != "expect-unchecked"}
    counters = data.get("counters")
    if not counters or not counters.get("baseline"):
        from ..checks.nic_counters import CHECKS

        out |= {c.id for c in CHECKS}
    return out


def _finding_like(d: dict) -> Finding:
    return Finding(d["id"], d["severity"], d["subject"], d["message"], d.get("kind", ""), d.get("source", ""),
                   d.get("fix", ""))


def _drift(findings: Sequence[Finding], data: dict) -> Dict[str, int]:
    """Per deployed env file rocetune wrote: how many variables differ from the plan now."""
    from ..doctor.readings import ENV_FILES
    from ..envfiles.changes import MANAGED_MARKER

    out: Dict[str, int] = {}
    for fmt, text in ((data.get("readings") or {}).get("env_files") or {}).items():
        if text and text.startswith(MANAGED_MARKER) and fmt in ENV_FILES:
            out[ENV_FILES[fmt]] = 0
    for f in findings:
        if f.id == "doctor-env-drift" and f.evidence and f.subject in out:
            out[f.subject] = len(f.evidence.get("changes") or [])
    return out
