"""Judge NIC health from two counter snapshots: rates, not lifetime counts.

`judge(previous, current, thresholds)` compares two snapshots of one host (see
rocetune.model.nic_counters) and returns a result per check that is over its threshold, per
port or netdev. The checks, their thresholds and why are in rocetune.checks.nic_counters.

- The interval is the uptime difference when both readings are of the same boot (monotonic,
  immune to clock steps), the wall-clock difference otherwise.
- A counter lower than in the baseline was reset (driver reload, a clear): it is left out and
  reported once per subject as `nic-counters-reset` (info); no rate is ever negative.
- Another boot id: the baseline says nothing about this boot. One `nic-counters-reset` for the
  host, then what the current reading alone can say.
- Without a baseline (`previous` None) only lifetime counts can be given: info results, and the
  link flaps since boot.
- A counter in one reading only (a new port, a driver that added it) is skipped.

Pure: snapshots in, results out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ..checks.binding import emits
from ..checks.nic_counters import CHECKS, REGISTRY, RESET_ID, CounterGrading, Signal, Threshold
from ..errors import ExitCode, RocetuneError
from ..model.finding import Finding, severity_rank
from ..model.nic_counters import PORT_DATA_WORD_BYTES, validate_snapshot
from ..model.vocab import natural_key

GB = 10 ** 9
HOUR_S = 3600.0
# Symbol errors an hour per Gb/s of link rate at a bit error ratio of 1e-12 (1e9 b/s * 3600 s
# * 1e-12), and the rate assumed when the link's speed is unknown (100 Gb/s).
SYMBOL_ERRORS_PER_HOUR_PER_GBPS = 3.6
DEFAULT_RATE_GBPS = 100
CARRIER_FLAPS = "sysfs:carrier_flaps"  # derived from carrier_down_count / carrier_changes


RESET_FIX = REGISTRY[RESET_ID]["fix"]


@dataclass(frozen=True)
class NicResult:
    id: str
    severity: str  # error | warning | info
    subject: str  # mlx5_0/1 (RDMA port) or ens1f0np0 (netdev), or "host"
    message: str
    fix: str
    evidence: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "severity": self.severity, "subject": self.subject,
                "message": self.message, "fix": self.fix, "evidence": self.evidence}

    @emits(*REGISTRY)
    def to_finding(self) -> Finding:
        from ..checks import finding

        return finding(self.id, self.subject, self.message, severity=self.severity,
                       evidence=self.evidence or None, fix=self.fix)


def effective_thresholds(overrides: Optional[Mapping[str, Mapping[str, float]]] = None) -> Dict[str, Threshold]:
    """The default thresholds with `overrides` ({id: {"warn": .., "error": .., "min_delta": ..}})
    applied; RocetuneError naming the id or field that is wrong."""
    out = {c.id: c.threshold for c in CHECKS}
    for cid, fields in (overrides or {}).items():
        if cid not in out:
            raise RocetuneError(f"threshold for unknown NIC check {cid!r}",
                                hint="known: " + ", ".join(sorted(out)), code=ExitCode.INPUT)
        if not isinstance(fields, Mapping):
            raise RocetuneError(f"threshold for {cid}: expected a mapping of warn/error/min_delta",
                                code=ExitCode.INPUT)
        changes: Dict[str, Any] = {}
        for key, value in fields.items():
            if key not in ("warn", "error", "min_delta"):
                raise RocetuneError(f"threshold for {cid}: unknown field {key!r} (warn, error, min_delta)",
                                    code=ExitCode.INPUT)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise RocetuneError(f"threshold for {cid}.{key}: expected a number >= 0, got {value!r}",
                                    code=ExitCode.INPUT)
            changes[key] = int(value) if key == "min_delta" else float(value)
        out[cid] = replace(out[cid], **changes)
    return out


def judge(previous: Optional[dict], current: dict,
          thresholds: Optional[Mapping[str, Mapping[str, float]]] = None) -> List[NicResult]:
    """Results for `current` against the baseline `previous` (None: no baseline), worst first."""
    current = validate_snapshot(current, "current NIC counters")
    limits = effective_thresholds(thresholds)
    if previous is None:
        return _sorted(lifetime(current))
    previous = validate_snapshot(previous, "NIC counter baseline")
    old_boot, new_boot = previous.get("boot_id"), current.get("boot_id")
    if old_boot and new_boot and old_boot != new_boot:
        note = NicResult(RESET_ID, "info", "host",
                         f"the host rebooted since the baseline (boot {old_boot} -> {new_boot}): every "
                         "counter restarted, so no rate is taken; the next reading is judged against this one",
                         RESET_FIX, {"boot_id": {"old": old_boot, "new": new_boot}})
        return _sorted([note] + lifetime(current))
    interval = _interval(previous, current, same_boot=bool(old_boot and new_boot))
    if interval <= 0:
        note = NicResult(RESET_ID, "info", "host",
                         f"the baseline was not taken before this reading (interval {interval:.0f} s): no "
                         "rate is taken", RESET_FIX, {"interval_s": interval})
        return _sorted([note] + lifetime(current))
    results: List[NicResult] = []
    speeds = _speeds(current)
    for subject, new, old, gbytes in _pairs(previous, current):
        if old is None:
            results += _lifetime_subject(subject, new, current)
            continue
        resets = {k: (old[k], new[k]) for k in sorted(new)
                  if k in old and new[k] < old[k] and k != CARRIER_FLAPS}
        if resets:
            results.append(NicResult(
                RESET_ID, "info", subject,
                f"{subject}: {len(resets)} counter(s) went down since the baseline "
                f"({', '.join(resets)}): reset, left out of this reading", RESET_FIX,
                {"counters": {k: {"old": o, "new": n} for k, (o, n) in resets.items()}}))
        for check in CHECKS:
            result = _judge_check(check, limits[check.id], subject, old, new, interval, gbytes,
                                  speeds.get(subject))
            if result is not None:
                results.append(result)
    return _sorted(results)


def lifetime(current: dict) -> List[NicResult]:
    """What one reading alone can say: lifetime counts as info (no rate without a baseline)."""
    out: List[NicResult] = []
    for subject, counters, _, _ in _pairs(None, current):
        out += _lifetime_subject(subject, counters, current)
    return out


# --- subjects and their counters ------------------------------------------------------------

def _flat_port(entry: dict) -> Dict[str, int]:
    return {f"rdma:{k}": v for k, v in entry.get("counters", {}).items()}


def _flat_netdev(entry: dict) -> Dict[str, int]:
    out = {f"sysfs:{k}": v for k, v in entry.get("sysfs", {}).items()}
    out.update({f"ethtool:{k}": v for k, v in entry.get("ethtool", {}).items()})
    sysfs = entry.get("sysfs", {})
    # A flap is a down and an up: carrier_down_count counts the downs; without it (kernels
    # before 4.16) half of carrier_changes, rounded up so a link that went down and stayed
    # down counts. Both include the down at the interface's creation.
    if "carrier_down_count" in sysfs:
        out[CARRIER_FLAPS] = sysfs["carrier_down_count"]
    elif "carrier_changes" in sysfs:
        out[CARRIER_FLAPS] = (sysfs["carrier_changes"] + 1) // 2
    return out


def _subjects(snapshot: dict) -> Dict[str, Tuple[Dict[str, int], Dict[str, Optional[int]]]]:
    """subject -> (flat counters, bytes {rx, tx} or None where unknown)."""
    netdevs = {name: _flat_netdev(e) for name, e in snapshot.get("netdevs", {}).items()}
    out: Dict[str, Tuple[Dict[str, int], Dict[str, Optional[int]]]] = {}
    for name, flat in netdevs.items():
        out[name] = (flat, _netdev_bytes(flat))
    for name, entry in snapshot.get("ports", {}).items():
        flat = _flat_port(entry)
        gbytes = {d: (flat[f"rdma:port_{w}_data"] * PORT_DATA_WORD_BYTES if f"rdma:port_{w}_data" in flat else None)
                  for d, w in (("rx", "rcv"), ("tx", "xmit"))}
        # Soft-RoCE keeps no PortCounters: its traffic is its netdev's.
        parent = netdevs.get(entry.get("netdev") or "")
        if parent is not None:
            fallback = _netdev_bytes(parent)
            gbytes = {d: (v if v is not None else fallback[d]) for d, v in gbytes.items()}
        out[name] = (flat, gbytes)
    return out


def _netdev_bytes(flat: Dict[str, int]) -> Dict[str, Optional[int]]:
    # The physical port's bytes include RDMA traffic, which the kernel's statistics never see.
    return {d: flat.get(f"ethtool:{d}_bytes_phy", flat.get(f"sysfs:{d}_bytes")) for d in ("rx", "tx")}


def _moved(old: Optional[int], new: Optional[int]) -> Optional[int]:
    return new - old if new is not None and old is not None and new >= old else None


def _pairs(previous: Optional[dict], current: dict) -> Iterator[tuple]:
    """(subject, new counters, old counters or None, bytes moved {rx, tx} or None) per subject."""
    new_subjects = _subjects(current)
    old_subjects = _subjects(previous) if previous is not None else {}
    for subject in sorted(new_subjects, key=natural_key):
        new, new_bytes = new_subjects[subject]
        old_entry = old_subjects.get(subject)
        if old_entry is None:
            yield subject, new, None, None
            continue
        old, old_bytes = old_entry
        moved = {d: _moved(old_bytes[d], new_bytes[d]) for d in ("rx", "tx")}
        yield subject, new, old, moved


def _speeds(snapshot: dict) -> Dict[str, float]:
    """Link rate in Gb/s per subject: a port's own, a netdev's that of the fastest port on it."""
    out: Dict[str, float] = {}
    for name, port in snapshot.get("ports", {}).items():
        rate = port.get("rate_gbps")
        if isinstance(rate, (int, float)) and rate > 0:
            out[name] = rate
            netdev = port.get("netdev")
            if netdev:
                out[netdev] = max(out.get(netdev, 0), rate)
    return out


def _interval(previous: dict, current: dict, same_boot: bool) -> float:
    old_up, new_up = previous["taken_at"].get("uptime_s"), current["taken_at"].get("uptime_s")
    if same_boot and isinstance(old_up, (int, float)) and isinstance(new_up, (int, float)):
        return float(new_up) - float(old_up)
    return float(current["taken_at"]["epoch_s"]) - float(previous["taken_at"]["epoch_s"])


# --- one check on one subject ---------------------------------------------------------------

def _names(signal: Signal, counters: Mapping[str, int]) -> List[str]:
    if not signal.pattern:
        key = f"{signal.source}:{signal.name}"
        return [key] if key in counters else []
    rx = _PATTERNS.get(signal)
    if rx is None:
        rx = _PATTERNS[signal] = re.compile(re.escape(signal.source + ":") + signal.name)
    return sorted(k for k in counters if rx.fullmatch(k))


_PATTERNS: Dict[Signal, re.Pattern[str]] = {}


def _judge_check(check: CounterGrading, limit: Threshold, subject: str, old: Mapping[str, int], new: Mapping[str, int],
                 interval: float, gbytes: Mapping[str, Optional[int]],
                 rate_gbps: Optional[float]) -> Optional[NicResult]:
    error_limit = limit.error
    if error_limit is None:  # symbol errors: the BER of 1e-12 at the link's speed
        error_limit = SYMBOL_ERRORS_PER_HOUR_PER_GBPS * (rate_gbps or DEFAULT_RATE_GBPS)
    evidence: Dict[str, dict] = {}
    worst: Optional[Tuple[float, str, int]] = None  # (rate, counter, delta)
    floors: Dict[str, str] = {}  # counter -> the severity its increase forces
    for signal in check.signals:
        for key in _names(signal, new):
            if key not in old or new[key] < old[key]:
                continue  # new counter, or reset (reported apart)
            delta = new[key] - old[key]
            evidence[key] = {"old": old[key], "new": new[key], "delta": delta}
            if delta == 0:
                continue
            if signal.floor:
                floors[key] = signal.floor
                continue
            rate = _rate(limit.unit, signal, delta, interval, gbytes)
            if worst is None or rate > worst[0]:
                worst = (rate, key, delta)
    by_rate = None
    if worst is not None and worst[2] >= max(limit.min_delta, 1):
        by_rate = "error" if worst[0] > error_limit else "warning" if worst[0] > limit.warn else None
    by_floor = min(floors.values(), key=severity_rank) if floors else None
    if by_rate is None and by_floor is None:
        return None
    if by_floor is not None and (by_rate is None or severity_rank(by_floor) < severity_rank(by_rate)):
        severity = by_floor
        message = (f"{subject}: {check.title.lower()}: {', '.join(k.split(':', 1)[1] for k in floors)} "
                   f"increased over {_fmt_interval(interval)}")
    else:
        assert by_rate is not None and worst is not None  # by_rate is set from worst
        severity = by_rate
        rate, key, delta = worst
        message = (f"{subject}: {check.title.lower()}: {_fmt(rate, limit.unit)} "
                   f"{_unit_text(limit.unit, _direction(check, key))} over {_fmt_interval(interval)} "
                   f"({key.split(':', 1)[1]} +{delta}); warning above {_fmt(limit.warn, limit.unit)}, "
                   f"error above {_fmt(error_limit, limit.unit)}")
    return NicResult(check.id, severity, subject, message, check.fix, {
        "interval_s": round(interval, 3), "rate": round(worst[0], 6) if worst else None, "unit": limit.unit,
        "warn": limit.warn, "error": error_limit, "min_delta": limit.min_delta,
        "gb": {d: (round(v / GB, 6) if v is not None else None) for d, v in gbytes.items()},
        "counters": evidence})


def _rate(unit: str, signal: Signal, delta: int, interval: float, gbytes: Mapping[str, Optional[int]]) -> float:
    if unit == "per_hour":
        # An interval shorter than an hour counts as one: a handful of events in a few minutes
        # is reported as the handful, not blown up to an hourly rate.
        return delta / max(interval / HOUR_S, 1.0)
    if unit == "per_gb":
        moved = gbytes.get(signal.direction)
        # Never less than a GB: an idle port's few errors are not divided by a few bytes. Bytes
        # unknown (no byte counter, or it was reset): judged as if a GB moved.
        return delta / max((moved or 0) / GB, 1.0)
    if unit == "paused_fraction":
        return min(delta * signal.seconds / interval, 1.0)
    raise ValueError(f"unknown unit {unit!r}")


def _direction(check: CounterGrading, key: str) -> str:
    source, name = key.split(":", 1)
    for s in check.signals:
        if s.source == source and (re.fullmatch(s.name, name) if s.pattern else s.name == name):
            return s.direction
    return "rx"


def _unit_text(unit: str, direction: str) -> str:
    return {"per_hour": "an hour", "per_gb": "per GB " + ("received" if direction == "rx" else "sent"),
            "paused_fraction": "of the time paused"}[unit]


def _fmt(value: float, unit: str) -> str:
    if unit == "paused_fraction":
        return f"{value * 100:.3g}%"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def _fmt_interval(seconds: float) -> str:
    if seconds >= 2 * HOUR_S:
        return f"{seconds / HOUR_S:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


# --- one reading alone ----------------------------------------------------------------------

def _lifetime_subject(subject: str, counters: Mapping[str, int], snapshot: dict) -> List[NicResult]:
    out = []
    uptime = snapshot["taken_at"].get("uptime_s")
    for check in CHECKS:
        values = {}
        for signal in check.signals:
            for key in _names(signal, counters):
                value = counters[key]
                if key == CARRIER_FLAPS:
                    value = max(0, value - 1)  # the down at the interface's creation is no flap
                if value > 0:
                    values[key] = value
        if not values:
            continue
        key = max(values, key=lambda k: (values[k], k))
        since = "since the counters started"
        if check.id == "nic-link-flaps":
            since = "since boot" + (f" ({_fmt_interval(uptime)} ago)" if isinstance(uptime, (int, float)) else "")
        out.append(NicResult(
            check.id, "info", subject,
            f"{subject}: {check.title.lower()}: {key.split(':', 1)[1]} is {values[key]:,} {since}; "
            "no baseline to take a rate from (the next reading against this one will)",
            check.fix, {"lifetime": True, "counters": values,
                        "uptime_s": uptime if isinstance(uptime, (int, float)) else None}))
    return out


def _sorted(results: List[NicResult]) -> List[NicResult]:
    # Worst first; among equals what is about the whole host (a reboot) before any port.
    return sorted(results, key=lambda r: (severity_rank(r.severity), r.subject != "host",
                                          natural_key(r.subject), r.id))


def rates(previous: Optional[dict], current: dict) -> List[Tuple[str, str, str, float]]:
    """(check id, subject, unit, rate): for each check and subject, the highest rate among its
    counters since the baseline, thresholds aside (what a monitoring system graphs and alerts
    on; rocetune.render.metrics). [] without a baseline of this boot; counters that were reset
    or have no baseline are left out, as judge() leaves them."""
    if previous is None:
        return []
    current = validate_snapshot(current, "current NIC counters")
    previous = validate_snapshot(previous, "NIC counter baseline")
    old_boot, new_boot = previous.get("boot_id"), current.get("boot_id")
    if old_boot and new_boot and old_boot != new_boot:
        return []
    interval = _interval(previous, current, same_boot=bool(old_boot and new_boot))
    if interval <= 0:
        return []
    out: List[Tuple[str, str, str, float]] = []
    for subject, new, old, gbytes in _pairs(previous, current):
        if old is None:
            continue
        for check in CHECKS:
            seen, worst = False, 0.0
            for signal in check.signals:
                if signal.floor:
                    continue
                for key in _names(signal, new):
                    if key in old and new[key] >= old[key]:
                        seen = True
                        worst = max(worst, _rate(check.threshold.unit, signal, new[key] - old[key],
                                                 interval, gbytes))
            if seen:
                out.append((check.id, subject, check.threshold.unit, worst))
    return sorted(out, key=lambda r: (r[0], natural_key(r[1])))
