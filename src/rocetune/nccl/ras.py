"""Read what NCCL's RAS subsystem says of a running job (`ncclras`, text or `-f json`), and judge it.

    status = read_status(text)              # one poll: RasStatus
    verdicts = judge(first, second, plan)   # findings: (id, severity, subject, message, evidence)

Formats, NVIDIA/nccl src/ras/client_support.cc (v2.30.7-1 line numbers; the same text at v2.31.2-1):
the group table "Group     Comms     Nodes     Ranks ..." with rows "%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s"
(:1206, :1240; Status one of NOCOMM INIT RUNNING FINALIZE ABORT, Errors OK or a comma list of MISMATCH,
ERROR, INCOMPLETE: :984-994); the "Errors" and "Warnings" sections (:1252, :1423) with INCOMPLETE, DEAD,
TIMEOUT and per-communicator "#%d-%d (%016lx) INCOMPLETE|ERROR|MISMATCH" entries (:1366, :1394, :1440);
inside them "Process %d on node %s managing GPU%s %s" (:1311), "Rank %d -- GPU %s managed by process %d
on node %s" (:1379), "Rank %d has status %s -- ..." (:1507), "%d ranks have launched up to operation %ld"
(:1603), "Rank %d has launched up to operation %ld -- ..." (:1621), "The missing rank(s): ..." (NCCL's
own sample output, docs/userguide/source/troubleshooting/ras.rst at v2.31.2-1). JSON (`SET FORMAT json`,
2.28.7+, :1921-): communicators with their ranks (status: init_state, async_error, abort_flag, ...;
collective_counts per operation) and missing_ranks (unresponsive, considered_dead).

What one poll cannot tell: NCCL's page says a MISMATCH of operation counts is normal while the job runs
"as long as the counts increase across repeated queries"; and "RUNNING OK" says nothing of progress
(a job whose watchdog had fired still showed it: NVIDIA/nccl#1730). So a communicator is called stuck
only from two polls whose counts did not move; and where RAS lists the ranks *ahead* of the others by
its outlier rule (at most 25% of the ranks and 10 of them; NVIDIA/nccl#1911: the two ranks ahead were
named, not the 30 behind), the ranks behind are the suspects, named as the ranks RAS did not list.
Every byte is untrusted: lines are cut, counts capped, and what does not parse is counted, not guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple, Union

MAX_BYTES = 64 << 20  # a RAS answer for a very large job is a few MiB; more is not RAS's
MAX_LINE = 4096
MAX_ITEMS = 100000  # ranks, rows, entries kept per poll
STATUSES = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT", "UNKNOWN")

_ROW = re.compile(r"\s*(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9}(?:-\d{1,9})?)\s+(\d{1,9})\s+(\d{1,9})\s+"
                  r"([A-Z]{1,12})\s+([A-Z,]{1,40})")
_COMM = re.compile(r"#(\d{1,9})-(\d{1,9}) \(([0-9a-f]{1,16})\) ([A-Z,]{1,40})")
_RANK = re.compile(r"\s+Rank (\d{1,9})(?: (has status \w{1,12}|has launched up to operation \d{1,20}|"
                   r"has not launched any operations|reported [\w ]{1,64}))? -- (?:GPU (\S{1,64}) managed by process "
                   r"(\d{1,10}) on node (\S{1,255})|\[process information not found\])")
_PROCESS = re.compile(r"\s+Process (\d{1,10}) on node (\S{1,255}) managing GPUs? (\S{1,255})")
_GROUP = re.compile(r"\s+(\d{1,9}) ranks (have status \w{1,12}|have launched up to operation \d{1,20}|"
                    r"have not launched any operations|reported [\w ]{1,64})")
_MISSING = re.compile(r"\s+The missing ranks?: ([\d, ]{1,100000})")
_DIFFERENT = re.compile(r"\s+Communicator ranks have different (\w{1,32}) operation counts")
_JOB_VALUES = re.compile(r"\s*(\d{1,9})\s+(\d{1,9})(?:\s+(\d{1,9}))?(?:\s+(\d{1,9}))?(?:\s+(\d{1,9}))?\s*")


class RasRank(NamedTuple):
    rank: int
    what: str                  # "" or "has status RUNNING", "has launched up to operation 6649", ...
    gpu: Optional[str] = None
    pid: Optional[int] = None
    node: Optional[str] = None


@dataclass
class RasEntry:
    """One entry of the Errors or Warnings section: a job-wide one (INCOMPLETE, DEAD, TIMEOUT) or one
    communicator's (`#g-c (hash) KIND`)."""

    section: str               # Errors | Warnings
    kind: str                  # INCOMPLETE | DEAD | TIMEOUT | MISMATCH | ERROR | ...
    comm: Optional[str] = None          # "#0-0"
    comm_hash: Optional[str] = None     # 16 hex digits
    lines: List[str] = field(default_factory=list)
    ranks: List[RasRank] = field(default_factory=list)            # the ranks RAS named
    processes: List[Tuple[int, str, str]] = field(default_factory=list)  # (pid, node, GPUs)
    groups: List[Tuple[int, str]] = field(default_factory=list)   # (count, "have launched up to operation 6650")
    missing: List[int] = field(default_factory=list)
    counts_of: Optional[str] = None     # "collective", "AllReduce": whose operation counts differ
    rank_in: Dict[int, str] = field(default_factory=dict)  # a named rank -> its group's "launched up to ..."

    def to_dict(self) -> Dict[str, Any]:
        return {"section": self.section, "kind": self.kind, "comm": self.comm, "comm_hash": self.comm_hash,
                "ranks": [r._asdict() for r in self.ranks], "processes": [list(p) for p in self.processes],
                "groups": [list(g) for g in self.groups], "missing": list(self.missing), "counts_of": self.counts_of}


