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
from typing import List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-rails-dmabuf"


def _blocks(heading: str) -> List[str]:
    """The Python blocks under `### heading` in CONTRIBUTING.md, up to the next heading."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index(f"### {heading}\n") + 4:]
    section = section[:section.find("\n### ")] if "\n### " in section else section
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _block(heading: str) -> str:
    return _blocks(heading)[0]


def _declaration_and_code(heading: str, declaring: str, coding: str) -> Tuple[str, str]:
    """The section's two blocks, the first for `declaring`, the second for `coding` (each names its
    file in its first line)."""
    declaration, code = _blocks(heading)
    assert declaration.startswith(f"# src/rocetune/{declaring}\n"), declaration[:80]
    assert code.startswith(f"# src/rocetune/{coding}"), code[:80]
    return declaration, code


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + text, encoding="utf-8")


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


def _registered(package: Path, check_id: str) -> dict:
    """The check as a fresh process finds it in the registry, nothing imported beforehand."""
    proc = _python(package, "-c", (
        "import json, sys\n"
        "from rocetune import checks\n"
        "from rocetune.checks.registry import declared_in\n"
        f"c = {{c.id: c for c in checks.all_checks()}}[{check_id!r}]\n"
        "print(json.dumps(dict({f: getattr(c, f) for f in c._fields}, module=declared_in(c.id))))\n"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_rule_finding_example_is_registered_and_left_on_a_host_with_odd_rails(package):
    rules = package / "rocetune/rules"
    (rules / "nccl_example_rails.py").write_text(_block("A rule finding, worked"))
    init = (rules / "__init__.py").read_text(encoding="utf-8")
    assert "    nccl_plugins,\n" in init and "    nccl_topo_file,\n    local_rank,\n))" in init
    (rules / "__init__.py").write_text(init.replace("    nccl_plugins,\n", "    nccl_example_rails,\n    nccl_plugins,\n", 1)
                                       .replace("    local_rank,\n))", "    local_rank,\n    nccl_example_rails,\n))"))
    c = _registered(package, "example-odd-rails")
    assert (c["kind"], c["severity"], c["by"], c["module"]) == (
        "rule", "warning", ["nccl-example-rails"], "rocetune.rules.nccl_example_rails")
    proc = _python(package, "-c", (
        "import json\n"
        "from rocetune.rules import nccl_example_rails\n"
        "from rocetune.rules.base import RuleContext\n"
        "from tests.unit.rules.featurekit import rail_host\n"
        "for third in (True, False):\n"
        "    h = rail_host(2)\n"
        "    if third:\n"
        "        h.rdma('mlx5_2', netdev='ens2np0', ipv4='192.168.2.5/24', paths={1: 'PIX'}, numa=1)\n"
        "    f = h.build()\n"
        "    ctx = RuleContext(f)\n"
        "    ctx.begin(nccl_example_rails.ID)\n"
        "    assert nccl_example_rails.rule(f, ctx) == []\n"
        "    print(json.dumps([x.to_dict() for x in ctx.findings]))\n"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    three, two = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(f["id"], f["severity"], f["rule"], f["fix"]) for f in three] == [
        ("example-odd-rails", "warning", "nccl-example-rails", c["fix"])]
    assert three[0]["evidence"]["ports"] == ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1"] and two == []


def test_the_doctor_check_example_runs_in_doctor_and_finds_the_small_mtu(package, tmp_path):
    declaration, code = _declaration_and_code("A doctor check, worked", "doctor/declarations.py",
                                              "doctor/checks.py")
    _append(package / "rocetune/doctor/declarations.py", declaration)
    _append(package / "rocetune/doctor/checks.py", code)
    c = _registered(package, "doctor-example-roce-mtu")
    assert (c["kind"], c["severity"], c["module"]) == ("doctor", "warning", "rocetune.doctor.declarations")
    host = tmp_path / "host"
    shutil.copytree(REPO / "tests/fixtures/hosts/dgx-h100-roce", host, symlinks=True)
    found = []
    for mtu in (None, "1500\n"):
        if mtu:
            (host / "sys/class/net/enp64s0np0/mtu").write_text(mtu)  # one rail left at Ethernet's default
        proc = _python(package, "-m", "rocetune", "--root", str(host), "--json", "doctor", timeout=120)
        assert proc.returncode in (0, 1, 5), proc.stderr
        found.append([(f["subject"], f["severity"], f["message"], f["source"])
                      for f in json.loads(proc.stdout)["data"]["findings"] if f["id"] == "doctor-example-roce-mtu"])
    assert found == [[], [("enp64s0np0", "warning", "enp64s0np0 has MTU 1500: RoCE over it carries 1024-byte packets",
                           c["source"])]]


def test_the_lint_check_example_lints_a_file_with_the_setting(package, tmp_path):
    declaration, code = _declaration_and_code("A lint check, worked", "lint/declarations.py", "lint/setting.py")
    _append(package / "rocetune/lint/declarations.py", declaration)
    setting = package / "rocetune/lint/setting.py"
    call = re.search(r"called from check_value: (.*)\n", code).group(1)
    head = "def check_value(cat: Catalog, a: Assignment, add) -> None:\n"
    text = setting.read_text(encoding="utf-8")
    assert head in text
    setting.write_text(text.replace(head, head + f"    {call}\n") + "\n\n" + code, encoding="utf-8")
    c = _registered(package, "example-debug-info")
    assert (c["kind"], c["severity"], c["module"]) == ("lint", "info", "rocetune.lint.declarations")
    out = {}
    for value in ("INFO", "WARN"):
        job = tmp_path / f"{value}.env"
        job.write_text(f"export NCCL_IB_HCA==mlx5_0:1\nexport NCCL_DEBUG={value}\n")
        proc = _python(package, "-m", "rocetune", "--json", "lint", str(job), timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        out[value] = [(f["id"], f["severity"], f["line"], f["fix"]) for f in json.loads(proc.stdout)["data"]["findings"]]
    assert out == {"INFO": [("example-debug-info", "info", 2, "set it for the job being debugged only")], "WARN": []}


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
