"""The worked examples of CONTRIBUTING.md, run as written: each block is dropped into a copy of
the package where the table says it goes, and used the way the project uses its own."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-rails-dmabuf"


def _block(heading: str) -> str:
    """The first Python block under `### heading` in CONTRIBUTING.md."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index(f"### {heading}\n"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture()
def package(tmp_path) -> Path:
    shutil.copytree(REPO / "src" / "rocetune", tmp_path / "rocetune",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _python(package: Path, *argv: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{package}{os.pathsep}{REPO}")
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=timeout)


def test_the_env_dialect_example_is_a_dialect_and_claims_no_other_file(package):
    (package / "rocetune/envfiles/dialects/dotenv.py").write_text(_block("An env dialect, worked"))
    env = _python(package, "-m", "rocetune", "--root", str(HOST), "env", "--format", "dotenv")
    assert env.returncode == 0, env.stderr
    check = subprocess.run([sys.executable, "-c", (
        "import json, sys\n"
        "from rocetune.envfiles import dialects\n"
        "from rocetune.envfiles.read import parse_text\n"
        "text = sys.stdin.read()\n"
        "print(json.dumps([dialects.names(written=True), dialects.for_output('/etc/rocetune/nccl.env'),\n"
        "                  dialects.for_output('job.dotenv'),\n"
        "                  {a.key: [a.value, a.rule_id] for a in parse_text(text, 'dotenv').assignments}]))\n")],
        input=env.stdout, capture_output=True, text=True, timeout=60, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=f"{package}{os.pathsep}{REPO}"))
    assert check.returncode == 0, check.stderr
    names, nccl_env, dotenv, read = json.loads(check.stdout)
    assert "dotenv" in names and nccl_env == "sh" and dotenv == "dotenv"
    assert read["NCCL_IB_HCA"][0].startswith("=mlx5_") and read["NCCL_IB_HCA"][1] == "nccl-ib-hca"


@pytest.mark.slow  # the dialect suite, on the copy with the example in it
def test_the_dialect_suite_passes_with_the_example_dropped_in(package):
    """All but the two tests that list the registry's dialects by name, which a new dialect
    extends by design."""
    (package / "rocetune/envfiles/dialects/dotenv.py").write_text(_block("An env dialect, worked"))
    proc = _python(package, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/render/test_dialects.py",
                   "-k", "not documented_order and not new_dialect_is_one_module")
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_the_rule_example_decides_on_a_rail_host(package):
    (package / "rocetune/rules/nccl_example.py").write_text(_block("A rule, worked"))
    proc = _python(package, "-c", (
        "import json\n"
        "from rocetune.rules import nccl_example\n"
        "from rocetune.rules.base import RuleContext\n"
        "from tests.unit.rules.featurekit import rail_host\n"
        "for n in (2, 0):\n"
        "    f = rail_host(n).build()\n"
        "    ctx = RuleContext(f)\n"
        "    ctx.begin(nccl_example.ID)\n"
        "    print(json.dumps([d.to_dict() for d in nccl_example.rule(f, ctx)]))\n"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    two, none = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(d["key"], d["value"], d["rule_id"]) for d in two] == [("NCCL_EXAMPLE", "1", "nccl-example")]
    assert len(two[0]["evidence"]["ports"]) == 2 and none == []


def test_the_probe_source_example_is_a_source_run_after_rdma(package):
    (package / "rocetune/probe/sources/netdev_speed.py").write_text(_block("A probe source, worked"))
    probe = _python(package, "-m", "rocetune", "--json", "probe", "--root", str(HOST))
    assert probe.returncode == 0, probe.stderr
    features = json.loads(probe.stdout)["data"]["features"]
    speeds = {n: (HOST / "sys/class/net" / n / "speed").read_text().strip() for n in features["netdev_speed"]["mbps"]}
    assert features["netdev_speed"]["mbps"]["enp24s0np0"] == 400000
    assert {n: str(v) for n, v in features["netdev_speed"]["mbps"].items()} == speeds
    assert len(speeds) == 11  # 12 RDMA ports, two of them on bond0
    assert features["sources"]["netdev_speed"] == {"ok": True, "reason": None, "warnings": []}
    listed = _python(package, "-c", "import json\nfrom rocetune.probe import sources\n"
                                      "print(json.dumps([s.name for s, _ in sources.registry()]))")
    assert listed.returncode == 0, listed.stderr
    order = json.loads(listed.stdout)
    assert order.index("rdma") < order.index("netdev_speed")
    # on a root of recorded outputs alone it is not run, and says why
    pasted = package / "pasted"
    shutil.copytree(HOST / "commands", pasted / "commands")
    probe = _python(package, "-m", "rocetune", "--json", "probe", "--root", str(pasted))
    assert probe.returncode == 0, probe.stderr
    features = json.loads(probe.stdout)["data"]["features"]
    assert features["sources"]["netdev_speed"]["reason"] == "no /sys under the root (recorded outputs only)"