@dataclass
class RasGroup:
    """One row of the communicators table: `comms` communicators alike in size and state."""

    group: int
    comms: int
    nodes: int
    ranks_per_node: str
    ranks_per_comm: int
    ranks_in_group: int
    status: str
    errors: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RasComm:
    """A communicator as the JSON output gives it: per rank its state and operation counts."""

    hash: str
    size: int
    ranks: Dict[int, dict] = field(default_factory=dict)    # rank -> {host, pid, cuda_dev, status, counts}
    missing: Dict[int, dict] = field(default_factory=dict)  # rank -> {host, pid, unresponsive, considered_dead}


@dataclass
class RasStatus:
    form: str                                   # text | json
    version: Optional[str] = None
    groups: List[RasGroup] = field(default_factory=list)
    entries: List[RasEntry] = field(default_factory=list)
    comms: Dict[str, RasComm] = field(default_factory=dict)  # JSON only, by hash
    job: Dict[str, int] = field(default_factory=dict)
    unread_lines: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return {"form": self.form, "version": self.version, "job": dict(self.job),
                "groups": [g.to_dict() for g in self.groups], "entries": [e.to_dict() for e in self.entries],
                "communicators": len(self.comms), "unread_lines": self.unread_lines}


class RasError(ValueError):
    """The text is not an ncclras answer."""


def read_status(data: Union[str, bytes]) -> RasStatus:
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise RasError(f"{len(data)} bytes: more than an ncclras answer ({MAX_BYTES} bytes at most)")
        data = data.decode("utf-8", "replace")
    if len(data) > MAX_BYTES:
        raise RasError(f"more than an ncclras answer ({MAX_BYTES} bytes at most)")
    if data.lstrip().startswith("{"):
        return _read_json(data)
    return _read_text(data)


