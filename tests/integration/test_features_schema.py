"""One schema file for the Features document: the node agent's own checker and the reference
`jsonschema` library agree on it over every fixture host and over broken documents, docs/features.md
is what the schema says, and the packed agent carries the file."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from functools import cache, lru_cache
from pathlib import Path

import pytest

from rocetune.model.schema import FORMATS, check, features_schema
from rocetune.probe.collect import collect_features

REPO = Path(__file__).resolve().parents[2]
HOSTS = sorted(p.name for p in (REPO / "tests" / "fixtures" / "hosts").iterdir() if p.is_dir())


@cache
def _features(host: str) -> str:
    return json.dumps(collect_features(str(REPO / "tests" / "fixtures" / "hosts" / host)))


def features(host: str) -> dict:
    return json.loads(_features(host))


@lru_cache(maxsize=1)
def reference():
    """jsonschema's draft 2020-12 validator, told the two things the schema leaves to its reader:
    what "ip-address" means, and that 1.0 is not an integer (the checker's documented choice)."""
    jsonschema = pytest.importorskip("jsonschema")
    base = jsonschema.Draft202012Validator
    integer = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool))
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("ip-address")(lambda v: not isinstance(v, str) or FORMATS["ip-address"](v))
    validator = jsonschema.validators.extend(base, type_checker=integer)
    return validator(features_schema(), format_checker=formats)


def reference_paths(doc: dict) -> set:
    """Every field jsonschema finds wrong, written as the checker writes a path."""
    paths = set()
    for error in reference().iter_errors(doc):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        if error.validator == "required":
            paths |= {f"{path}.{name}" for name in error.validator_value if name not in error.instance}
        else:
            paths.add(path)
    return {p.lstrip(".") or "the document" for p in paths}


def agree(doc: dict) -> None:
    problem = check(doc)
    wrong = reference_paths(doc)
    if problem is None:
        assert not wrong, f"jsonschema finds {sorted(wrong)}; the checker nothing"
    else:
        assert problem.split(": ", 1)[0] in wrong, f"checker: {problem}; jsonschema: {sorted(wrong)}"


@pytest.mark.parametrize("host", HOSTS)
def test_every_fixture_hosts_features_fit_for_both_validators(host):
    doc = features(host)
    assert check(doc) is None
    assert reference_paths(doc) == set()


BROKEN = [  # (path, value): one per keyword the checker implements, and the cases around null and bool
    (("schema_version",), "1"),
    (("host",), None),
    (("host", "hostname"), 7),
    (("host", "numa_nodes"), {}),
    (("host", "numa_nodes", 0, "id"), False),
    (("sources", "rdma", "ok"), "yes"),
    (("sources", "rdma", "warnings"), [1]),
    (("pci", "devices", 0, "switches"), "0000:00:01.0"),
    (("pci", "devices", 0, "link"), None),
    (("pci", "devices", 0, "link"), []),
    (("net", "interfaces", 0, "addresses"), [{"family": "inet", "address": "10.1.2.3.4", "prefixlen": 8}]),
    (("net", "interfaces", 0, "addresses"), [{"family": "inet6", "address": "fe80::1", "prefixlen": -1}]),
    (("net", "interfaces", 0, "addresses"), [{"family": "ipx", "address": "10.0.0.1", "prefixlen": 8}]),
    (("net", "interfaces", 0, "addresses"), [{"family": "inet", "address": "10.0.0.1"}]),
    (("net", "routes"), [{"interface": "eth0", "dest": "10.0.0.0", "prefixlen": 8, "gateway": "x"}]),
    (("rdma", "devices", 0, "ports", 0, "port"), "1"),
    (("rdma", "devices", 0, "ports", 0, "port"), 1.0),
    (("rdma", "devices", 0, "ports", 0, "rate_gbps"), True),
    (("rdma", "devices", 0, "ports", 0, "rate_gbps"), 12.5),
    (("rdma", "devices", 0, "ports", 0, "gids"), [{"index": 0, "gid": "fe80::", "type": None, "ndev": None,
                                                   "ipv4": "1.2.3", "ipv6": None}]),
    (("gpus", 0, "nvlink"), {"1": "18"}),
    (("kernel", "nccl"), None),
    (("kernel", "nccl", "libraries"), [{"path": "/x", "version": None, "how": None, "package": None,
                                        "environment": None, "via": [None]}]),
    (("kernel", "sysctl", "net.ipv4.tcp_mtu_probing"), None),
    (("kernel", "sysctl", "net.ipv4.tcp_mtu_probing"), 1),
    (("findings",), [{"id": "x", "severity": "fatal", "subject": "", "message": ""}]),
    (("findings",), [{"id": "x", "severity": "info", "subject": "", "message": "", "fix": None}]),
    (("declared", "topology_files"), [{"path": "/t.xml", "vendor": None, "exists": True, "declared_by": None,
                                       "nodes": [{"tag": "system", "attrs": {"version": 1}, "parent": None}]}]),
    (("qos", "interfaces"), {"eth0": {"tool": "dcb", "trust": None, "dscp_prio": {}, "pfc_enabled": ["3"]}}),
    (("unknown_section",), {"anything": 1}),
]


def _set(doc, path, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DELETE = object()


@pytest.mark.parametrize("path, value", BROKEN, ids=[".".join(map(str, p)) for p, _ in BROKEN])
def test_both_validators_agree_on_broken_documents(path, value):
    doc = features("dgx-h100-roce")
    _set(doc, path, value)
    agree(doc)


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, path + (i,))
    yield path


@pytest.mark.parametrize("host", ["pcie-4gpu-2nic", "container-partial-gid", "mlx5-subfunction"])
def test_both_validators_agree_on_any_field_replaced_or_removed(host):
    base = features(host)
    paths = [p for p in _leaves(base) if p]
    values = [None, True, 0, -1, 129, 1.5, "", "1", "10.0.0.1", [], [1], {}, {"a": None}, _DELETE]
    rnd = random.Random(host)
    for _ in range(150):
        doc = copy.deepcopy(base)
        _set(doc, rnd.choice(paths), rnd.choice(values))
        agree(doc)


def test_docs_features_md_is_generated_from_the_schema():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "features_doc.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout


def test_the_packed_agent_checks_a_features_file_with_the_schema_it_carries(tmp_path):
    from rocetune.agentpack import build

    agent = tmp_path / "agent.pyz"
    agent.write_bytes(build())
    good = features("pcie-4gpu-2nic")
    bad = copy.deepcopy(good)
    bad["rdma"]["devices"][0]["ports"][0]["port"] = "1"
    runs = {}
    for name, doc in (("good", good), ("bad", bad)):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
        runs[name] = subprocess.run(["/usr/bin/python3", "-S", str(agent), "env", "--features",
                                     str(tmp_path / f"{name}.json")], capture_output=True,
                                    text=True, timeout=120,
                                    env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    assert runs["good"].returncode == 0, runs["good"].stderr
    assert "export NCCL_IB_HCA=" in runs["good"].stdout
    assert runs["bad"].returncode != 0
    assert 'rdma.devices[0].ports[0].port: expected an integer, got "1"' in runs["bad"].stderr
