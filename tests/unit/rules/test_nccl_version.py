"""nccl-version: the version-gated rules plan for the lowest NCCL a job may load, and say which."""

from __future__ import annotations

from rocetune.model.features import with_nccl_version
from rocetune.model.qos import load_text
from rocetune.nccl.versions import plan_version

from .featurekit import plan_of, rail_host

WHEEL = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
SYSTEM = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"
TORCH_22 = {"path": WHEEL, "version": "2.19.3", "how": "wheel-metadata", "package": "nvidia-nccl-cu12 2.19.3",
            "environment": "/opt/torch/.venv", "via": ["wheel"]}
SYSTEM_228 = {"path": SYSTEM, "version": "2.28.3", "how": "file-name", "package": None, "environment": None,
              "via": ["ld.so.cache", "system"]}
ONLY_19 = ("NCCL_IB_GID_INDEX", "NCCL_IB_TIMEOUT")
# Splitting every message over the QPs (2.18.1-2.20.2) matters only with more than one QP: an
# ECMP fabric plan asks for 4.
ECMP = load_text("fabric:\n  tiers: 2\n  ecmp: true\n", "qos.yml")


def host_with(*libraries, envs=("/opt/torch/.venv", "/usr")):
    f = rail_host(nccl=None).build()
    version, path, basis = plan_version(libraries)
    f["kernel"]["nccl"] = {"version": version, "path": path, "basis": basis, "libraries": list(libraries),
                           "python_environments": list(envs)}
    return f


def findings(plan):
    return {f.id: f for f in plan.findings}


def test_torch_22_wheel_beside_system_228_gets_the_219_decisions():
    plan = plan_of(host_with(TORCH_22, SYSTEM_228))
    assert all(k in plan.env for k in ONLY_19), plan.env
    assert plan.env["NCCL_IB_TIMEOUT"] == "20" and "NCCL_IB_SPLIT_DATA_ON_QPS" not in plan.env  # one QP
    ecmp = plan_of(host_with(TORCH_22, SYSTEM_228), qos=ECMP)
    assert ecmp.env["NCCL_IB_QPS_PER_CONNECTION"] == "4" and ecmp.env["NCCL_IB_SPLIT_DATA_ON_QPS"] == "0"
    assert "NCCL_IB_SPLIT_DATA_ON_QPS" not in plan_of(host_with(SYSTEM_228), qos=ECMP).env  # 2.28 does not split
    f = findings(plan)
    assert "gdr-not-detected" in f and WHEEL in f["gdr-not-detected"].message
    differ = f["nccl-versions-differ"]
    assert differ.severity == "info" and WHEEL in differ.message and SYSTEM in differ.message
    assert "Planned for 2.19.3, the lowest" in differ.message
    gate = plan.get("NCCL_IB_TIMEOUT").evidence["nccl"]
    assert (gate["version"], gate["library"], gate["how"], gate["basis"]) == (
        "2.19.3", WHEEL, "wheel-metadata", "lowest")


def test_system_228_alone_needs_none_of_them_and_says_no_wheel_was_seen():
    plan = plan_of(host_with(SYSTEM_228, envs=()))
    assert not any(k in plan.env for k in ONLY_19), plan.env
    f = findings(plan)
    assert "gdr-not-detected" not in f and "nccl-versions-differ" not in f
    seen = f["nccl-wheel-not-seen"]
    assert SYSTEM in seen.message and "none found under this root" in seen.message
    assert "--nccl-version" in seen.message


def test_a_declared_version_wins_over_the_libraries_found():
    plan = plan_of(with_nccl_version(host_with(TORCH_22, SYSTEM_228), "2.28.9"))
    assert not any(k in plan.env for k in ONLY_19), plan.env
    assert "nccl-versions-differ" not in findings(plan)
    assert any("as declared by --nccl-version" in n.message and WHEEL in n.message for n in plan.notes)
    report = plan.reports["nccl-version"]
    assert (report["version"], report["basis"], report["library"]) == ("2.28.9", "declared", None)
    low = plan_of(with_nccl_version(host_with(SYSTEM_228), "2.19.3"))
    assert all(k in low.env for k in ONLY_19)


def test_an_unreadable_library_plans_for_an_unknown_release():
    mystery = {**TORCH_22, "version": None, "how": None, "package": None}
    plan = plan_of(host_with(mystery, SYSTEM_228))
    f = findings(plan)["nccl-version-unreadable"]
    assert f.severity == "warning" and WHEEL in f.message
    assert plan.env["NCCL_IB_TIMEOUT"] == "20"
    assert plan_of(host_with(mystery, SYSTEM_228), qos=ECMP).env["NCCL_IB_SPLIT_DATA_ON_QPS"] == "0"


def test_no_library_is_an_info_finding():
    f = findings(plan_of(host_with(envs=())))["nccl-not-found"]
    assert f.severity == "info" and "unknown release" in f.message


def test_features_from_before_the_library_list_still_plan():
    f = rail_host(nccl="2.19.3").build()  # kernel.nccl = {"version", "path"} only
    plan = plan_of(f)
    assert all(k in plan.env for k in ONLY_19)
    assert plan.get("NCCL_IB_TIMEOUT").evidence["nccl"]["version"] == "2.19.3"


def _nccl(features, **nccl):
    features["kernel"]["nccl"] = nccl
    return features


def test_a_plan_from_another_user_s_library_says_so():
    from .featurekit import rail_host as _host

    lib = {"path": "/home/alice/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", "version": "2.18.1",
           "how": "library-string", "package": None, "environment": "/home/alice/.venv", "via": ["wheel"],
           "controlled_by": "user alice (under /home/alice)"}
    f = _nccl(_host(2).build(), version="2.18.1", path=lib["path"], basis="other-user", libraries=[lib])
    from rocetune.planner import build_plan

    found = {x.id: x for x in build_plan(f).findings}
    assert found["nccl-other-user-library"].severity == "warning"
    assert "user alice (under /home/alice)" in found["nccl-other-user-library"].message


def test_rejected_files_and_a_stopped_search_are_findings():
    from .featurekit import rail_host as _host
    from rocetune.planner import build_plan

    f = _nccl(_host(2).build(), version=None, path=None, basis="none", libraries=[],
              rejected=[{"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.12.12", "why": "not an ELF file"}],
              search={"looked_at": 64, "left_out": 10, "stopped": "more than 64 library files"})
    found = {x.id: x for x in build_plan(f).findings}
    assert found["nccl-not-a-library"].subject == "/usr/lib/x86_64-linux-gnu/libnccl.so.2.12.12"
    assert "more than 64 library files" in found["nccl-search-bounded"].message
