"""`rocetune fleet report` over results made from a real fixture host: `probe --json` and
`doctor --json` run on it, copied per host, one copy altered the way a drifted node is."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune, rocetune_json

HOST = str(Path(__file__).resolve().parents[1] / "fixtures" / "hosts" / "dgx-h100-roce")


@pytest.fixture(scope="module")
def base():
    _, probe = rocetune_json("probe", "--root", HOST)
    _, doctor = rocetune_json("doctor", "--root", HOST)
    assert probe["status"] != "error" and doctor["status"] != "error"
    return {"schema": "rocetune.fleet-host/1", "host": None, "probe": probe["data"],
            "doctor": doctor["data"], "gathered_at": "2026-11-25T12:00:00Z", "error": None}


def _write(directory: Path, docs: dict) -> Path:
    directory.mkdir(exist_ok=True)
    for host, doc in docs.items():
        (directory / f"{host}.json").write_text(json.dumps(doc), encoding="utf-8")
    return directory


def _fleet(base, n=4):
    out = {}
    for i in range(1, n + 1):
        doc = copy.deepcopy(base)
        doc["host"] = f"gpu{i:02d}"
        out[doc["host"]] = doc
    return out


def _ports(doc, device):
    return [p for d in doc["probe"]["features"]["rdma"]["devices"] if d["name"] == device for p in d["ports"]]


def test_identical_hosts_agree_and_the_warnings_they_share_are_said_exit_5(tmp_path, base):
    d = _write(tmp_path / "r", _fleet(base, 3))
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 5, env  # the fixture host's two warnings, on every host: shared, not agreed away
    assert env["data"]["summary"] == {"hosts": 3, "failed": 0, "differ": 0, "agree": True, "shared": 2}
    assert [(x["check"], x["hosts"]) for x in env["data"]["shared"]] == [("gdr-not-detected", 3),
                                                                         ("nccl-ece-roce", 3)]
    assert env["data"]["facts"]["mtu"]["reference"] == [9000]
    assert env["data"]["facts"]["hca.count"]["reference"] == 8


def test_the_odd_host_and_value_are_named(tmp_path, base):
    docs = _fleet(base, 6)
    for p in _ports(docs["gpu02"], "mlx5_3"):
        p["netdev_mtu"] = 1500
    devs = docs["gpu04"]["probe"]["features"]["rdma"]["devices"]
    devs[:] = [d for d in devs if d["name"] != "mlx5_11"]
    docs["gpu05"]["probe"]["features"]["kernel"]["nccl"]["libraries"][0]["version"] = "2.18.3"
    docs["gpu06"] = {"host": "gpu06", "error": "ssh: connect to host gpu06 port 22: No route to host",
                     "probe": None, "doctor": None, "gathered_at": None}
    d = _write(tmp_path / "r", docs)
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 1
    hosts = {h["host"]: h for h in env["data"]["hosts"]}
    assert [h["host"] for h in env["data"]["hosts"]][0] == "gpu06"  # failures first
    assert hosts["gpu06"]["status"] == "failed" and "No route to host" in hosts["gpu06"]["error"]
    assert hosts["gpu01"]["status"] == "ok" and hosts["gpu03"]["status"] == "ok"
    assert hosts["gpu02"]["differs"] == ["mtu"]
    assert set(hosts["gpu04"]["differs"]) >= {"hca.count", "hca.names"}
    assert "nccl.versions" in hosts["gpu05"]["differs"]
    drift = {(e["host"], e["fact"]): e for e in env["data"]["drift"]}
    assert drift[("gpu02", "mtu")]["value"] == [1500, 9000]
    assert "1500: mlx5_3:1" in drift[("gpu02", "mtu")]["detail"]
    assert drift[("gpu04", "hca.count")]["value"] == 7
    assert "mlx5_11:1" not in drift[("gpu04", "hca.names")]["value"]
    assert drift[("gpu05", "nccl.versions")]["reasons"][0] == {
        "kind": "majority", "expected": ["2.21.5"], "hosts": 4, "of": 5, "missing": ["2.21.5"], "extra": ["2.18.3"]}
    assert drift[("gpu04", "hca.names")]["reasons"][0]["missing"] == ["mlx5_11:1"]

    proc = rocetune("fleet", "report", str(d))
    assert proc.returncode == 1 and no_traceback(proc)
    out = proc.stdout
    assert out.index("FAILED") < out.index("gpu06") < out.index("DIFFERS")
    line = next(x for x in out.splitlines() if x.lstrip().startswith("!  gpu02"))
    assert "1500, 9000" in line and "9000 on 5 of 5 hosts" not in line and "9000 on 4 of 5 hosts" in line


def test_manifest_mismatches_are_named_even_when_all_agree(tmp_path, base):
    d = _write(tmp_path / "r", _fleet(base, 2))
    m = tmp_path / "m.yml"
    m.write_text('mtu: 4200\nnccl_version: "2.21.5"\nhca_count: 8\nlink: {speed: 32, width: 16, rate_gbps: 400}\n'
                 'env: {NCCL_IB_TIMEOUT: 20, NCCL_IB_GID_INDEX: null}\n', encoding="utf-8")
    code, env = rocetune_json("fleet", "report", str(d), "--manifest", str(m))
    assert code == 1
    drift = env["data"]["drift"]
    assert {(e["host"], e["fact"]) for e in drift} == {("gpu01", "mtu"), ("gpu02", "mtu")}
    assert drift[0]["reasons"] == [{"kind": "manifest", "key": "mtu", "expected": "4200"}]
    m.write_text("mtu: 9000\nlink: {speed: 16}\n", encoding="utf-8")
    code, env = rocetune_json("fleet", "report", str(d), "--manifest", str(m))
    assert code == 1 and {e["fact"] for e in env["data"]["drift"]} == {"pcie.nic", "pcie.gpu"}
    m.write_text("mtu: 9000\n", encoding="utf-8")
    assert rocetune_json("fleet", "report", str(d), "--manifest", str(m))[0] == 5  # agree, share warnings


@pytest.mark.parametrize("text, word", [("mtu: jumbo\n", "mtu"), ("colour: red\n", "colour"),
                                        ("link: {speed: fast}\n", "link.speed"), ("[1, 2]\n", "mapping")])
def test_bad_manifest_is_an_input_error(tmp_path, base, text, word):
    d = _write(tmp_path / "r", _fleet(base, 1))
    m = tmp_path / "m.yml"
    m.write_text(text, encoding="utf-8")
    proc = rocetune("fleet", "report", str(d), "--manifest", str(m))
    assert proc.returncode == 3 and no_traceback(proc)
    assert word in proc.stderr


def test_unusable_files_are_that_hosts_failure(tmp_path, base):
    docs = _fleet(base, 2)
    d = _write(tmp_path / "r", docs)
    (d / "broken.json").write_text("{not json", encoding="utf-8")
    (d / "empty.json").write_text(json.dumps({"host": "empty", "error": None}), encoding="utf-8")
    bad = copy.deepcopy(docs["gpu01"])
    bad["probe"]["features"]["rdma"]["devices"][0]["ports"][0]["port"] = "1"
    bad["doctor"] = None
    (d / "badfeatures.json").write_text(json.dumps(bad), encoding="utf-8")
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 1
    errors = {h["host"]: h["error"] for h in env["data"]["hosts"] if h["status"] == "failed"}
    assert set(errors) == {"broken", "empty", "badfeatures"}
    assert "not JSON" in errors["broken"] and "neither" in errors["empty"]
    assert "rdma.devices[0].ports[0].port" in errors["badfeatures"]


@pytest.mark.parametrize("setup", ["missing", "empty"])
def test_no_results_is_an_input_error(tmp_path, setup):
    d = tmp_path / "r"
    if setup == "empty":
        d.mkdir()
    proc = rocetune("fleet", "report", str(d))
    assert proc.returncode == 3 and no_traceback(proc) and "rocetune: error:" in proc.stderr


def test_html_is_escaped_self_contained_and_deterministic(tmp_path, base):
    docs = _fleet(base, 3)
    evil = '<script>alert("x")</script>'
    docs["gpu02"]["probe"]["features"]["host"]["kernel_release"] = evil
    docs["gpu02"]["probe"]["plan"]["env"]["NCCL_IB_TIMEOUT"] = '"><img src=x onerror=alert(1)>'
    d = _write(tmp_path / "r", docs)
    (d / "<b>evil&host.json").write_text(json.dumps({"error": "</td><script>x</script>"}), encoding="utf-8")
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert rocetune("fleet", "report", str(d), "--html", str(a)).returncode == 1
    assert rocetune("fleet", "report", str(d), "--json", "--html", str(b)).returncode == 1
    page = a.read_text(encoding="utf-8")
    assert a.read_bytes() == b.read_bytes()
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&lt;b&gt;evil&amp;host" in page
    assert "http://" not in page and "https://" not in page and "src=" not in page.replace("src=x", "")
    assert 'class="odd"' in page


def test_help_lists_fleet_and_report():
    assert "fleet" in rocetune("--help").stdout
    proc = rocetune("fleet", "report", "--help")
    assert proc.returncode == 0 and "--manifest" in proc.stdout


def test_two_hosts_that_differ_are_both_named(tmp_path, base):
    docs = _fleet(base, 2)
    docs["gpu02"]["probe"]["features"]["host"]["kernel_release"] = "6.8.0-45-generic"
    d = _write(tmp_path / "r", docs)
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 1
    kernel = env["data"]["facts"]["kernel"]
    assert not kernel["has_reference"]
    assert {h: v["status"] for h, v in kernel["values"].items()} == {"gpu01": "split", "gpu02": "split"}


def test_shared_doctor_errors_fail_every_host_and_unset_env_is_named(tmp_path, base):
    docs = _fleet(base, 3)
    for doc in docs.values():
        doc["doctor"]["findings"].append({"id": "doctor-mtu-mismatch", "severity": "error",
                                          "message": "switch port MTU below the host's"})
    del docs["gpu03"]["probe"]["plan"]["env"]["NCCL_IB_TIMEOUT"]
    d = _write(tmp_path / "r", docs)
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 1
    drift = {(e["host"], e["fact"]): e for e in env["data"]["drift"]}
    assert {h for h, f in drift if f == "doctor.errors"} == {"gpu01", "gpu02", "gpu03"}
    assert drift[("gpu01", "doctor.errors")]["value"] == ["doctor-mtu-mismatch"]
    assert drift[("gpu03", "env.NCCL_IB_TIMEOUT")]["value"] is None
    assert "(unset)" in rocetune("fleet", "report", str(d)).stdout