def _read_text(text: str) -> RasStatus:
    st = RasStatus("text")
    section: Optional[str] = None
    entry: Optional[RasEntry] = None
    in_table = seen = False
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        line = raw[:MAX_LINE].rstrip()
        if not line:
            entry = None
            in_table = False
            continue
        if line.startswith("NCCL version "):
            st.version = line.split()[2][:40]
            continue
        if line.startswith("Group     Comms"):
            in_table = seen = True
            continue
        if line in ("Errors", "Warnings"):
            section, entry, in_table, seen = line, None, False, True
            continue
        if set(line) == {"="} or line.startswith("(total)") or line.startswith("    #  in group"):
            continue
        if line.startswith("  Nodes  Processes") and i + 2 < len(lines):
            values = _JOB_VALUES.fullmatch(lines[i + 2][:MAX_LINE]) if i + 2 < len(lines) else None
            if values:
                names = ("nodes", "processes_per_node", "gpus_per_process", "processes", "gpus")
                st.job = {n: int(v) for n, v in zip(names, values.groups()) if v is not None}
            seen = True
            continue
        if in_table:
            m = _ROW.fullmatch(line)
            if m and len(st.groups) < MAX_ITEMS:
                st.groups.append(RasGroup(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4),
                                          int(m.group(5)), int(m.group(6)), m.group(7), m.group(8).split(",")))
                continue
        c = _COMM.fullmatch(line)
        if c or (section is not None and not line.startswith(" ")):
            # a communicator's entry is read outside a section too (NCCL's page elides one with "[...]")
            where = section or ("Warnings" if c and c.group(4) == "MISMATCH" else "Errors")
            entry = RasEntry(where, c.group(4), f"#{c.group(1)}-{c.group(2)}", c.group(3)) if c else \
                RasEntry(where, line.split()[0])
            if len(st.entries) < MAX_ITEMS:
                st.entries.append(entry)
            seen = True
            continue
        if entry is not None and line.startswith(" "):
            _entry_line(entry, line)
            continue
        if not (line.startswith(("Job summary", "Communicators", "Gathering", "[...]", "CUDA runtime")) or
                _JOB_VALUES.fullmatch(line)):
            st.unread_lines += 1
    if not seen:
        raise RasError("no RAS status in it (no 'Group     Comms' table, 'Errors', 'Warnings' or job summary)")
    return st


def _entry_line(entry: RasEntry, line: str) -> None:
    if len(entry.lines) < MAX_ITEMS:
        entry.lines.append(line.strip())
    r = _RANK.match(line)
    if r:
        if len(entry.ranks) < MAX_ITEMS:
            entry.ranks.append(RasRank(int(r.group(1)), r.group(2) or "", r.group(3),
                                       int(r.group(4)) if r.group(4) else None, r.group(5)))
            # a bare "Rank r -- ..." line belongs to the group line above it (client_support.cc:1603-1614)
            what = r.group(2) or (entry.groups[-1][1] if entry.groups else "")
            entry.rank_in[int(r.group(1))] = what.replace("have ", "has ", 1)
        return
    p = _PROCESS.match(line)
    if p:
        if len(entry.processes) < MAX_ITEMS:
            entry.processes.append((int(p.group(1)), p.group(2), p.group(3)))
        return
    g = _GROUP.fullmatch(line)
    if g:
        entry.groups.append((int(g.group(1)), g.group(2)))
        return
    d = _DIFFERENT.fullmatch(line)
    if d:
        entry.counts_of = d.group(1)
        return
    m = _MISSING.fullmatch(line)
    if m:
        entry.missing += [int(x) for x in re.findall(r"\d{1,9}", m.group(1))[:MAX_ITEMS]]


