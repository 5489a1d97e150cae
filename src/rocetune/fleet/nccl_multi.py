"""`fleet validate --tests nccl-multi`: one collective across the nodes, launched by the scheduler
the way a job is (Slurm's srun), each rank with its node's own env file.

From one node (`--slurm-from`, default the first host), over the same SSH as every other test:

    srun -N N -w NODES --ntasks-per-node=K --kill-on-bad-exit=1 bash -c \\
        'set -a; . ENV_FILE; set +a; export NCCL_DEBUG=INFO ...; exec PY -c "$(... base64 -d)" ...'

Each rank runs fleet/nccl_multi_script.py: an all_reduce across all ranks with NCCL where the
node has a GPU, and with PyTorch's Gloo on the env's NCCL_SOCKET_IFNAME where it has none -- Gloo
is NOT NCCL, and the result says which backend ran. Two variants: the env as deployed, and
"net-only" (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: every byte through the network transport, as
between nodes, even for ranks that share one). NCCL's log is read by doctor's reader and held
against the first node's plan; the bus bandwidth against `--nccl-baseline` (an earlier `validate
-o` result) or `--nccl-multi-min-busbw`. A slow collective is bisected (fleet.bisect): the
collective rerun on halves of the nodes until the slow one is named.

`--nccl-tests-bin PATH` runs nccl-tests' all_reduce_perf instead of the script, read by
fleet.measure (every row form, -I and -S included).
"""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

SCRIPT = Path(__file__).with_name("nccl_multi_script.py")
RESULT = re.compile(r"rocetune-nccl-multi: rank (\d+) world (\d+) backend (\S+) host (\S+) iface (\S+) "
                    r"ok=(True|False) bytes=(\d+) seconds=([0-9.]+) algbw_gbs=([0-9.]+) busbw_gbs=([0-9.]+)")
SKIP_WORDS = ("No module named 'torch'", "srun: command not found", "srun: not found")
NET_ONLY = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
VARIANTS = ("env", "net-only")


@dataclass(frozen=True)
class Settings:
    env_file: str = "/etc/rocetune/nccl.env"
    python: str = "python3"
    slurm_from: Optional[str] = None  # the host srun runs on (default: the first)
    tasks_per_node: int = 1
    size_mb: int = 16
    iters: int = 10
    port: int = 29631
    timeout: float = 300.0
    fraction: float = 0.9
    baseline: Optional[float] = None  # busbw GB/s of an earlier run (the env variant)
    min_busbw: Optional[float] = None
    nccl_tests_bin: Optional[str] = None
    srun_args: Sequence[str] = ()
    variants: Sequence[str] = VARIANTS
    bisect: bool = True


def rank_command(s: Settings, master: str, extra_env: Dict[str, str]) -> str:
    """`master`: the nodes' rendezvous addresses, `node=address,...` (each rank finds rank 0's)."""
    """What each rank runs (inside `bash -c`): its node's env file as a job sources it, NCCL's INFO
    log, the variant's variables, then the script or all_reduce_perf."""
    exports = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET,GRAPH", **extra_env}
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in exports.items())
    if s.nccl_tests_bin:
        run = f"exec {shlex.quote(s.nccl_tests_bin)} -b {s.size_mb}M -e {s.size_mb}M -g 1 -n {s.iters}"
    else:
        b64 = base64.b64encode(SCRIPT.read_bytes()).decode()
        run = (f"exec {shlex.quote(s.python)} -c \"$(printf %s {b64} | base64 -d)\" "
               f"{s.size_mb} {s.iters} {shlex.quote(master)} {s.port}")
    return f"set -a && . {shlex.quote(s.env_file)} && set +a && export {env} && {run}"


def srun_command(s: Settings, nodes: List[str], master: str, extra_env: Dict[str, str]) -> str:
    argv = ["srun", "-N", str(len(nodes)), "-w", ",".join(nodes), f"--ntasks-per-node={s.tasks_per_node}",
            "--kill-on-bad-exit=1", *s.srun_args, "bash", "-c", rank_command(s, master, extra_env)]
    return " ".join(shlex.quote(a) for a in argv) + " 2>&1"


