"""`tcp`: iperf3 between the NCCL_SOCKET_IFNAME addresses of a pair (NCCL's bootstrap and socket
transport), judged against the slower interface's speed."""

from __future__ import annotations

from typing import List

from .. import pairtest, steps
from . import FleetTest, PairContext


def run_pair(ctx: PairContext) -> List[dict]:
    ra, rb, ea, eb, s = ctx.a.remote, ctx.b.remote, ctx.a.endpoints, ctx.b.endpoints, ctx.opts.settings
    if not ea.socket or not eb.socket:
        who = ea.host if not ea.socket else eb.host
        return [{"kind": "tcp", "status": "error", "path": "",
                 "error": f"{who}: no socket interface to test (see its notes)"}]
    a, b = ea.socket[0], eb.socket[0]
    step_s = s.seconds + 60
    test = {"kind": "tcp", "a_if": a.ifname, "b_if": b.ifname, "path": f"{a.ifname} -> {b.ifname}",
            "command": pairtest.command(pairtest.iperf3_client_argv(a, b, s))}
    client, server = steps.server_and_client(rb, pairtest.command(pairtest.iperf3_server_argv(b)),
                                             ra, test["command"], step_s, steps.settle_s(), tool="iperf3")
    if client.code != 0 and not client.out.strip().startswith(b"{"):
        test.update(status="error", error="client " + steps.failed(client, server, "iperf3"))
    elif server.code != 0:
        test.update(status="error", error="server " + steps.failed(server, client, "iperf3"))
    else:
        test.update(pairtest.judge_tcp(client.out.decode("utf-8", "replace"), a, b, s))
    if test["status"] in ("fail", "error"):
        test["evidence"] = steps.evidence(client, server)
    return [test]


def round_seconds(opts) -> float:
    return opts.settings.seconds + steps.settle_s() + 2


TEST = FleetTest(
    name="tcp", order=20, needs_pairs=True,
    summary="iperf3 between the NCCL_SOCKET_IFNAME addresses (bootstrap and socket transport)",
    pair=run_pair, round_seconds=round_seconds)
