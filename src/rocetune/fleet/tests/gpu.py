"""`gpu`: GPUDirect RDMA proven with GPU memory, the path a job's data really takes.

The rdma test moves host memory, so a node whose NIC cannot reach GPU memory (no peer-memory
module, DMA-BUF refused, ACS redirecting through the root complex) passes it. Here perftest
registers GPU memory (`--use_cuda_bus_id=BDF`, the GPU by its PCI address so no CUDA ordering
can mix them up; `--use_cuda_dmabuf` too where the plan's GPUDirect route is DMA-BUF, the
gpudirect-rdma report) on each GPU and the NIC the plan pairs with it (the plan's local ranks):

- pair step: GPU i of host a to GPU i of host b, each on its own NIC, all GPUs at once except that
  GPUs sharing a NIC take turns;
- node step (loopback): on each host GPU i's NIC to GPU i+1's NIC (a ring over the GPUs, each NIC
  sending once and receiving once, all at once), the server reached on 127.0.0.1 for perftest's
  out-of-band exchange while the data goes NIC to NIC.

Each is judged like the rdma test: `fraction` of the slower port's line rate. A host without a
GPU in its plan, or whose perftest has no CUDA (Debian's perftest 4.5+0.17 does not know
`--use_cuda`; newer builds say `Unsupported memory type` without libcuda), or whose CUDA finds
no GPU, is `skipped` with the tool's own words. perftest's CUDA messages: src/cuda_memory.c and
src/perftest_parameters.c (linux-rdma/perftest).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Tuple

from .. import pairtest, steps
from ..endpoints import RdmaPort
from ..measure import clock_uncalibrated, parse_perftest, verdict
from . import FleetTest, HostContext, NodeContext, PairContext

BASE_PORT = pairtest.PERFTEST_BASE_PORT + 100  # clear of the rdma test's ports
# What perftest prints where GPU memory cannot be used (the test is skipped, not failed).
NO_CUDA = (
    ("unrecognized option '--use_cuda", "perftest is built without CUDA support"),
    ("Unsupported memory type", "perftest cannot load CUDA (libcuda) here"),
    ("Failed to load CUDA library dynamically", "perftest cannot load libcuda"),
    ("There are no available device(s) that support CUDA", "CUDA finds no GPU"),
    ("cuInit(0) returned", "the CUDA driver does not initialise (no GPU or no driver)"),
)
NO_DMABUF = "DMA-BUF is not supported on this GPU"
_GPU_NAME = re.compile(r"device name = \[([^\]]*)\]")


def gpu_pairs(host: HostContext) -> List[Tuple[int, str, RdmaPort]]:
    """(GPU index, its PCI address, the RDMA port the plan pairs with it) per local rank."""
    ports = {p.name: p for p in host.endpoints.rdma}
    out = []
    for r in host.plan.get("ranks") or []:
        port = ports.get(r.get("nic") or "")
        if port is not None and r.get("gpu_bus_id") and isinstance(r.get("gpu"), int):
            out.append((r["gpu"], r["gpu_bus_id"], port))
    return out


def dmabuf(host: HostContext) -> bool:
    return ((host.plan.get("reports") or {}).get("gpudirect-rdma") or {}).get("route") == "DMA-BUF"


def cuda_argv(port, s, tcp_port: int, bus_id: str, use_dmabuf: bool, server: Optional[str] = None) -> List[str]:
    argv = pairtest.perftest_argv(port, s, tcp_port)
    argv.append(f"--use_cuda_bus_id={bus_id}")
    if use_dmabuf:
        argv.append("--use_cuda_dmabuf")  # after the CUDA device: perftest refuses it before (perftest #336)
    return argv + ([server] if server else [])


def judge(client_out: str, sender, receiver, s, memory: str) -> dict:
    from ...errors import ParseError

    unmeasured = clock_uncalibrated(client_out)
    if unmeasured:
        return {"status": "error", "error": unmeasured}
    try:
        run = parse_perftest(client_out)
    except ParseError:
        return {"status": "error", "error": _reason(client_out)}
    measured = run.best_average_gbps
    doc = {"measured_gbps": round(measured, 3), "memory": memory, "gpu": _GPU_NAME.findall(client_out)[:1] or None,
           "gid_index": run.gid_index, "mtu": run.mtu, "link_type": run.link_type}
    known = [r for r in (sender.rate_gbps, receiver.rate_gbps) if isinstance(r, (int, float)) and r > 0]
    rate = s.line_rate_gbps or (min(known) if known else None)
    if rate is None:
        doc.update(status="unjudged", why="no line rate probed for either port; give --line-rate")
        return doc
    v = verdict(measured, rate, s.fraction)
    doc["verdict"] = v.to_dict()
    doc["status"] = "pass" if v.passed else "fail"
    if not v.passed:
        doc["why"] = (f"{measured:.2f} Gb/s from GPU memory is below {v.needed_gbps:.2f} ({s.fraction:.0%} of "
                      f"{rate:g} Gb/s): GPUDirect RDMA slow or off on this path (peer memory, ACS, PCIe)")
    return doc


def skip_reason(text: str) -> Optional[str]:
    for words, why in NO_CUDA:
        if words in text:
            return f"{why} ({words!r})"
    return None


def _reason(text: str) -> str:
    if NO_DMABUF in text:
        return f"the plan's GPUDirect route is DMA-BUF and perftest says {NO_DMABUF!r}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= set("-")]
    return lines[-1][:300] if lines else "no output"


def _one(server_remote, server_cmd, client_remote, client_cmd, step_s, settle, what: str):
    client, server, _ = steps.perftest_pair(server_remote, server_cmd, client_remote, client_cmd, step_s, settle,
                                              what)
    return client, server, steps.text(client), steps.text(server)


def _entry(path: str, memory: str, client, server, text: str, server_text: str, sender, receiver, s) -> dict:
    skip = skip_reason(text) or skip_reason(server_text)
    if skip:
        return {"kind": "gpu", "path": path, "status": "skipped", "why": skip}
    if client.code != 0 or server.code != 0:
        who, out = ("client", text) if client.code != 0 else ("server", server_text)
        doc: Dict[str, Any] = {"kind": "gpu", "path": path, "status": "error",
               "error": f"{who} exited {client.code if who == 'client' else server.code}: {_reason(out)}"}
    else:
        doc = {"kind": "gpu", "path": path, **judge(text, sender, receiver, s, memory)}
    if doc["status"] in ("fail", "error"):
        doc["evidence"] = steps.evidence(client, server)
    return doc


def _batches(items: List[tuple], key) -> List[List[tuple]]:
    """Items in turns where no NIC (key) appears twice: GPUs sharing a NIC run one after another."""
    out: List[List[tuple]] = []
    for item in items:
        for batch in out:
            if all(key(x) & key(item) == set() for x in batch):
                batch.append(item)
                break
        else:
            out.append([item])
    return out


def run_pair(ctx: PairContext) -> List[dict]:
    a, b, s = ctx.a, ctx.b, ctx.opts.settings
    mine, theirs = {g: (bus, p) for g, bus, p in gpu_pairs(a)}, {g: (bus, p) for g, bus, p in gpu_pairs(b)}
    common = sorted(set(mine) & set(theirs))
    if not common:
        who = a.name if not mine else b.name
        return [{"kind": "gpu", "path": "", "status": "skipped",
                 "why": f"{who}: no GPU paired with an RDMA port in its plan (no GPU, or no compute NIC)"}]
    use_dmabuf = dmabuf(a) or dmabuf(b)
    memory = "cuda-dmabuf" if use_dmabuf else "cuda"
    step_s = s.seconds + 60
    settle = steps.settle_s()
    out: List[dict] = []
    items = [(g, n) for n, g in enumerate(common)]
    for batch in _batches(items, lambda x: {("a", mine[x[0]][1].name), ("b", theirs[x[0]][1].name)}):
        def one(item):
            g, n = item
            (bus_a, pa), (bus_b, pb) = mine[g], theirs[g]
            port = BASE_PORT + n
            return g, pa, pb, _one(b.remote, pairtest.command(cuda_argv(pb, s, port, bus_b, use_dmabuf)),
                                   a.remote, pairtest.command(cuda_argv(pa, s, port, bus_a, use_dmabuf,
                                                                        b.remote.target.hostname)),
                                   step_s, settle, "gpu")
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            for g, pa, pb, (client, server, text, server_text) in pool.map(one, batch):
                out.append(_entry(f"GPU{g} {pa.name} -> GPU{g} {pb.name}", memory, client, server, text,
                                  server_text, pa, pb, s))
    return out


def run_node(ctx: NodeContext) -> dict:
    host, s = ctx.host, ctx.opts.settings
    pairs = gpu_pairs(host)
    if not pairs:
        return {"status": "skipped", "why": "no GPU paired with an RDMA port in the plan (no GPU, or no compute NIC)"}
    use_dmabuf = dmabuf(host)
    memory = "cuda-dmabuf" if use_dmabuf else "cuda"
    edges = [(pairs[i], pairs[(i + 1) % len(pairs)]) for i in range(len(pairs))] if len(pairs) > 1 \
        else [(pairs[0], pairs[0])]
    step_s, settle = s.seconds + 60, steps.settle_s()

    def one(n_edge):
        n, ((ga, bus_a, pa), (gb, bus_b, pb)) = n_edge
        port = BASE_PORT + 50 + n
        result = _one(host.remote, pairtest.command(cuda_argv(pb, s, port, bus_b, use_dmabuf)),
                      host.remote, pairtest.command(cuda_argv(pa, s, port, bus_a, use_dmabuf, "127.0.0.1")),
                      step_s, settle, "gpu loopback")
        return _entry(f"GPU{ga} {pa.name} -> GPU{gb} {pb.name}", memory, *result, pa, pb, s)

    with ThreadPoolExecutor(max_workers=len(edges)) as pool:
        loops = list(pool.map(one, enumerate(edges)))
    from . import worst

    status = worst(t["status"] for t in loops)
    if all(t["status"] == "skipped" for t in loops):
        return {"status": "skipped", "why": loops[0]["why"], "loopback": loops}
    doc: Dict = {"status": "pass" if status == "skipped" else status, "memory": memory, "loopback": loops}
    bad = [t for t in loops if t["status"] in ("fail", "error")]
    if bad:
        doc["why"] = "; ".join(f"{t['path']}: {t.get('why') or t.get('error')}" for t in bad)[:1000]
    return doc


def round_seconds(opts) -> float:
    return 2 * (opts.settings.seconds + steps.settle_s() + 2)  # GPUs sharing a NIC: about two turns


def node_row(doc: dict) -> List[str]:
    loops = doc.get("loopback") or []
    figures = [t["measured_gbps"] for t in loops if "measured_gbps" in t]
    return [f"loopback min {min(figures):g} Gb/s" if figures else "", doc.get("memory", "")]


TEST = FleetTest(
    name="gpu", order=15, needs_pairs=False,
    summary="GPUDirect RDMA with GPU memory: perftest --use_cuda(_dmabuf) on each GPU and the NIC the plan "
            "pairs with it, pair to pair and NIC to NIC on one node",
    node=run_node, pair=run_pair, round_seconds=round_seconds, node_row=node_row)