def read(text: str, nodes: List[str], s: Settings) -> dict:
    """The ranks' result lines (or nccl-tests' rows), and what NCCL printed."""
    from ..nccl.log import read_log

    ranks: List[Dict[str, Any]] = [
        {"rank": int(m.group(1)), "world": int(m.group(2)), "backend": m.group(3), "host": m.group(4),
         "iface": m.group(5), "ok": m.group(6) == "True", "bytes": int(m.group(7)),
         "seconds": float(m.group(8)), "algbw_gbs": float(m.group(9)), "busbw_gbs": float(m.group(10))}
             for m in RESULT.finditer(text)]
    doc: dict = {"ranks": sorted(ranks, key=lambda r: r["rank"])}
    if s.nccl_tests_bin:
        from .measure import parse_nccl_tests

        parsed = parse_nccl_tests(text)
        doc["nccl_tests"] = {"avg_busbw_gbs": parsed.avg_bus_bandwidth, "rows": len(parsed.rows),
                             "ranks": len(parsed.ranks), "out_of_bounds": parsed.out_of_bounds}
        if parsed.rows:
            doc["busbw_gbs"] = parsed.avg_bus_bandwidth if parsed.avg_bus_bandwidth is not None \
                else max(r.out_of_place["busbw"] for r in parsed.rows)
        doc["backend"] = "nccl (nccl-tests all_reduce_perf)"
    elif ranks:
        doc["busbw_gbs"] = min(r["busbw_gbs"] for r in ranks)
        backends = sorted({r["backend"] for r in ranks})
        doc["backend"] = "/".join(backends)
        if backends == ["gloo"]:
            doc["label"] = ("torch.distributed Gloo on " + ",".join(sorted({r["iface"] for r in ranks}))
                            + " (no GPU on the nodes): NOT NCCL -- the launch, rendezvous and socket path only")
    from ..errors import RocetuneError

    try:
        report = read_log(text, source="nccl-multi")
    except RocetuneError:  # no NCCL line at all: Gloo, or a run that never reached NCCL
        report = None
    processes = report.processes if report is not None else []
    doc["nccl_processes"] = len(processes)
    doc["nccl_networks"] = sorted({p.network for p in processes if p.network})
    doc["report"] = report
    return doc


def judge(doc: dict, code: int, text: str, nodes: List[str], s: Settings, plan_env: Dict[str, str]) -> dict:
    from ..nccl.log_compare import compare_with_plan

    report = doc.pop("report")
    tail = [ln for ln in text.splitlines() if ln.strip()][-12:]
    if report is not None and report.processes:
        doc["differences"] = [{"id": d.id, "severity": d.severity, "subject": d.subject, "message": d.message}
                              for d in compare_with_plan(report, plan_env)]
    expected = len(nodes) * s.tasks_per_node
    if code != 0 or ("busbw_gbs" not in doc) or (not s.nccl_tests_bin and (
            len(doc["ranks"]) != expected or not all(r["ok"] for r in doc["ranks"]))):
        why = f"exited {code}" if code else f"{len(doc['ranks'])} of {expected} rank(s) reported a correct result"
        doc.update(status="error", error=why, evidence=tail)
        return doc
    errors = [d for d in doc.get("differences", []) if d["severity"] == "error"]
    if errors:
        doc.update(status="fail", why="; ".join(d["message"] for d in errors)[:600], evidence=tail)
        return doc
    floor = s.min_busbw if s.min_busbw is not None else (s.fraction * s.baseline if s.baseline else None)
    if floor is not None:
        doc["floor_gbs"] = round(floor, 4)
        if doc["busbw_gbs"] < floor:
            doc.update(status="fail", why=f"{doc['busbw_gbs']:g} GB/s is below {floor:g} GB/s")
            return doc
    doc["status"] = "pass"
    return doc


_RUNS = itertools.count()


def run_once(launcher, nodes: List[str], master: str, s: Settings, plan_env: Dict[str, str],
             variant: str = "env") -> dict:
    """One collective. Each run rendezvouses on a port of its own (a killed run's port may still
    be held on the master node when the next starts)."""
    from . import ssh

    extra = dict(NET_ONLY) if variant == "net-only" else {}
    cmd = srun_command(dataclasses.replace(s, port=s.port + next(_RUNS) % 64), nodes, master, extra)
    try:
        done = launcher.run(cmd, f"nccl-multi {variant}", s.timeout)
    except ssh.Failure as exc:
        return {"status": "error", "error": str(exc), "nodes": nodes}
    text = (done.out + done.err).decode("utf-8", "replace")
    skip = next((w for w in SKIP_WORDS if w in text), None)
    if skip:
        return {"status": "skipped", "why": f"{skip} (on {launcher.name})", "nodes": nodes}
    doc = judge(read(text, nodes, s), done.code, text, nodes, s, plan_env)
    doc["nodes"] = nodes
    doc["variant"] = variant
    doc["command"] = "srun -N%d -w %s --ntasks-per-node=%d bash -c '... %s'" % (
        len(nodes), ",".join(nodes), s.tasks_per_node, "all_reduce_perf" if s.nccl_tests_bin else "nccl_multi_script")
    if variant == "net-only":
        doc["env"] = dict(NET_ONLY)
    return doc


