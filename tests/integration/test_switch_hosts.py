"""`rocetune qos check --switch FILE --hosts DIR`: the switch's running QoS held against the NIC
QoS the hosts report in fleet results. The host is the fixture whose ConnectX NICs' mlnx_qos
outputs were recorded (trust dscp, PFC on 3, DSCP 26 -> 3); the switches are SONiC's own
default QoS (DSCP 26 -> TC 1, PFC on 3 and 4) and a config rendered from the default plan."""

from __future__ import annotations

import json
from pathlib import Path

from .clirun import no_traceback, rocetune, rocetune_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SONIC = FIXTURES / "switch" / "sonic-qos-arista7050.json"


def fleet_dir(tmp_path: Path) -> Path:
    _, probe = rocetune_json("probe", "--root", str(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf"))
    nics = probe["data"]["features"]["qos"]["interfaces"]
    assert {q["trust"] for q in nics.values()} == {"dscp"} and all(q["pfc_enabled"] == [3] for q in nics.values())
    out = tmp_path / "fleet"
    out.mkdir()
    for host in ("gpu01", "gpu02"):
        (out / f"{host}.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": host,
                                                      "probe": probe["data"], "doctor": None, "error": None}))
    (out / "gpu03.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu03",
                                                "probe": None, "doctor": None, "error": "ssh: timed out"}))
    return out


def test_sonic_defaults_disagree_with_the_hosts_nics_on_pfc_and_dscp_26(tmp_path):
    hosts = fleet_dir(tmp_path)
    code, env = rocetune_json("qos", "check", str(SONIC), "--hosts", str(hosts))
    found = [f for f in env["data"]["findings"] if f["id"].startswith("switch-host-")]
    assert code == 1
    pfc = [f for f in found if f["id"] == "switch-host-pfc-mismatch"]
    dscp = [f for f in found if f["id"] == "switch-host-dscp-mismatch"]
    assert len(pfc) == len(dscp) == 1  # one switch fault each, naming the 8 fabric NICs of each of 2 hosts
    assert pfc[0]["message"].startswith("PFC differs: only the switch on 4: 16 NICs on 2 hosts: gpu01 (enp")
    assert dscp[0]["message"].startswith("RoCE's DSCPs land in other priorities on the switch: DSCP 26: NIC "
                                         "priority 3, switch traffic class 1: 16 NICs on 2 hosts"), dscp[0]["message"]
    assert sorted(pfc[0]["evidence"]["hosts"]) == ["gpu01", "gpu02"] and len(pfc[0]["evidence"]["hosts"]["gpu01"]) == 8
    assert pfc[0]["subject"].endswith("(28 ports)")
    assert not [f for f in found if f["id"] == "switch-host-trust-mismatch"]
    assert any("gpu03: not compared (gather failed: ssh: timed out)" in w for w in env["warnings"])


def test_a_switch_rendered_from_the_plan_agrees_with_the_hosts(tmp_path):
    hosts = fleet_dir(tmp_path)
    rendered = tmp_path / "sonic.json"
    proc = rocetune("qos", "render", "--os", "sonic", "--ports", "Ethernet0,Ethernet4", "-o", str(rendered))
    assert proc.returncode == 0, proc.stderr
    code, env = rocetune_json("qos", "check", str(rendered), "--hosts", str(hosts))
    assert code == 0 and not [f for f in env["data"]["findings"] if f["severity"] != "info"], env["data"]["findings"]
    assert not [f for f in env["data"]["findings"] if f["id"].startswith("switch-host-")]


def test_a_missing_hosts_dir_is_one_line(tmp_path):
    proc = rocetune("qos", "check", str(SONIC), "--hosts", str(tmp_path / "nope"))
    assert proc.returncode == 3 and no_traceback(proc) and "not a directory" in proc.stderr


