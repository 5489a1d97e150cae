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


# Azure's HPC images put Mellanox's plugin (IBext) under /usr/local/nccl-rdma-sharp-plugins/lib (the ND A100 v4
# benchmark command, tests/fixtures/expert/azure-nd96asr-v4/expert-nccl-test-mpirun-excerpt.txt)
AZURE_IBEXT = plugin("/usr/local/nccl-rdma-sharp-plugins/lib/libnccl-net.so.0.0.0", names=["libnccl-net.so"])


def test_azures_rdma_sharp_plugins_path_is_the_ib_plugin_and_kept():
    plan = plan_of(with_plugins(rail_host(2), AZURE_IBEXT))
    assert "NCCL_NET_PLUGIN" not in plan.env and any("IBext" in n.message for n in plan.notes)


def test_none_says_what_else_it_drops_and_how_to_keep_the_plugin_per_release():
    d = plan_of(with_plugins(rail_host(2), DEFAULT, nccl="2.30.7")).get("NCCL_NET_PLUGIN")
    assert "any tuner, GIN, RMA this library provides" in d.reason
    assert "--unset NCCL_NET_PLUGIN" in d.reason  # a default-named libnccl-net.so: leave NCCL's default load
    named = plugin("/opt/vendor/lib/libnccl-net-acme.so", names=["libnccl-net.so", "libnccl-net-acme.so"])
    assert "--unset NCCL_NET_PLUGIN" in plan_of(with_plugins(rail_host(2), named)).get("NCCL_NET_PLUGIN").reason
    old = plan_of(with_plugins(rail_host(2), DEFAULT, nccl="2.20.5")).get("NCCL_NET_PLUGIN")
    assert "any tuner this library provides" in old.reason  # no GIN or RMA before 2.28.7 / 2.30.7


def test_the_log_plugin_is_loaded_only_when_named_and_rma_is_a_kind():
    log = plugin("/usr/lib/libnccl-log.so", kind="log")
    assert loaded("log", [log], None) is None and loaded("log", [log], "/usr/lib/libnccl-log.so") is log
    rma = plugin("/usr/lib/libnccl-rma.so", kind="rma")
    assert loaded("rma", [rma], None) is rma


def test_plugin_api_versions_by_release():
    from rocetune.nccl.plugins import api_version

    assert [api_version(k, (2, 31, 2)) for k in ("net", "tuner", "profiler", "env", "gin", "rma", "log")] == [
        12, 6, 7, 2, 14, 15, None]
    assert api_version("log", (2, 32, 3)) == 1 and api_version("net", (2, 27, 7)) is None
