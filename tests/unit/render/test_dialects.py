"""The registry of env dialects: every dialect round-trips a real host's plan, one name map
serves writing and reading, a new dialect is one module, and no other module names a dialect."""

from __future__ import annotations

import argparse
import ast
import os
import sys
import textwrap
import tokenize

import pytest

from rocetune.cli import options
from rocetune.cli.verbs import lint as lint_verb
from rocetune.envfiles import dialects
from rocetune.envfiles.detect import detect
from rocetune.envfiles.read import parse_text
from rocetune.envfiles.write import render
from rocetune.lint.checks import lint_text
from rocetune.model.plan import Overrides
from rocetune.planner import build_plan
from rocetune.probe.collect import collect_features
from tests.fixtures.roots import root_of

REPO = os.path.join(os.path.dirname(__file__), "..", "..", "..")
WRITTEN = dialects.names(written=True)


@pytest.fixture(scope="module")
def host():
    features = collect_features(root_of("dgx-h100-roce"))
    # An override with a quote and a space: every dialect that takes it must give it back.
    plan = build_plan(features, Overrides(set={"NCCL_DEBUG_SUBSYS": ("INIT,NET", "test"),
                                               "UCX_LOG_LEVEL": ("warn", "test")}))
    assert len(plan.decisions) > 5 and any(not d.key.startswith("NCCL_") for d in plan.decisions)
    return features, plan


def test_the_registry_lists_the_dialects_in_their_documented_order():
    assert WRITTEN == ("sh", "nccl-conf", "systemd", "docker", "deepspeed", "k8s", "json")
    assert dialects.names() == WRITTEN + ("dockerfile", "markdown")
    assert [d.name for d in dialects.all_dialects() if d.fallback] == ["sh"]
    for order in ("listed", "precedence"):
        assert len({getattr(d, order) for d in dialects.all_dialects()}) == len(dialects.all_dialects()), order
    for d in dialects.all_dialects():
        assert all(p == p.lower() for p in d.file_patterns), d.name
        assert not (d.keeps_cr or d.first_wins) or d.consumer, f"{d.name}: lint names the consumer"
        assert bool(d.name_beats_content) == bool(d.name_beats_content_why), d.name


@pytest.mark.parametrize("fmt", WRITTEN)
def test_every_written_dialect_reads_back_what_it_wrote(host, fmt):
    features, plan = host
    text = render(plan, fmt, features)
    dialect = dialects.get(fmt)
    wanted = {d.key: d.value for d in plan.decisions
              if fmt != "nccl-conf" or d.key.startswith("NCCL_")}
    for how in ("forced", "auto"):
        parsed = parse_text(text, fmt) if how == "forced" else parse_text(text, "auto", _name_for(dialect))
        assert parsed.fmt == fmt, how
        assert not parsed.problems, (how, parsed.problems)
        assert {a.key: a.value for a in parsed.assignments} == wanted, how
    if "# rule: " in text:
        rules = {a.key: a.rule_id for a in parsed.assignments}
        for d in plan.decisions:
            if d.key in wanted:
                assert rules[d.key] == ("override" if d.rule_id == "override" else d.rule_id), d.key


def _name_for(dialect) -> str:
    """A file name the dialect claims (its pattern made concrete), else one no dialect claims."""
    if not dialect.file_patterns:
        return "env"
    return dialect.file_patterns[0].replace("*", "x")


@pytest.mark.parametrize("name, written, read", [
    ("/etc/nccl.conf", "nccl-conf", "nccl-conf"),
    ("/home/ada/.nccl.conf", "nccl-conf", "nccl-conf"),
    ("/shared/NCCL-tuning.conf", "nccl-conf", "nccl-conf"),
    # A systemd drop-in, or any other program's .conf: not NCCL's file, whichever way it is used.
    ("/etc/systemd/system/train.service.d/10-env.conf", "sh", None),
    ("/etc/rocetune/env.conf", "sh", None),
    (".deepspeed_env", "deepspeed", "deepspeed"),
    ("rocetune-env.YAML", "k8s", "k8s"),
    ("env.json", "json", "json"),
    ("job.sbatch", "sh", "sh"),
    ("README.md", "sh", "markdown"),        # read only: written as the fallback
    ("Dockerfile.gpu", "sh", "dockerfile"),
    ("Dockerfile.json", "json", "json"),
    ("/etc/rocetune/nccl.env", "sh", None),
])
def test_one_name_map_for_writing_and_reading(name, written, read):
    assert dialects.for_output(name) == written
    claimed = dialects.for_file_name(name)
    assert (claimed.name if claimed else None) == read
    assert read is None or not dialects.get(read).writes or read == written


