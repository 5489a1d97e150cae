"""nccl-plugins: which plugin NCCL loads per kind, NCCL_NET_PLUGIN=none where a default-named net
plugin would take the traffic the plan gives NCCL's IB transport, and the env plugin warning."""

from __future__ import annotations

from rocetune.nccl.plugins import loaded

from .featurekit import plan_of, rail_host


def plugin(path, kind="net", names=None, controlled_by=None, variant=None):
    return {"path": path, "names": names or [path.rsplit("/", 1)[1]], "kind": kind, "variant": variant,
            "version": None, "via": ["ld.so.cache"], "controlled_by": controlled_by}


def with_plugins(h, *plugins, env=None, nccl="2.28.9"):
    f = h.build()
    f["kernel"]["nccl"] = {"version": nccl, "path": None, "basis": "single", "libraries": [],
                           "plugins": list(plugins), "plugin_env": env or {}}
    return f


OFI = plugin("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so.1.14.2", names=["libnccl-net-ofi.so"], variant="ofi")
DEFAULT = plugin("/opt/vendor/lib/libnccl-net.so", names=["libnccl-net.so"])


def test_which_plugin_nccl_loads():
    plugins = [OFI, DEFAULT]
    assert loaded("net", plugins, None) is DEFAULT          # libnccl-net.so when unset
    assert loaded("net", plugins, "ofi") is OFI             # libnccl-net-<name>.so
    assert loaded("net", plugins, "libnccl-net-ofi.so") is OFI
    assert loaded("net", plugins, OFI["path"]) is OFI
    assert loaded("net", plugins, "none") is None and loaded("net", plugins, "NONE") is None
    assert loaded("tuner", plugins, None) is None


def test_a_default_net_plugin_is_turned_off_for_the_ib_transport_the_plan_is_for():
    plan = plan_of(with_plugins(rail_host(2), DEFAULT))
    d = plan.get("NCCL_NET_PLUGIN")
    assert d.value == "none" and "/opt/vendor/lib/libnccl-net.so" in d.reason
    (f,) = [f for f in plan.findings if f.id == "nccl-net-plugin"]
    assert f.severity == "info"


def test_a_declared_or_hpcx_net_plugin_is_kept():
    hpcx = plugin("/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so.0.0.0", names=["libnccl-net.so"])
    plan = plan_of(with_plugins(rail_host(2), hpcx))
    assert "NCCL_NET_PLUGIN" not in plan.env and any("HPC-X's IB plugin" in n.message for n in plan.notes)
    declared = plan_of(with_plugins(rail_host(2).declare(NCCL_NET_PLUGIN="ofi"), OFI, DEFAULT))
    assert declared.env.get("NCCL_NET_PLUGIN") == "ofi"  # the owner's, carried by declared-settings
    assert not [f for f in declared.findings if f.id == "nccl-net-plugin"]


def test_an_env_plugin_is_a_warning_from_2_28_7():
    env = plugin("/usr/lib/x86_64-linux-gnu/libnccl-env.so", kind="env")
    f = [x for x in plan_of(with_plugins(rail_host(2), env)).findings if x.id == "nccl-env-plugin"]
    assert f and f[0].severity == "warning" and "answers every variable NCCL reads" in f[0].message
    old = plan_of(with_plugins(rail_host(2), env, nccl="2.27.7"))
    assert not [x for x in old.findings if x.id == "nccl-env-plugin"]
    off = plan_of(with_plugins(rail_host(2), env, env={"NCCL_ENV_PLUGIN": "none"}))
    assert not [x for x in off.findings if x.id == "nccl-env-plugin"]


def test_a_plugin_another_user_controls():
    mine = plugin("/home/bob/lib/libnccl-tuner.so", kind="tuner", controlled_by="user bob (under /home/bob)")
    (f,) = [x for x in plan_of(with_plugins(rail_host(2), mine)).findings if x.id == "nccl-plugin-other-user"]
    assert "user bob" in f.message
