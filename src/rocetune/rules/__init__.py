"""Rules: one module per decision, each a pure function of the Features.

Every rule module has `ID` (the name users see in `# rule:` comments and `rocetune explain`),
a docstring, a page docs/rules/<ID>.md, and `rule(features, ctx) -> list[Decision]`; warnings,
notes and findings go through `ctx` (rocetune.rules.base.RuleContext). The order below is the
order they run in; it does not matter for the result because no two rules set the same key.
"""

from __future__ import annotations

from . import (gpudirect_rdma, local_rank, nccl_ib_gid_index, nccl_ib_hca, nccl_ib_qps,
               nccl_topo_file, no_rdma, socket_ifname, traffic_class, ucx_net_devices)

RULES = (
    nccl_ib_hca,
    nccl_ib_gid_index,
    traffic_class,
    nccl_ib_qps,
    socket_ifname,
    ucx_net_devices,
    no_rdma,
    gpudirect_rdma,
    nccl_topo_file,
    local_rank,
)

RULE_IDS = tuple(r.ID for r in RULES)


def by_id(rule_id: str):
    for r in RULES:
        if r.ID == rule_id:
            return r
    return None