def _read_json(text: str) -> RasStatus:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise RasError(f"not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("communicators"), list):
        raise RasError("JSON without a 'communicators' list: not ncclras -f json output")
    st = RasStatus("json", version=_str(doc.get("nccl_version")))
    for c in doc["communicators"][:MAX_ITEMS]:
        if not isinstance(c, dict) or not isinstance(c.get("hash"), str):
            st.unread_lines += 1
            continue
        comm = st.comms.setdefault(c["hash"][:40], RasComm(c["hash"][:40], _int(c.get("size")) or 0))
        for r in (c.get("ranks") or [])[:MAX_ITEMS] if isinstance(c.get("ranks"), list) else []:
            if isinstance(r, dict) and isinstance(_int(r.get("rank")), int):
                counts = _dict(r.get("collective_counts"))
                comm.ranks[_int(r["rank"]) or 0] = {
                    "host": _str(r.get("host")), "pid": _int(r.get("pid")),
                    "status": _dict(r.get("status")),
                    "counts": {str(k)[:32]: _int(v) or 0 for k, v in list(counts.items())[:32]}}
        for r in (c.get("missing_ranks") or [])[:MAX_ITEMS] if isinstance(c.get("missing_ranks"), list) else []:
            if isinstance(r, dict) and isinstance(_int(r.get("rank")), int):
                status = _dict(r.get("status"))
                comm.missing[_int(r["rank"]) or 0] = {"host": _str(r.get("host")), "pid": _int(r.get("pid")),
                                                     "unresponsive": status.get("unresponsive") is True,
                                                     "considered_dead": status.get("considered_dead") is True}
    return st


def _dict(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> Optional[str]:
    return v[:255] if isinstance(v, str) else None


# --- judging --------------------------------------------------------------------------------------

class RasVerdict(NamedTuple):
    id: str
    severity: str
    subject: str
    message: str
    evidence: Tuple[str, ...] = ()


VERDICTS = {
    "ras-dead": ("error", "RAS declared a job process dead (unreachable over the RAS network for 60 s)"),
    "ras-error": ("error", "a communicator's ranks reported an initialization or asynchronous error"),
    "ras-incomplete": ("warning", "RAS got no data from some ranks or processes of the job"),
    "ras-stuck": ("error", "a communicator's operation counts did not move between two RAS polls"),
    "ras-mismatch": ("info", "a communicator's ranks differ (operation counts, status) in one RAS poll: "
                             "normal while collectives run, unless a second poll shows no progress"),
    "ras-one-poll": ("info", "one RAS poll cannot show progress: RUNNING OK is no proof a job moves"),
    "ras-env-differs": ("error", "RAS diagnostics show ranks whose NCCL_* value differs from the plan's"),
    "ras-version-differs": ("warning", "the job runs another NCCL release than the one the plan was made for"),
}


def judge(first: RasStatus, second: Optional[RasStatus] = None,
          plan_env: Optional[Mapping[str, str]] = None, diag: Optional[List[Any]] = None,
          plan_nccl: Optional[str] = None) -> List[RasVerdict]:
    """What RAS's answer(s) say, as verdicts: the latest poll's errors, dead and missing processes; from
    two polls, the communicators that made no progress and the ranks to suspect; RAS diagnostics'
    environment lines (`diag`: rocetune.nccl.log_lines.DiagLine) held against the plan's env."""
    last = second or first
    out: List[RasVerdict] = []
    for e in last.entries:
        who = _who(e)
        if e.kind == "DEAD":
            out.append(RasVerdict("ras-dead", "error", "RAS", f"RAS declared dead: {who}", tuple(e.lines[:3])))
        elif "ERROR" in e.kind.split(","):
            out.append(RasVerdict("ras-error", "error", e.comm or "RAS",
                               f"communicator {e.comm} ({e.comm_hash}): {'; '.join(e.lines[:2])}{who and ': ' + who}",
                               tuple(e.lines[:3])))
        elif e.kind.startswith("INCOMPLETE"):
            still = second is not None and any(x.kind.startswith("INCOMPLETE") and x.comm == e.comm
                                               for x in first.entries)
            out.append(RasVerdict("ras-incomplete", "error" if still else "warning", e.comm or "RAS",
                               f"{'; '.join(e.lines[:1])}: {who}" + (" (in both polls)" if still else ""),
                               tuple(e.lines[:3])))
    out += _json_verdicts(last)
    if second is None:
        for e in first.entries:
            if e.kind == "MISMATCH":
                out.append(RasVerdict("ras-mismatch", "info", e.comm or "RAS",
                                   f"communicator {e.comm}: {'; '.join(e.lines[:3])}", tuple(e.lines[:3])))
        if not any(v.id in ("ras-dead", "ras-error") for v in out):
            out.append(RasVerdict("ras-one-poll", "info", "RAS", VERDICTS["ras-one-poll"][1]))
    else:
        out += _stuck(first, second)
    if diag and plan_env:
        out += _env_against_plan(diag, plan_env)
    ran = last.version.split("+")[0] if last.version else None
    if ran and plan_nccl and ran != plan_nccl.split("+")[0]:
        out.append(RasVerdict("ras-version-differs", "warning", "NCCL version",
                           f"RAS answers from NCCL {ran}; the plan was made for NCCL {plan_nccl}: release-gated "
                           "settings and defaults differ between releases"))
    return out


def _who(e: RasEntry) -> str:
    parts = [f"process {pid} on {node} (GPU {gpus})" for pid, node, gpus in e.processes[:8]]
    parts += [f"rank {r.rank}" + (f" (process {r.pid} on {r.node}, GPU {r.gpu})" if r.node else "")
              for r in e.ranks[:8]]
    if e.missing:
        parts.append("missing rank(s) " + ", ".join(map(str, e.missing[:16])) + (" ..." if len(e.missing) > 16 else ""))
    more = len(e.processes) + len(e.ranks) - 16
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def _json_verdicts(st: RasStatus) -> List[RasVerdict]:
    out = []
    for h, c in sorted(st.comms.items()):
        bad = sorted(r for r, d in c.ranks.items()
                     if (_int(d["status"].get("async_error")) or 0) != 0 or
                     (_int(d["status"].get("init_state")) or 0) not in (0, 7) or d["status"].get("abort_flag") is True)
        if bad:
            out.append(RasVerdict("ras-error", "error", h, f"communicator {h}: rank(s) {_ranks(bad)} report an error "
                               "(init_state, async_error or abort_flag)"))
        dead = sorted(r for r, d in c.missing.items() if d["considered_dead"])
        gone = sorted(r for r, d in c.missing.items() if not d["considered_dead"])
        if dead:
            out.append(RasVerdict("ras-dead", "error", h, f"communicator {h}: rank(s) {_ranks(dead)} considered dead ("
                               + ", ".join(f"{c.missing[r]['host']}:{c.missing[r]['pid']}" for r in dead[:8]) + ")"))
        if gone:
            out.append(RasVerdict("ras-incomplete", "warning", h, f"communicator {h}: rank(s) {_ranks(gone)} did not "
                               "answer (" + ", ".join(f"{c.missing[r]['host']}:{c.missing[r]['pid']}"
                                                      for r in gone[:8]) + ")"))
    return out


def _ranks(ranks: List[int]) -> str:
    return ", ".join(map(str, ranks[:16])) + (f" ... ({len(ranks)})" if len(ranks) > 16 else "")


def _stuck(first: RasStatus, second: RasStatus) -> List[RasVerdict]:
    out = []
    for h, c in sorted(second.comms.items()):  # JSON: every rank's counts
        before = first.comms.get(h)
        if before is None or not c.ranks:
            continue
        moved = [r for r, d in c.ranks.items() if r in before.ranks and d["counts"] != before.ranks[r]["counts"]]
        common = [r for r in c.ranks if r in before.ranks]
        still = sorted(r for r in common if r not in moved)
        if moved and still:
            out.append(RasVerdict("ras-stuck", "warning", h, f"communicator {h}: rank(s) {_ranks(still)} launched no "
                               f"operation between the two polls while {len(moved)} other(s) did: the suspects"))
        if common and not moved:
            totals = {r: sum(c.ranks[r]["counts"].values()) for r in common}
            low = min(totals.values())
            behind = sorted(r for r, t in totals.items() if t == low) if len(set(totals.values())) > 1 else []
            who = f"; the ranks behind (at {low} operations): {_ranks(behind)}" if behind else ""
            out.append(RasVerdict("ras-stuck", "error", h, f"communicator {h}: no rank's operation counts moved "
                               f"between the two polls ({len(common)} ranks){who}"))
    for e in second.entries:  # text: the MISMATCH entries of operation counts
        if e.kind != "MISMATCH" or not e.counts_of:
            continue
        prev = next((x for x in first.entries if x.kind == "MISMATCH" and x.comm_hash == e.comm_hash and
                     x.counts_of == e.counts_of), None)
        if prev is None or prev.groups != e.groups:
            continue
        out.append(RasVerdict("ras-stuck", "error", e.comm or "RAS",
                           f"communicator {e.comm} ({e.comm_hash}): the {e.counts_of} operation counts did not move "
                           f"between two polls ({', '.join(f'{n} ranks {w}' for n, w in e.groups)}); "
                           + _suspects(e, second), tuple(e.lines[:3])))
    return out


def _op(what: str) -> int:
    """The operation count a group or rank line gives; -1 for "not launched any operations"."""
    m = re.search(r"operation (\d{1,20})", what)
    return int(m.group(1)) if m else -1


def _suspects(e: RasEntry, st: RasStatus) -> str:
    """The ranks to suspect of a stuck MISMATCH: those at the lowest count. RAS names one value group's
    ranks by its outlier rule; when the named ones are ahead, the ranks behind are the ones it did not
    name (NVIDIA/nccl#1911)."""
    if not e.groups:
        return "RAS gave no operation counts"
    low = min(_op(w) for _, w in e.groups)
    behind_n = sum(n for n, w in e.groups if _op(w) == low)
    named_behind = sorted(r for r, w in e.rank_in.items() if _op(w) == low)
    if named_behind:
        return f"the suspects are the {behind_n} ranks behind: {_ranks(named_behind)}"
    named = sorted(e.rank_in)
    size = next((g.ranks_per_comm for g in st.groups if e.comm and g.group == int(e.comm[1:].split("-")[0])), None)
    if named and size:
        rest = sorted(set(range(size)) - set(named))
        return (f"RAS named ranks {_ranks(named)}, which are ahead; the suspects are the {behind_n} ranks behind, "
                f"among those it did not name: {_ranks(rest)}")
    return (f"RAS did not name the {behind_n} ranks behind (at operation {low}); ask for VERBOSE STATUS "
            "(ncclras -v), which names groups of up to half the ranks")


_ENV_VALUE = re.compile(r"NCCL environment: (NCCL_[A-Z0-9_]{1,64})=(.{0,256}) on rank\(s\) \{([\d,.]{0,200})\}"
                        r"(?: \(N=(\d{1,9})\))?")


def _env_against_plan(diag: List[Any], plan_env: Mapping[str, str]) -> List[RasVerdict]:
    """RAS diagnostics' "NCCL environment: KEY=VALUE on rank(s) {...}" lines (v2.31.2-1 ras/diagnostics_env.cc)
    against the env the plan gives each rank: a value group other than the plan's names the ranks."""
    out = []
    for d in diag:
        m = _ENV_VALUE.fullmatch(getattr(d, "text", "") or "")
        if not m or m.group(1) not in plan_env:
            continue
        key, value, ranks = m.group(1), m.group(2), m.group(3)
        want = str(plan_env[key])
        if value != want:
            got = "unset" if value == "(unset)" else f"{key}={value}"
            out.append(RasVerdict("ras-env-differs", "error", key, f"ranks {{{ranks}}}" +
                               (f" (of {m.group(4)})" if m.group(4) else "") + f" run with {got}; the plan sets "
                               f"{key}={want}", (d.text,)))
    return out
