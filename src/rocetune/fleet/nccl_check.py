"""`fleet validate --tests nccl`: real NCCL on each node with the node's own env, read the way
`doctor --nccl-log` reads a job's log.

On each node: source the env file a job sources, turn NCCL's INFO log on (INIT, ENV, NET,
GRAPH), and run fleet/nccl_probe_script.py with the python that has PyTorch: two ranks on the
first GPU, each its own NCCL_HOSTID, so NCCL connects them through its network transport. What
NCCL printed is read by nccl.log and compared with the node's plan by nccl.log_compare (the
network used, the devices, GPUDirect RDMA per device, the GID index, each variable NCCL says it
read); the ranks' own lines give the result and the bus bandwidth, which a saved baseline (an
earlier `validate -o` file) judges: at least `fraction` of the baseline's figure.

A node without PyTorch (or without a GPU) is `skipped`, not failed: the check runs where the
tools are, as the job would.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

SCRIPT = Path(__file__).with_name("nccl_probe_script.py")
RESULT = re.compile(r"^rocetune-nccl-check: rank (\d+) ok=(True|False) bytes=(\d+) seconds=([0-9.]+) "
                    r"busbw_gbs=([0-9.]+)\s*$", re.M)
SKIP_WORDS = ("No module named 'torch'", "No CUDA GPUs are available", "Found no NVIDIA driver",
              "CUDA driver initialization failed")


@dataclass(frozen=True)
class Settings:
    env_file: str = "/etc/rocetune/nccl.env"
    python: str = "python3"
    size_mb: int = 64
    iters: int = 20
    port: int = 29517
    timeout: float = 300.0
    fraction: float = 0.9
    baseline: Optional[Dict[str, float]] = None  # host -> busbw GB/s of an earlier run


def command(s: Settings) -> str:
    """The node's shell line: the env as a job sources it, NCCL's INFO log, the script from stdin.
    NCCL_IGNORE_NET_MISMATCH=0: from 2.30.3 NCCL defaults it to 1 and goes on when ranks see
    different numbers of NICs, so a rank that cannot open one would hang the check instead of
    failing it (NVIDIA/nccl#2428; release table entry ignore-net-mismatch-default-on). Older
    releases do not read it. NCCL_RUN_DIAGNOSTICS=1 and NCCL_RUN_RAS_DIAGNOSTICS=1: from 2.31.2 NCCL checks
    its P2P paths and compares GPU inventory, driver, ECC, NVLink and NCCL_* across ranks at init, and
    prints "NCCL DIAG" lines (v2.31.2-1 diagnostics.rst, ras.rst); older releases do not read them."""
    return (f"set -a && . {shlex.quote(s.env_file)} && set +a && "
            "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH NCCL_IGNORE_NET_MISMATCH=0 "
            "NCCL_RUN_DIAGNOSTICS=1 NCCL_RUN_RAS_DIAGNOSTICS=1 && "
            f"f=$(mktemp) && cat > \"$f\" && {shlex.quote(s.python)} \"$f\" {s.size_mb} {s.iters} {s.port} 2>&1; "
            "rc=$?; rm -f \"$f\"; exit $rc")


def run_on(remote, plan_env: Dict[str, str], s: Settings) -> dict:
    from . import ssh

    try:
        done = remote.run(command(s), "nccl check", s.timeout, stdin=SCRIPT.read_bytes())
    except ssh.Failure as exc:
        return {"status": "error", "error": str(exc)}
    return judge(remote.name, done.code, (done.out + done.err).decode("utf-8", "replace"), plan_env, s)


def judge(host: str, code: int, text: str, plan_env: Dict[str, str], s: Settings) -> dict:
    from ..nccl.log import read_log
    from ..nccl.log_compare import compare_with_plan

    tail = [ln for ln in text.splitlines() if ln.strip()][-12:]
    skip = next((w for w in SKIP_WORDS if w in text), None)
    if skip:
        return {"status": "skipped", "why": f"{skip} ({s.python} on the node): no NCCL to run"}
    ranks = [{"rank": int(m.group(1)), "ok": m.group(2) == "True", "bytes": int(m.group(3)),
              "seconds": float(m.group(4)), "busbw_gbs": float(m.group(5))} for m in RESULT.finditer(text)]
    report = read_log(text, source=f"NCCL on {host}")
    differences = [{"id": d.id, "severity": d.severity, "subject": d.subject, "message": d.message, "fix": d.fix}
                   for d in compare_with_plan(report, plan_env)]
    procs = [{"network": p.network, "version": p.version,
              "devices": [{"name": f"{d.name}:{d.port}", "link_layer": d.link_layer, "gdr": d.gdr}
                          for d in p.ib_devices]} for p in report.processes]
    diagnostics = [{"tag": d.tag, "check": d.check, "text": d.text} for d, _ in report.diag if d.tag]
    doc = {"ranks": ranks, "processes": procs, "differences": differences, "nccl_warnings": report.warn_count,
           "diagnostics": diagnostics}
    if code != 0 or len(ranks) != 2 or not all(r["ok"] for r in ranks):
        why = "the all_reduce did not complete on both ranks" if code == 0 else f"exited {code}"
        doc.update(status="error", error=why, evidence=tail)
        return doc
    busbw = min(r["busbw_gbs"] for r in ranks)
    doc["busbw_gbs"] = busbw
    errors = [d for d in differences if d["severity"] == "error"]
    if errors:
        doc.update(status="fail", why="; ".join(d["message"] for d in errors)[:600], evidence=tail)
        return doc
    base = (s.baseline or {}).get(host)
    if base:
        doc["baseline_gbs"] = base
        if busbw < s.fraction * base:
            doc.update(status="fail", why=f"{busbw:g} GB/s is below {s.fraction:.0%} of the baseline's {base:g} GB/s")
            return doc
    doc["status"] = "pass"
    return doc


def load_baseline(path: str) -> Dict[str, float]:
    """{host: busbw GB/s} from an earlier `fleet validate -o` file."""
    from ..errors import ExitCode, HostReadError, RocetuneError
    from ..hostfs.inputs import read_input
    from ..model.jsonread import MAX_DOCUMENT_BYTES, load_json

    try:
        doc = load_json(read_input(path, MAX_DOCUMENT_BYTES))
    except HostReadError as exc:
        raise RocetuneError(f"--nccl-baseline {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"--nccl-baseline {path}: cannot read: {exc.strerror}", code=ExitCode.INPUT) from None
    except (ValueError, RecursionError) as exc:
        raise RocetuneError(f"--nccl-baseline {path}: not JSON: {str(exc)[:200]}", code=ExitCode.INPUT) from None
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, dict):
        raise RocetuneError(f"--nccl-baseline {path}: not a `fleet validate -o` result", code=ExitCode.INPUT)
    out = {}
    for host, h in hosts.items():
        busbw = ((h or {}).get("nccl") or {}).get("busbw_gbs") if isinstance(h, dict) else None
        if isinstance(busbw, (int, float)) and not isinstance(busbw, bool) and busbw > 0:
            out[str(host)] = float(busbw)
    if not out:
        raise RocetuneError(f"--nccl-baseline {path}: no host with an NCCL figure in it", code=ExitCode.INPUT)
    return out
