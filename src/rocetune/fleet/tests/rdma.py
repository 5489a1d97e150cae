"""`rdma`: perftest on every rail of a pair at once, rail i of one host to rail i of the other,
with the device, port and GID index the plan hands NCCL, the sender's counters showing which
port carried it, judged against the line rate (fleet.pairtest)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import List

from .. import pairtest, steps
from . import FleetTest, PairContext


def run_pair(ctx: PairContext) -> List[dict]:
    ra, rb, ea, eb, s = ctx.a.remote, ctx.b.remote, ctx.a.endpoints, ctx.b.endpoints, ctx.opts.settings
    rails = list(zip(ea.rdma, eb.rdma))
    if not rails:
        return [{"kind": "rdma", "status": "error", "path": "",
                 "error": f"no RDMA port to test on {ra.name if not ea.rdma else rb.name}"}]
    extra = [{"kind": "rdma", "status": "error", "path": "",
              "error": f"{h.host} has {len(h.rdma)} RDMA ports, its peer "
                       f"{len(ea.rdma) + len(eb.rdma) - len(h.rdma)}: rails beyond the shorter list untested"}
             for h in (ea, eb) if len(h.rdma) > len(rails)]
    step_s = s.seconds + 60
    sent = [a for a, _ in rails] if s.rdma_op == "write" else [b for _, b in rails]
    sender = ra if s.rdma_op == "write" else rb
    before = steps.counters(sender, sent, step_s)
    settle = steps.settle_s()

    def one(i: int):
        pa, pb = rails[i]
        port = pairtest.PERFTEST_BASE_PORT + i
        return steps.perftest_pair(rb, pairtest.command(pairtest.perftest_argv(pb, s, port)),
                                       ra, pairtest.command(pairtest.perftest_argv(pa, s, port, rb.target.hostname)),
                                       step_s, settle)

    with ThreadPoolExecutor(max_workers=len(rails)) as pool:
        runs = list(pool.map(one, range(len(rails))))
    after = steps.counters(sender, sent, step_s)
    out = []
    for i, ((pa, pb), (client, server, attempts)) in enumerate(zip(rails, runs)):
        test = {"kind": "rdma", "rail": i, "a_port": pa.name, "b_port": pb.name, "op": s.rdma_op,
                "path": f"rail {i} {pa.name} -> {pb.name}",
                "command": pairtest.command(pairtest.perftest_argv(pa, s, pairtest.PERFTEST_BASE_PORT + i, "SERVER"))}
        if client.code != 0:
            test.update(status="error", error="client " + steps.failed(client, server, pa.device))
        elif server.code != 0:
            test.update(status="error", error="server " + steps.failed(server, client, pb.device))
        else:
            port = sent[i]
            moved, counter = pairtest.rail_moved((before or {}).get(port.name, {}), (after or {}).get(port.name, {}),
                                                 send=True)
            test.update(pairtest.judge_rdma(steps.text(client),
                                            pa if s.rdma_op == "write" else pb,
                                            pb if s.rdma_op == "write" else pa, s, moved, counter))
        if attempts > 1:
            test["attempts"] = attempts  # the earlier runs' clock calibration failed
        if test["status"] in ("fail", "error"):
            test["evidence"] = steps.evidence(client, server)
        out.append(test)
    return out + extra


def round_seconds(opts) -> float:
    return opts.settings.seconds + steps.settle_s() + 2


TEST = FleetTest(
    name="rdma", order=10, needs_pairs=True,
    summary="perftest rail to rail (host memory) with the device, port and GID index the plan hands NCCL",
    pair=run_pair, round_seconds=round_seconds)
