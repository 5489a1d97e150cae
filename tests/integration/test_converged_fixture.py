"""The converged-port host end to end: no `ip` (addresses from /proc/net), mlx5 built into the
kernel, one RoCE port that also carries the default route."""

from __future__ import annotations

from rocetune.planner import build_plan
from rocetune.probe.collect import collect_features
from tests.fixtures.roots import root_of


def test_built_in_mlx5_addresses_from_proc_net_and_the_converged_port():
    f = collect_features(root_of("h100-converged-roce"))
    assert f["kernel"]["builtin_modules"] == ["ib_core", "mlx5_core", "mlx5_ib"]
    assert f["kernel"]["modules"]["mlx5_ib"] and f["kernel"]["modules"]["ib_uverbs"]
    net = f["net"]
    assert net["addresses_source"] == "/proc/net" and net["addresses_known"]
    port = next(i for i in net["interfaces"] if i["name"] == "ens3np0")
    assert [a["address"] + "/" + str(a["prefixlen"]) for a in port["addresses"]][:2] == [
        "10.20.0.14/24", "2001:db8:20::14/64"]
    assert [(r["family"], r["metric"]) for r in net["default_routes"]] == [("inet", 100), ("inet6", 1024)]
    plan = build_plan(f)
    env = plan.env
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1" and env["UCX_NET_DEVICES"] == "mlx5_0:1"
    assert env["NCCL_SOCKET_IFNAME"] == "=ens3np0"
    assert "NCCL_IB_DISABLE" not in env and "NCCL_SOCKET_NTHREADS" not in env
    assert any(w.message.startswith("converged port: mlx5_0:1") for w in plan.warnings)