def test_one_switch_fault_is_one_finding_however_many_hosts_it_touches():
    """7 or 128 hosts behind SONiC's default QoS: the same findings, each naming every host; the
    report does not grow with the fleet (it grew by ~48 lines per host when each NIC had its own)."""
    from rocetune import app
    from rocetune.doctor import report
    from rocetune.fleet.results import HostResult
    from rocetune.lint.switch_hosts import compare_hosts
    from rocetune.model.qos import default_plan
    from rocetune.switchos import read_file

    features = app.host_features(str(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf"))
    switch = read_file(str(SONIC))
    sizes = {}
    for n in (7, 128):
        hosts = [HostResult(host=f"gpu{i:03d}", features=features) for i in range(n)]
        found, notes = compare_hosts(default_plan(), switch, hosts)
        assert notes == [f"DCQCN not compared on {n} host(s) (gpu000, gpu001, gpu002, gpu003, gpu004, gpu005 ...): "
                         "their results hold no doctor run and their probe read no mlx5 ecn tree"]  # one line
        assert sorted(f.id for f in found) == ["switch-host-dscp-mismatch", "switch-host-pfc-mismatch"]
        assert all(len(f.evidence["hosts"]) == n for f in found)
        assert f"{8 * n} NICs on {n} hosts: gpu000 (" in found[0].message
        sizes[n] = len(report.text(report.ordered(found), "switch", 1).splitlines())
    assert sizes[7] == sizes[128] < 12  # two findings, five lines each with -v, and the summary
    assert "and 122 more hosts" in report.text(report.ordered(found), "switch")


def test_dcqcn_off_on_the_nics_against_a_switch_that_marks_ecn(tmp_path):
    """A real doctor run on a copy of the host fixture where mlx5's DCQCN notification point is
    off for priority 3 on two fabric NICs (roce_np/enable/3 = 0, planted): the switch rendered
    from the plan marks ECN on queue 3, so one finding names those two NICs; hosts whose results
    hold no doctor run are said, not judged."""
    import shutil

    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf", root, symlinks=True)
    _, probe = rocetune_json("probe", "--root", str(root))
    nics = sorted(probe["data"]["features"]["qos"]["interfaces"])
    for nic in nics:
        for side in ("roce_np", "roce_rp"):
            enable = root / "sys" / "class" / "net" / nic / "ecn" / side / "enable"
            enable.mkdir(parents=True)
            for prio in range(8):
                off = side == "roce_np" and prio == 3 and nic in nics[:2]
                (enable / str(prio)).write_text("0\n" if off else "1\n")
    plan = tmp_path / "qos.yml"
    plan.write_text("version: 1\n")
    _, doctor = rocetune_json("doctor", "--root", str(root), "--qos", str(plan))
    assert sorted(f["subject"] for f in doctor["data"]["findings"] if f["id"] == "doctor-ecn-off") == nics[:2]
    out = tmp_path / "fleet"
    out.mkdir()
    (out / "gpu01.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu01",
                                                "probe": probe["data"], "doctor": doctor["data"], "error": None}))
    (out / "gpu02.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu02",
                                                "probe": probe["data"], "doctor": None, "error": None}))
    rendered = tmp_path / "sonic.json"
    assert rocetune("qos", "render", "--os", "sonic", "--ports", "Ethernet0", "-o", str(rendered)).returncode == 0
    code, env = rocetune_json("qos", "check", str(rendered), "--hosts", str(out))
    dcqcn = [f for f in env["data"]["findings"] if f["id"] == "switch-host-dcqcn-mismatch"]
    assert code == 5 and len(dcqcn) == 1 and dcqcn[0]["severity"] == "warning"
    assert dcqcn[0]["evidence"]["hosts"] == {"gpu01": nics[:2]}
    assert "marks ECN on queue 3" in dcqcn[0]["message"]
    assert any("DCQCN not compared on 1 host(s) (gpu02)" in w for w in env["warnings"])


def plant_ecn(root: Path, nic: str, *, off: tuple = (), cnp_dscp: int = 48, cnp_prio: int = 6) -> None:
    """MLNX_OFED / DOCA-OFED mlx5's /sys/class/net/IF/ecn tree (the files the roce_qos role writes),
    planted on a copy of the host fixture: its DGX OS 7 inbox driver has none. Every priority on
    except the (side, priority) pairs in `off`; CNP DSCP 48 and priority 6 are ConnectX firmware's
    defaults (CNP_DSCP, CNP_802P_PRIO in a published `mlxconfig q` dump)."""
    ecn = root / "sys" / "class" / "net" / nic / "ecn"
    for side in ("roce_np", "roce_rp"):
        (ecn / side / "enable").mkdir(parents=True)
        for prio in range(8):
            (ecn / side / "enable" / str(prio)).write_text("0\n" if (side, prio) in off else "1\n")
    (ecn / "roce_np" / "cnp_dscp").write_text(f"{cnp_dscp}\n")
    (ecn / "roce_np" / "cnp_802p_prio").write_text(f"{cnp_prio}\n")


