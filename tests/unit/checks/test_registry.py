"""One registry of check ids: every finding produced anywhere is a declared check, with the
severity, fix and source its declaration gives."""

import ast
import os

import pytest

from rocetune import checks
from rocetune.checks.host import host_check_ids
from rocetune.checks.registry import KINDS
from rocetune.model.finding import SEVERITIES
from rocetune.rules import RULES

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "rocetune")
_MAKERS = {"finding", "_finding", "add"}  # ctx.finding("id", ...), finding("id", ...), lint's add("id", ...)
_ID_KEYWORDS = {"check_id", "quoted", "spaced"}  # a selection doubt's check; a dialect's verbatim-value ids


def _text(node):
    """A string constant shaped like a check id (lower-case words joined by '-'), else None."""
    ok = isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value
    return node.value if ok and all(c.islower() or c.isdigit() or c == "-" for c in node.value) else None


def _ids_in(tree):
    """The check ids a module names where it makes a finding, read from its syntax tree."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _MAKERS and node.args and _text(node.args[0]):
                yield _text(node.args[0])
            # a parser's problems.append((line, "id", message))
            owner = getattr(func, "value", None)  # problems.append(...) or out.problems.append(...)
            if (name == "append" and "problems" in (getattr(owner, "id", None), getattr(owner, "attr", None))
                    and node.args and isinstance(node.args[0], ast.Tuple) and len(node.args[0].elts) > 1
                    and _text(node.args[0].elts[1])):
                yield _text(node.args[0].elts[1])
            for kw in node.keywords:
                if kw.arg in _ID_KEYWORDS and _text(kw.value):
                    yield _text(kw.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):  # check_id: str = "id" (a field's default)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", None) == "check_id" for t in targets) and node.value is not None \
                    and _text(node.value):
                yield _text(node.value)
        elif isinstance(node, ast.FunctionDef):  # def doubt(..., check_id: str = "id")
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + node.args.defaults \
                + node.args.kw_defaults
            for arg, default in zip(args, defaults):
                if arg.arg == "check_id" and default is not None and _text(default):
                    yield _text(default)


def produced_ids():
    found = {}
    for base, _dirs, files in os.walk(SRC):
        if os.path.basename(base) == "checks" and os.path.basename(os.path.dirname(base)) == "rocetune":
            continue  # the declarations themselves
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read(), path)
                for fid in _ids_in(tree):
                    found.setdefault(fid, os.path.relpath(path, SRC))
    return found


def test_every_id_the_code_produces_is_registered_and_every_registered_id_is_produced():
    produced = produced_ids()
    registered = {c.id for c in checks.all_checks()}
    assert {"declared-contradicted", "conf-ignored-line", "docker-quoted-value", "misspelled-name"} <= set(produced)
    unregistered = {fid: where for fid, where in produced.items() if fid not in registered}
    assert not unregistered, f"produced but not registered: {unregistered}"
    # Data-driven producers: the NIC counter judge makes one id per counter check it declares,
    # the NCCL log comparison one per difference kind (each has its own test of every id).
    from rocetune.checks.nic_counters import REGISTRY as NIC
    from rocetune.nccl.log_compare import DIFFERENCES

    produced.update({fid: "doctor/nic_health.py" for fid in NIC})
    produced.update({fid: "nccl/log_compare.py" for fid in DIFFERENCES})
    # and the expectations' evaluate() one per field group (tests/unit/model/test_expect.py)
    from rocetune.model import expect

    produced.update({fid: "model/expect.py" for fid in
                     [*expect.CHECK_OF_SECTION.values(), expect.CHECK_RAILS, expect.CHECK_RAIL_LINK]})
    unproduced = {c.id for c in checks.all_checks() if c.kind != "host"} - set(produced)
    assert not unproduced, f"registered but produced nowhere: {sorted(unproduced)}"


def test_every_host_check_has_one_function_and_every_function_a_declaration():
    assert host_check_ids() == sorted(c.id for c in checks.all_checks() if c.kind == "host")


def test_declarations_are_complete():
    rule_ids = {r.ID for r in RULES}
    for c in checks.all_checks():
        assert c.kind in KINDS and all(s in SEVERITIES for s in c.severities), c.id
        for field in ("title", "checks", "reads", "why", "fix", "source"):
            assert len(getattr(c, field).strip()) > 10, f"{c.id}: {field}"
        assert bool(c.also) == bool(c.severity_note), f"{c.id}: say when the other severities apply"
        assert not c.also or c.severity_note.split()[0] in c.also, f"{c.id}: the note starts with the severity"
        assert (c.kind == "rule") == bool(c.by), c.id
        assert set(c.by) <= rule_ids, f"{c.id}: by {c.by}"


def test_a_finding_of_an_unregistered_id_is_refused():
    with pytest.raises(checks.UnknownCheck, match="no-such-check"):
        checks.finding("no-such-check", "host", "message")


def test_a_severity_the_check_does_not_take_is_refused():
    with pytest.raises(checks.UnknownCheck, match="does not take severity 'error'"):
        checks.finding("memlock-limited", "host", "message", severity="error")
    assert checks.finding("prefix-match", "f:1", "m", severity="warning").severity == "warning"


def test_a_finding_carries_the_checks_metadata_and_the_producers_details():
    f = checks.finding("roce-mtu-low", "mlx5_0:1", "low", evidence={"file": "/sys/class/net/eth2/mtu"})
    c = checks.get("roce-mtu-low")
    assert (f.severity, f.fix, f.source, f.kind) == (c.severity, c.fix, c.source, "host")
    assert f.to_dict()["evidence"] == {"file": "/sys/class/net/eth2/mtu"}
    own = checks.finding("misspelled-name", "a.sh:1", "m", fix="rename it X", file="a.sh", line=1, key="K")
    assert own.fix == "rename it X" and own.to_dict()["line"] == 1


def test_a_check_is_declared_once():
    c = checks.get("memlock-limited")
    with pytest.raises(ValueError, match="declared twice"):
        checks.registry.declare(c)
