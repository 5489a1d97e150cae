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
    code, env = rocetune_json("qos", "check", "--switch", str(SONIC), "--hosts", str(hosts))
    found = [f for f in env["data"]["findings"] if f["id"].startswith("switch-host-")]
    assert code == 1
    pfc = [f for f in found if f["id"] == "switch-host-pfc-mismatch"]
    dscp = [f for f in found if f["id"] == "switch-host-dscp-mismatch"]
    assert len(pfc) == len(dscp) == 16  # 8 fabric NICs on each of 2 hosts
    assert all(f["message"] == "PFC differs: only the switch on 4" for f in pfc)
    assert all(f["message"] == "RoCE's DSCPs land in other classes on the switch: DSCP 26: NIC priority 3, "
               "switch class 1" for f in dscp), dscp[0]["message"]  # CNP's 48 -> 6 agrees
    assert pfc[0]["subject"].startswith("gpu01 enp") and pfc[0]["subject"].endswith("(28 ports)")
    assert not [f for f in found if f["id"] == "switch-host-trust-mismatch"]
    assert any("gpu03: not compared (gather failed: ssh: timed out)" in w for w in env["warnings"])


def test_a_switch_rendered_from_the_plan_agrees_with_the_hosts(tmp_path):
    hosts = fleet_dir(tmp_path)
    rendered = tmp_path / "sonic.json"
    proc = rocetune("qos", "render", "--switch", "sonic", "--ports", "Ethernet0,Ethernet4", "-o", str(rendered))
    assert proc.returncode == 0, proc.stderr
    code, env = rocetune_json("qos", "check", "--switch", str(rendered), "--hosts", str(hosts))
    assert code == 0 and not env["data"]["findings"], env["data"]["findings"]


def test_a_missing_hosts_dir_is_one_line(tmp_path):
    proc = rocetune("qos", "check", "--switch", str(SONIC), "--hosts", str(tmp_path / "nope"))
    assert proc.returncode == 3 and no_traceback(proc) and "not a directory" in proc.stderr