def test_a_systemd_drop_in_is_not_read_as_nccl_conf_but_nccl_conf_still_is():
    dropin = "[Service]\nEnvironment=NCCL_IB_HCA=mlx5_0\n"
    fmt, why, by_name = detect(dropin, "/etc/systemd/system/train.service.d/10-env.conf")
    assert (fmt, why, by_name) == ("sh", "default", None)
    _, findings = lint_text(dropin, "/etc/systemd/system/train.service.d/10-env.conf")
    assert not [f for f in findings if f.id.startswith("conf-")]
    plain = "NCCL_IB_HCA='=mlx5_0'\n"
    assert detect(plain, "/etc/nccl.conf") == ("nccl-conf", "file name", "nccl-conf")
    _, findings = lint_text(plain, "/etc/nccl.conf")
    assert "conf-quoted-value" in [f.id for f in findings]


TOY = '''
"""toy: KEY:=value lines."""

from rocetune.envfiles.parsed import Assignment
from rocetune.envfiles.dialects.base import Dialect


def render(plan, features):
    return "".join(f"{d.key}:={d.value}\\n" for d in plan.decisions)


def read(text, out):
    for n, line in enumerate(text.splitlines(), 1):
        key, _, value = line.partition(":=")
        out.assignments.append(Assignment(key, value, value, n, "toy"))


DIALECT = Dialect("toy", listed=65, precedence=85, read=read, render=render, file_patterns=("*.toy",),
                  detect=lambda text: "':=' lines" if ":=" in text else None)
'''


def test_a_new_dialect_is_one_module(tmp_path, monkeypatch, host):
    (tmp_path / "toy.py").write_text(textwrap.dedent(TOY))
    monkeypatch.setattr(dialects, "__path__", list(dialects.__path__) + [str(tmp_path)])
    monkeypatch.setattr(dialects, "_REGISTRY", {})
    monkeypatch.delitem(sys.modules, "rocetune.envfiles.dialects.toy", raising=False)
    assert dialects.names(written=True) == WRITTEN[:-1] + ("toy", "json")
    parser = argparse.ArgumentParser()
    options.add_env_output(parser)
    assert parser.parse_args(["--format", "toy"]).format == "toy"
    lint_parser = argparse.ArgumentParser()
    lint_verb.register(lint_parser)
    assert lint_parser.parse_args(["--format", "toy", "f"]).format == "toy"
    assert dialects.for_output("/etc/x.toy") == "toy"
    features, plan = host
    text = render(plan, "toy", features)
    parsed = parse_text(text, "auto", "anything")
    assert (parsed.fmt, parsed.detected) == ("toy", "':=' lines")
    assert {a.key: a.value for a in parsed.assignments} == plan.env
    _, findings = lint_text(text, "x.toy")
    assert not [f for f in findings if f.id == "format-differs-from-name"]
    monkeypatch.delitem(sys.modules, "rocetune.envfiles.dialects.toy")


# Literals equal to a dialect's name outside envfiles/dialects that mean something else, or that
# name a dialect through the CLI's public interface.
ALLOWED = {
    ("src/rocetune/analysis/hostview.py", "docker"): "docker0, a virtual interface's name prefix",
    ("src/rocetune/cli/options.py", "json"): "--json, the result format, and -o json's refusal",
    ("src/rocetune/probe/sources/declared.py", "nccl-conf"): "a declared file's kind in Features",
    ("src/rocetune/nccl/ras.py", "json"): "NCCL RAS's own output format (`ncclras -f json`)",
    ("src/rocetune/nccl/ras_client.py", "json"): "NCCL RAS's own output format (`SET FORMAT json`)",
    ("src/rocetune/fleet/srun_gather.py", "sh"): "the shell srun starts on each node (`sh -c SCRIPT`)",
    ("plugins/module_utils/rocetune_env_run.py", "sh"): "the module runs the CLI with --format sh",
    ("plugins/module_utils/rocetune_env_run.py", "nccl-conf"): "... and --format nccl-conf",
}


def _dialect_literals():
    names = set(dialects.names())
    found = set()
    for top in ("src/rocetune", "plugins"):
        for base, _dirs, files in os.walk(os.path.join(REPO, top)):
            rel_base = os.path.relpath(base, REPO)
            if rel_base.replace(os.sep, "/").startswith("src/rocetune/envfiles/dialects"):
                continue
            for name in files:
                if not name.endswith(".py"):
                    continue
                with open(os.path.join(base, name), "rb") as fh:
                    for tok in tokenize.tokenize(fh.readline):
                        if tok.type != tokenize.STRING or tok.string.lstrip("rbuRBU")[:1] not in "'\"":
                            continue
                        value = ast.literal_eval(tok.string)
                        if value in names:
                            found.add((os.path.join(rel_base, name).replace(os.sep, "/"), value))
    return found


def test_no_module_outside_the_dialects_names_a_dialect():
    found = _dialect_literals()
    assert not found - set(ALLOWED), f"name the dialect through the registry: {sorted(found - set(ALLOWED))}"
    assert set(ALLOWED) <= found, f"no longer there, drop from ALLOWED: {sorted(set(ALLOWED) - found)}"
