"""A fleet test is one module found by the registry (rocetune.fleet.tests): dropping a new module
into the package is all it takes for `--tests`, its options, `validate`, the text and HTML reports
to carry it. Shown with a module written here, at test time, into a directory added to the
package's path: a node step reads each host's kernel release, a fleet step names the odd host."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import pytest

from rocetune.cli.main import build_parser
from rocetune.fleet import ssh
from rocetune.fleet import tests as registry
from rocetune.fleet.targets import Target
from rocetune.fleet.validate import Options, validate
from rocetune.render.validate_html import validate_html
from rocetune.render.validate_text import validate_text

from .clirun import rocetune

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

MODULE = textwrap.dedent('''
    """`kernel`: every host runs the same kernel release."""
    from collections import Counter

    from rocetune.fleet.tests import FleetTest


    def node(ctx):
        done = ctx.host.remote.run("uname -r", "uname", 10)
        release = done.out.decode().strip()
        if done.code != 0 or not release:
            return {"status": "error", "error": "uname -r failed"}
        return {"status": "pass", "release": release}


    def fleet(ctx):
        seen = {n: h.results["kernel"].get("release") for n, h in ctx.hosts.items()}
        common, _ = Counter(seen.values()).most_common(1)[0]
        odd = sorted(n for n, r in seen.items() if r != common)
        if odd:
            return {"status": "fail", "why": f"{', '.join(odd)} not on {common}", "suspects": odd}
        return {"status": "pass", "release": common}


    def add_arguments(group):
        group.add_argument("--kernel-expect", metavar="RELEASE")


    TEST = FleetTest(name="kernel", summary="every host runs the same kernel release", node=node,
                     fleet=fleet, add_arguments=add_arguments, settings=lambda args: args.kernel_expect,
                     node_row=lambda doc: [doc.get("release", ""), ""],
                     fleet_lines=lambda doc: [f"release {doc.get('release', '-')}"])
''')


class Host:
    def __init__(self, target: Target, probe: bytes, release: str):
        self.target, self.name, self.probe, self.release = target, target.name, probe, release

    def run(self, command: str, step: str, timeout: float, stdin=None) -> ssh.Completed:
        if "--json probe" in command:
            return ssh.Completed(0, self.probe, b"")
        if command == "uname -r":
            return ssh.Completed(0, self.release.encode() + b"\n", b"")
        return ssh.Completed(127, b"", b"not found")

    def close(self) -> None:
        pass


@pytest.fixture
def kernel_test(tmp_path):
    (tmp_path / "kernel.py").write_text(MODULE, encoding="utf-8")
    registry.__path__.append(str(tmp_path))
    registry.discover(force=True)
    try:
        yield
    finally:
        registry.__path__.remove(str(tmp_path))
        registry._REGISTRY.pop("kernel", None)
        sys.modules.pop(f"{registry.__name__}.kernel", None)


def test_a_new_module_is_a_new_fleet_test(kernel_test):
    assert "kernel" in registry.names()
    args = build_parser("fleet").parse_args(["fleet", "validate", "a", "b", "--tests", "kernel",
                                             "--kernel-expect", "6.1.0"])
    assert args.kernel_expect == "6.1.0" and isinstance(args, argparse.Namespace)
    probe = rocetune("--json", "probe", "--root", str(FIXTURES / "hosts" / "softroce-3nic")).stdout.encode()
    releases = {"n1": "6.1.0-28-amd64", "n2": "6.1.0-28-amd64", "n3": "6.1.0-13-amd64"}
    doc = validate([Target(h, h) for h in releases], Options(tests=("kernel",)),
                   opener=lambda t: Host(t, probe, releases[t.name]))
    assert doc["tests"] == ["kernel"]
    assert doc["hosts"]["n3"]["kernel"] == {"status": "pass", "release": "6.1.0-13-amd64"}
    assert doc["fleet"]["kernel"]["status"] == "fail" and doc["summary"]["failed_fleet_tests"] == ["kernel"]
    assert doc["summary"]["suspects"] == ["n3"] and not doc["summary"]["passed"] and doc["pairs"] == []
    text = validate_text(doc)
    assert "KERNEL ON EACH NODE (every host runs the same kernel release)" in text
    assert "KERNEL ACROSS THE FLEET: FAIL" in text and "n3 not on 6.1.0-28-amd64" in text
    assert "kernel across the fleet: fail" in validate_html(doc)


def test_the_cli_names_the_registered_tests_when_one_is_unknown():
    proc = rocetune("fleet", "validate", "a", "b", "--tests", "rdma,bogus")
    assert proc.returncode == 2 and "give any of rdma, " in proc.stderr and "tcp" in proc.stderr and "nccl" in proc.stderr
