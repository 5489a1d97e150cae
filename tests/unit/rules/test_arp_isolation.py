"""arp-isolation: RDMA ports sharing a subnet with ARP sysctls at defaults are a finding."""

from __future__ import annotations

from .featurekit import plan_of, rail_host
from .test_nccl_cross_nic import one_subnet_host


def arp_findings(plan):
    return [f for f in plan.findings if f.id == "rdma-ports-share-subnet"]


def with_sysctls(h, ifaces, arp_ignore, arp_announce, rp_filter, all_=(0, 0, 0)):
    for scope, vals in [("all", all_)] + [(i, (arp_ignore, arp_announce, rp_filter)) for i in ifaces]:
        for key, v in zip(("arp_ignore", "arp_announce", "rp_filter"), vals):
            h.sysctl[f"net.ipv4.conf.{scope}.{key}"] = str(v)
    return h


def test_defaults_are_a_warning_naming_sysctls_and_interfaces():
    h = with_sysctls(one_subnet_host(), [f"ens{i}np0" for i in range(4)], 0, 0, 1)
    (f,) = arp_findings(plan_of(h.build()))
    assert f.severity == "warning" and f.subject == "10.10.10.0/24"
    for text in ("arp_ignore is 0", "arp_announce is 0", "rp_filter is 1", "ens0np0, ens1np0",
                 "#1109"):
        assert text in f.message


def test_isolated_ports_are_only_a_note():
    h = with_sysctls(one_subnet_host(), [f"ens{i}np0" for i in range(4)], 1, 2, 2)
    plan = plan_of(h.build())
    assert not arp_findings(plan) and any("share 10.10.10.0/24" in str(n) for n in plan.notes)


def test_all_scope_counts_as_the_kernel_takes_the_maximum():
    h = with_sysctls(one_subnet_host(), [f"ens{i}np0" for i in range(4)], 0, 0, 0, all_=(1, 2, 0))
    assert not arp_findings(plan_of(h.build()))


def test_unknown_sysctls_are_info():
    (f,) = arp_findings(plan_of(one_subnet_host().build()))
    assert f.severity == "info"


def test_rail_subnets_are_not_flagged():
    assert not arp_findings(plan_of(rail_host(4).build()))


def test_the_fix_is_said_once_in_its_field_not_again_in_the_message():
    h = with_sysctls(one_subnet_host(), [f"ens{i}np0" for i in range(4)], 0, 0, 1)
    (f,) = arp_findings(plan_of(h.build()))
    assert "Fix:" not in f.message and "arp_ignore=1, arp_announce=2" not in f.message
    assert "roce_net_arp_isolation" in f.fix and "own subnet" in f.fix
