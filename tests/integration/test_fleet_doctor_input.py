"""`rocetune fleet report` on what `rocetune --json doctor > HOST.json` leaves on each node, as it
is: doctor's compact JSON (the verdict, the findings, the facts a fleet compares), its warnings
compared as well as its failures, a list fact's difference named, and `--write-expect` from the
fleet's majority, which `doctor --expect` then holds a node to.

The hosts are copies of a real fixture host (tests/fixtures/hosts/dgx-h100-roce), each changed
the way a drifted node is: logins and services limited to 8 MiB of locked memory (doctor's
memlock warnings), or one rail's RDMA device gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rocetune.fleet.facts import FEATURE_KEYS

from .clirun import no_traceback, rocetune, rocetune_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
HOST = FIXTURES / "dgx-h100-roce"
MEMLOCK_8M = {"etc/systemd/system.conf": "[Manager]\nDefaultLimitMEMLOCK=8M\n",
              "etc/security/limits.conf": "* soft memlock 8192\n* hard memlock 8192\n"}


def _root(tmp: Path, name: str, files=None, drop=()) -> Path:
    root = tmp / name
    shutil.copytree(HOST, root, symlinks=True)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for rel in drop:
        (root / rel).unlink()  # /sys/class/infiniband/DEV is a link to the device
    return root


@pytest.fixture(scope="module")
def envelopes(tmp_path_factory):
    """`rocetune --json doctor` of a good node, an 8 MiB memlock node and a node without mlx5_4."""
    tmp = tmp_path_factory.mktemp("roots")
    roots = {"good": _root(tmp, "good"), "memlock": _root(tmp, "memlock", MEMLOCK_8M),
             "rail": _root(tmp, "rail", drop=["sys/class/infiniband/mlx5_4"])}
    out = {}
    for name, root in roots.items():
        proc = rocetune("--json", "doctor", "--root", str(root))
        assert proc.returncode in (1, 5) and no_traceback(proc), proc.stderr
        out[name] = proc.stdout
    out["roots"] = roots
    return out


def _fleet(tmp: Path, envelopes: dict, kinds: dict) -> Path:
    d = tmp / "fleet"
    d.mkdir()
    for host, kind in kinds.items():
        (d / f"{host}.json").write_text(envelopes[kind], encoding="utf-8")
    return d


def test_doctor_json_is_compact_by_default_and_whole_with_v(envelopes):
    compact = json.loads(envelopes["good"])["data"]
    assert {"summary", "findings", "fleet_facts", "env", "expect"} <= set(compact)
    assert "features" not in compact and "plan" not in compact and "readings" not in compact
    assert compact["summary"]["warnings"] >= 1 and compact["summary"]["exit_code"] == 5
    assert compact["fleet_facts"]["hca.count"]["value"] == 8 and compact["env"]["NCCL_IB_HCA"]
    assert set(compact["fleet_facts"]) == set(FEATURE_KEYS)  # every fact the report reads from Features
    full = rocetune("--json", "doctor", "-v", "--root", str(HOST))
    data = json.loads(full.stdout)["data"]
    assert data["features"]["schema_version"] and data["plan"]["env"] and data["readings"]
    assert len(full.stdout) > 4 * len(envelopes["good"])


@pytest.mark.parametrize("host", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_doctor_json_stays_within_20_kb_on_every_fixture_host(host):
    proc = rocetune("--json", "doctor", "--root", str(FIXTURES / host))
    assert json.loads(proc.stdout)["status"] != "error", proc.stdout[:300]
    assert len(proc.stdout.encode()) <= 20_000, (host, len(proc.stdout.encode()))


def test_warnings_differ_list_facts_name_what_is_missing(tmp_path, envelopes):
    kinds = {f"gpu{i:02d}": "good" for i in range(1, 10)}
    kinds.update(gpu03="memlock", gpu05="memlock", gpu07="memlock", gpu09="rail")
    d = _fleet(tmp_path, envelopes, kinds)
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 1, env
    hosts = {h["host"]: h for h in env["data"]["hosts"]}
    differ = {h for h, r in hosts.items() if r["status"] == "differs"}
    assert differ == {"gpu03", "gpu05", "gpu07", "gpu09"}
    assert set(hosts["gpu03"]["differs"]) == {"warning.doctor-memlock-logins", "warning.doctor-memlock-services"}
    drift = {(e["host"], e["fact"]): e for e in env["data"]["drift"]}
    memlock = drift[("gpu05", "warning.doctor-memlock-services")]
    assert memlock["value"] is True and memlock["reasons"][0]["hosts"] == 6 and "8M" in memlock["detail"]
    names = drift[("gpu09", "hca.names")]
    assert names["reasons"][0]["missing"] == ["mlx5_4:1"] and "extra" not in names["reasons"][0]
    # a warning every host shares is agreed, not a difference
    assert env["data"]["facts"]["warning.gdr-not-detected"]["reference"] is True
    text = rocetune("fleet", "report", str(d)).stdout
    line = next(x for x in text.splitlines() if "gpu09" in x and "compute HCA ports  " in x)
    assert "missing mlx5_4:1" in line


def test_a_host_that_skips_a_check_the_others_run_is_named_with_the_reason(tmp_path, envelopes):
    d = _fleet(tmp_path, envelopes, {f"gpu{i:02d}": "good" for i in range(1, 5)})
    proc = rocetune("--json", "doctor", "--root", str(envelopes["roots"]["good"]),
                    "--skip", "gdr-not-detected=peer memory checked by the job's own test")
    (d / "gpu05.json").write_text(proc.stdout, encoding="utf-8")
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 1
    hosts = {h["host"]: h for h in env["data"]["hosts"]}
    assert hosts["gpu05"]["status"] == "differs" and "doctor.skipped" in hosts["gpu05"]["differs"]
    assert env["data"]["facts"]["doctor.skipped"]["reference"] == []
    drift = {(e["host"], e["fact"]): e for e in env["data"]["drift"]}
    skipped = drift[("gpu05", "doctor.skipped")]
    assert skipped["value"] == ["gdr-not-detected"] and "peer memory checked by the job's own test" in skipped["detail"]


def test_a_failed_or_foreign_envelope_is_that_hosts_failure(tmp_path, envelopes):
    d = _fleet(tmp_path, envelopes, {"gpu01": "good", "gpu02": "good"})
    (d / "gpu03.json").write_text(json.dumps({
        "schema": "rocetune.result/1", "command": "doctor", "status": "error", "exit_code": 3, "data": {},
        "errors": [{"message": "--root /nope: not a directory", "hint": None}], "warnings": []}), encoding="utf-8")
    (d / "gpu04.json").write_text(rocetune("--json", "lint", "--root", str(HOST), "/dev/null").stdout,
                                  encoding="utf-8")
    bad = json.loads(envelopes["good"])
    bad["data"]["fleet_facts"]["mtu"]["value"] = {"nested": "object"}
    (d / "gpu05.json").write_text(json.dumps(bad), encoding="utf-8")
    code, env = rocetune_json("fleet", "report", str(d))
    errors = {h["host"]: h["error"] for h in env["data"]["hosts"] if h["status"] == "failed"}
    assert code == 1 and set(errors) == {"gpu03", "gpu04", "gpu05"}
    assert "exit 3" in errors["gpu03"] and "/nope" in errors["gpu03"]
    assert "'lint'" in errors["gpu04"]
    assert "fleet_facts.mtu" in errors["gpu05"]


def test_gathered_and_doctor_files_compare_alike(tmp_path, envelopes):
    """A gathered result (doctor -v inside the fleet-host form) and a plain doctor file of the
    same node give the same facts: one fleet may hold both."""
    d = _fleet(tmp_path, envelopes, {"gpu01": "good", "gpu02": "good"})
    full = json.loads(rocetune("--json", "doctor", "-v", "--root", str(HOST)).stdout)["data"]
    del full["fleet_facts"]  # an older doctor: the report computes the facts from the Features
    (d / "gpu03.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu03", "probe": None,
                                              "doctor": full, "error": None}), encoding="utf-8")
    code, env = rocetune_json("fleet", "report", str(d))
    assert code == 5 and not env["data"]["drift"], env["data"]["drift"]  # alike; their warnings shared


def test_write_expect_from_the_majority_holds_the_odd_node(tmp_path, envelopes):
    kinds = {f"gpu{i:02d}": "good" for i in range(1, 6)}
    kinds["gpu06"] = "rail"
    d = _fleet(tmp_path, envelopes, kinds)
    (d / "gpu07.json").write_text(json.dumps({"host": "gpu07", "error": "ssh: timed out"}), encoding="utf-8")
    expect = tmp_path / "expect.yml"
    code, env = rocetune_json("fleet", "report", str(d), "--write-expect", str(expect))
    assert code == 1
    written = env["data"]["expect"]
    assert written["voters"] == 6 and written["document"]["rails"]["count"] == 8
    assert "mlx5_4:1" in written["document"]["rails"]["devices"]
    assert written["dissent"]["rails.count"] == {"7": ["gpu06"]} and "gpu07" in written["left_out"]
    text = expect.read_text(encoding="utf-8")
    assert text.startswith("# rocetune") and "mlx5_4:1" in text
    good = rocetune("doctor", "--root", str(envelopes["roots"]["good"]), "--expect", str(expect))
    odd = rocetune("doctor", "--root", str(envelopes["roots"]["rail"]), "--expect", str(expect))
    assert good.returncode in (0, 5) and "expect-" not in good.stdout.split("doctor ")[0]
    assert odd.returncode == 1 and "rail mlx5_4:1 is missing" in odd.stdout


def test_write_expect_without_doctor_facts_is_an_input_error(tmp_path):
    d = tmp_path / "fleet"
    d.mkdir()
    (d / "a.json").write_text(rocetune("--json", "probe", "--root", str(HOST)).stdout, encoding="utf-8")
    proc = rocetune("fleet", "report", str(d), "--write-expect", str(tmp_path / "e.yml"))
    assert proc.returncode == 3 and no_traceback(proc) and "doctor's facts" in proc.stderr
    assert not (tmp_path / "e.yml").exists()