def test_the_probe_reads_dcqcn_and_the_cnp_class_where_the_driver_has_them(tmp_path):
    import shutil

    _, bare = rocetune_json("probe", "--root", str(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf"))
    assert "dcqcn" not in bare["data"]["features"]["qos"]  # inbox driver: not known, not off
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf", root, symlinks=True)
    plant_ecn(root, "enp24s0np0", off=(("roce_rp", 3),), cnp_dscp=56, cnp_prio=7)
    (root / "sys" / "class" / "net" / "enp24s0np0" / "ecn" / "roce_np" / "enable" / "9").write_text("1\n")
    _, probe = rocetune_json("probe", "--root", str(root))
    dcqcn = probe["data"]["features"]["qos"]["dcqcn"]
    assert list(dcqcn) == ["enp24s0np0"]
    nic = dcqcn["enp24s0np0"]
    assert (nic["cnp_dscp"], nic["cnp_802p_prio"]) == (56, 7)
    assert nic["roce_np"] == {str(p): True for p in range(8)}
    assert nic["roce_rp"]["3"] is False and sorted(nic["roce_rp"]) == [str(p) for p in range(8)]
    saved = tmp_path / "features.json"
    saved.write_text(json.dumps(probe["data"]["features"]))
    from rocetune.model.features import load

    assert load(str(saved))["qos"]["dcqcn"] == dcqcn  # the schema takes it


def test_cnp_class_and_dcqcn_read_by_the_probe_against_the_switch(tmp_path):
    """No doctor run in the results: the probe's qos.dcqcn alone is compared. Two NICs send CNPs
    with DSCP 56 (priority 7, the scheme of mlnx-tools' old roce_config.sh), which the switch
    rendered from the default plan classifies into traffic class 0; one NIC has the reaction
    point off on the data priority."""
    import shutil

    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf", root, symlinks=True)
    _, bare = rocetune_json("probe", "--root", str(root))
    nics = sorted(bare["data"]["features"]["qos"]["interfaces"])
    for nic in nics:
        plant_ecn(root, nic)
    _, clean = rocetune_json("probe", "--root", str(root))
    shutil.rmtree(root / "sys" / "class" / "net" / nics[0] / "ecn")
    shutil.rmtree(root / "sys" / "class" / "net" / nics[1] / "ecn")
    shutil.rmtree(root / "sys" / "class" / "net" / nics[2] / "ecn")
    plant_ecn(root, nics[0], cnp_dscp=56, cnp_prio=7)
    plant_ecn(root, nics[1], cnp_dscp=56, cnp_prio=7)
    plant_ecn(root, nics[2], off=(("roce_rp", 3),))
    _, faulty = rocetune_json("probe", "--root", str(root))
    out = tmp_path / "fleet"
    out.mkdir()
    for host, probe in (("gpu01", clean), ("gpu02", faulty)):
        (out / f"{host}.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": host,
                                                      "probe": probe["data"], "doctor": None, "error": None}))
    rendered = tmp_path / "sonic.json"
    assert rocetune("qos", "render", "--os", "sonic", "--ports", "Ethernet0", "-o", str(rendered)).returncode == 0
    code, env = rocetune_json("qos", "check", str(rendered), "--hosts", str(out))
    found = {f["id"]: f for f in env["data"]["findings"] if f["id"].startswith("switch-host-")}
    assert sorted(found) == ["switch-host-cnp-mismatch", "switch-host-dcqcn-mismatch"], env["data"]["findings"]
    cnp, dcqcn = found["switch-host-cnp-mismatch"], found["switch-host-dcqcn-mismatch"]
    assert code == 5 and cnp["severity"] == dcqcn["severity"] == "warning"
    assert cnp["evidence"]["hosts"] == {"gpu02": nics[:2]}
    assert cnp["message"].startswith("the NICs send CNPs with DSCP 56 (mlx5 ecn/roce_np), which the switch puts in "
                                     "traffic class 0 (queue 0), not the CNP class (traffic class 6, queue 6)")
    assert dcqcn["evidence"]["hosts"] == {"gpu02": [nics[2]]}
    assert not any("DCQCN not compared" in w for w in env["warnings"])


def test_a_cnp_dscp_the_switch_queues_with_the_cnp_class_is_not_a_finding(tmp_path):
    """A NIC CNP DSCP other than the plan's, which the switch still sends out of the CNP queue
    (SONiC's default map in the published Arista 7050 dump puts DSCP 46 and 48 in TC 5 and 6...),
    is judged by the queue it leaves by, not by its number."""
    import shutil

    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "hosts" / "dgx-h100-rails-dmabuf", root, symlinks=True)
    _, bare = rocetune_json("probe", "--root", str(root))
    nics = sorted(bare["data"]["features"]["qos"]["interfaces"])
    for nic in nics:
        plant_ecn(root, nic, cnp_dscp=48, cnp_prio=3)  # the priority is not what a DSCP-trust switch reads
    _, probe = rocetune_json("probe", "--root", str(root))
    out = tmp_path / "fleet"
    out.mkdir()
    (out / "gpu01.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu01",
                                                "probe": probe["data"], "doctor": None, "error": None}))
    rendered = tmp_path / "sonic.json"
    assert rocetune("qos", "render", "--os", "sonic", "--ports", "Ethernet0", "-o", str(rendered)).returncode == 0
    code, env = rocetune_json("qos", "check", str(rendered), "--hosts", str(out))
    assert code == 0 and not [f for f in env["data"]["findings"] if f["id"].startswith("switch-host-")]
