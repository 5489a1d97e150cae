"""One registry of check ids: every finding produced anywhere is a declared check, with the
severity, fix and source its declaration gives."""

import importlib
import pkgutil

import pytest

from rocetune import checks
from rocetune.checks.host import host_check_ids
from rocetune.checks.registry import KINDS
from rocetune.model.finding import SEVERITIES
from rocetune.rules import RULES

# Where findings are made: each of these packages' modules is imported, which binds every function
# that makes findings (checks.emits); the bindings are then read from checks.bound().
_PRODUCING = ("checks", "rules", "lint", "doctor", "nccl", "app", "planner")


def bindings():
    for name in _PRODUCING:
        module = importlib.import_module(f"rocetune.{name}")
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), f"rocetune.{name}."):
            importlib.import_module(info.name)
    return checks.bound()


def produced_ids():
    found = {}
    for where, ids in sorted(bindings().items()):
        for fid in ids:
            found.setdefault(fid, where)
    return found


def test_every_id_a_function_binds_is_declared_and_every_declared_id_is_bound():
    produced = produced_ids()
    registered = {c.id for c in checks.all_checks()}
    assert {"declared-contradicted", "conf-ignored-line", "docker-quoted-value", "misspelled-name",
            "doctor-port-down", "roce-mtu-low"} <= set(produced)
    assert set(produced) <= registered  # emits() refuses an undeclared id at import already
    unproduced = registered - set(produced)
    assert not unproduced, f"declared but bound nowhere: {sorted(unproduced)}"


def test_a_rule_check_is_bound_in_a_rule_that_its_by_names():
    modules = {r.ID: getattr(r, "module", r).__name__ for r in RULES}
    bound = bindings()
    for c in checks.all_checks():
        if c.kind != "rule":
            continue
        where = {name for name, ids in bound.items() if c.id in ids}
        in_rules = {name for name in where if name.startswith("rocetune.rules.")}
        if in_rules and all(not n.startswith("rocetune.rules.base.") for n in in_rules):
            assert any(n.startswith(modules[r] + ".") for r in c.by for n in in_rules), (c.id, c.by, in_rules)


def test_a_function_making_an_id_it_does_not_bind_is_refused():
    from rocetune.envfiles.parsed import Assignment
    from rocetune.lint.setting import check_value
    from rocetune.nccl.catalog import load_catalog

    def add(fid, *args):
        checks.finding("roce-mtu-low", "x", "m")  # not one of check_value's ids

    with pytest.raises(checks.UnboundCheck, match="check_value makes a 'roce-mtu-low' finding"):
        check_value(load_catalog(), Assignment("NCCL_SOCKET_IFNAME", "", "", 1, "shell"), add)


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
        checks.registry.declare(**{f: getattr(c, f) for f in c._fields})
