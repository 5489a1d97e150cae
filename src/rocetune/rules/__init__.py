"""Rules: one module per decision, each a pure function of the Features.

Every rule module has `ID` (the name users see in `# rule:` comments and `rocetune explain`),
a docstring, a page docs/rules/<ID>.md, and `rule(features, ctx) -> list[Decision]`; warnings,
notes and findings go through `ctx` (rocetune.rules.base.RuleContext). The order below is the
order they run in; it does not matter for the result because no two rules set the same key.

A key the host's owner declared (/etc/nccl.conf, a vendor env file: the probe's `declared`
source) is carried by declared-settings alone: every other rule's decision for it is dropped
by RuleContext.keep_declared, which turns the rule's evidence into a note or a finding.
"""

from __future__ import annotations

from . import (
    arp_isolation,
    declared_settings,
    gpudirect_rdma,
    local_rank,
    nccl_cross_nic,
    nccl_ib_gid_index,
    nccl_ib_hca,
    nccl_ib_qps,
    nccl_ib_subnet_aware_routing,
    nccl_ib_timeout,
    nccl_known_issues,
    nccl_plugins,
    nccl_topo_file,
    nccl_version,
    no_rdma,
    socket_ifname,
    traffic_class,
    ucx_net_devices,
)


class _DefersToDeclared:
    """A rule whose decisions give way to what the owner declared (see the module doc)."""

    def __init__(self, module):
        self.module = module
        self.ID = module.ID
        self.__doc__ = module.__doc__

    def rule(self, features, ctx):
        return ctx.keep_declared(list(self.module.rule(features, ctx) or []))


RULES = (
    declared_settings,
    nccl_version,
) + tuple(_DefersToDeclared(m) for m in (
    nccl_ib_hca,
    nccl_ib_gid_index,
    traffic_class,
    nccl_ib_qps,
    nccl_cross_nic,
    nccl_ib_subnet_aware_routing,
    nccl_ib_timeout,
    arp_isolation,
    socket_ifname,
    ucx_net_devices,
    no_rdma,
    gpudirect_rdma,
    nccl_known_issues,
    nccl_plugins,
    nccl_topo_file,
    local_rank,
))


def by_id(rule_id: str):
    for r in RULES:
        if rule_id == r.ID:
            return getattr(r, "module", r)
    return None