def run_fleet(hosts: Mapping[str, Any], s: Settings) -> dict:
    """The fleet step: every variant across every node, and a bisection when the env variant is slow."""
    names = list(hosts)
    if len(names) < 2:
        return {"status": "skipped", "why": "a collective across nodes needs two of them"}
    first = hosts[s.slurm_from] if s.slurm_from is not None and s.slurm_from in hosts else hosts[names[0]]
    try:
        nodes = [node_name(h) for h in hosts.values()]
        master = ",".join(f"{node_name(h)}={master_address(h)}" for h in hosts.values())
    except BadNodeName as exc:
        return {"status": "error", "error": str(exc)[:300]}
    by_node = dict(zip(nodes, names))
    plan_env = getattr(hosts[names[0]], "plan_env", {}) or {}
    out: dict = {"nodes": nodes, "launcher": first.name, "variants": {}}
    for variant in s.variants:
        out["variants"][variant] = run_once(first.remote, nodes, master, s, plan_env, variant)
    main = out["variants"].get("env") or next(iter(out["variants"].values()))
    out.update({k: main[k] for k in ("busbw_gbs", "backend", "label") if k in main})
    from .tests import worst

    out["status"] = worst([v["status"] for v in out["variants"].values()])
    slow = main.get("status") == "fail" and "busbw_gbs" in main
    if slow and s.bisect and len(nodes) > 2:
        from .bisect import bisect

        floor = main.get("floor_gbs")
        errors: List[dict] = []

        def measure(group: List[str]) -> Optional[float]:
            r = run_once(first.remote, group, master, s, plan_env, "env")
            if r.get("status") in ("pass", "fail") and "busbw_gbs" in r:
                return r["busbw_gbs"]
            errors.append({"nodes": group, "status": r.get("status"), "error": r.get("error") or r.get("why"),
                           "evidence": r.get("evidence")})
            return None

        found = bisect(nodes, measure, lambda v: v is None or (floor is not None and v < floor))
        if errors:
            found["errors"] = errors
        out["bisect"] = found
        out["suspects"] = [by_node.get(n, n) for n in found.get("suspects", [])]
    why = [f"{v}: {r.get('why') or r.get('error')}" for v, r in out["variants"].items()
           if r.get("status") not in ("pass",)]
    if why:
        out["why"] = "; ".join(why)[:800]
    return out


# A Slurm node name as a host reports it: one DNS label (RFC 1123), the whole value. Anything
# else -- a comma, `=`, a space, a newline -- would add a node to `srun -w` or a host to the
# rendezvous map (`node=address,...`).
_NODE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")


class BadNodeName(ValueError):
    """A node name (or rendezvous address) no command line or map may take."""


def node_name(host) -> str:
    """The node's Slurm name: its short hostname, as the probe read it, else the name it was
    reached by; BadNodeName when neither is one DNS label."""
    reported = ((getattr(host, "features", None) or {}).get("host") or {}).get("hostname")
    for name in (reported, host.name):
        short = str(name or "").split(".")[0]
        if _NODE.match(short):
            return short
    raise BadNodeName(f"{host.name}: node name {reported or host.name!r} is not a host name (one DNS label): "
                      "not put on an srun command line")


def master_address(host) -> str:
    """Rank 0's rendezvous address: its first NCCL_SOCKET_IFNAME address (the path NCCL's bootstrap
    takes), else its node name. An address that is not IPv4 is not taken."""
    ep = getattr(host, "endpoints", None)
    for s in getattr(ep, "socket", None) or []:
        if s.ipv4:
            try:
                return str(ipaddress.IPv4Address(s.ipv4.split("/")[0]))
            except ValueError:
                continue
    return node_name(host)
