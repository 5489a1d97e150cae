"""Env files: every format carries the planned values exactly, deterministically, or refuses."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocetune import __version__
from rocetune.checks import host_findings
from rocetune.envfiles import dialects
from rocetune.envfiles.dialects.systemd import systemd_env_pairs
from rocetune.envfiles.read import parse_text
from rocetune.envfiles.write import render
from rocetune.errors import ExitCode, RocetuneError
from rocetune.model.features import fingerprint
from rocetune.model.plan import Decision, Overrides, Plan
from rocetune.planner import build_plan

from ..rules.featurekit import rail_host

HOSTILE = {
    "Q_SINGLE": "it's",
    "Q_DOUBLE": 'say "hi"',
    "Q_DOLLAR": "$HOME and ${PATH} and $((1+1))",
    "Q_BACKTICK": "`id` and $(id)",
    "Q_SPACES": "a b  c ",
    "Q_NEWLINE": "line1\nline2\n",
    "Q_TAB": "tab\there",
    "Q_BACKSLASH": "back\\slash\\",
    "Q_GLOB": "* ? [a]",
    "Q_TILDE": "~root",
    "Q_HASH": "#not a comment",
    "Q_SEMI": "x; touch /tmp/rocetune-pwned",
    "Q_UNICODE": "caf\u00e9 \u2603",
    "Q_EMPTY": "",
    "Q_EQ": "==eth0",
}


def plan_with(values, features=None):
    f = features or rail_host(1).build()
    return build_plan(f, Overrides.from_args([f"{k}={v}" for k, v in values.items()], [])), f


def bash_env(path, keys):
    script = 'set -u; source "$1"; shift; for k in "$@"; do printf "%s\\0%s\\0" "$k" "${!k}"; done'
    out = subprocess.run(["bash", "-c", script, "bash", path, *keys], capture_output=True, check=True,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}).stdout
    parts = out.decode("utf-8").split("\0")[:-1]
    return dict(zip(parts[0::2], parts[1::2]))


def test_bash_sources_the_sh_file_under_set_u_and_gets_exactly_the_values(tmp_path):
    values = {k: v for k, v in HOSTILE.items()}
    plan, f = plan_with(values)
    path = tmp_path / "env.sh"
    path.write_text(render(plan, "sh", f))
    got = bash_env(str(path), list(plan.env))
    assert got == plan.env
    assert not os.path.exists("/tmp/rocetune-pwned")


def test_hostile_hostname_cannot_escape_the_header(tmp_path):
    f = rail_host(1).build()
    f["host"]["hostname"] = "evil\nexport PWNED=1\n# \\"
    plan = build_plan(f)
    for fmt in ("sh", "nccl-conf", "systemd", "docker", "k8s"):
        text = render(plan, fmt, f)
        assert "PWNED" not in "".join(line for line in text.splitlines() if not line.startswith("#")
                                      and not line.lstrip().startswith("#"))
    path = tmp_path / "env.sh"
    path.write_text(render(plan, "sh", f))
    assert "PWNED" not in bash_env(str(path), ["NCCL_IB_HCA"])
    out = subprocess.run(["bash", "-c", 'set -u; source "$1"; echo "${PWNED-unset}"', "bash", str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "unset"


def test_systemd_environment_file_round_trips_every_hostile_value():
    plan, f = plan_with(HOSTILE)
    text = render(plan, "systemd", f)
    got = {k: v for k, v, _, _ in systemd_env_pairs(text)}
    assert got == plan.env


def test_k8s_configmap_is_yaml_that_round_trips():
    yaml = pytest.importorskip("yaml")
    plan, f = plan_with(HOSTILE)
    doc = yaml.safe_load(render(plan, "k8s", f))
    assert doc["kind"] == "ConfigMap" and doc["apiVersion"] == "v1"
    assert doc["data"] == plan.env
    assert doc["metadata"]["annotations"]["rocetune/features-sha256"] == fingerprint(f)


def test_json_is_the_flat_env():
    plan, f = plan_with(HOSTILE)
    assert json.loads(render(plan, "json", f)) == plan.env


@pytest.mark.parametrize("fmt", ["nccl-conf", "docker"])
def test_line_formats_refuse_values_with_newlines(fmt):
    plan, f = plan_with({"NCCL_Q_NEWLINE": "a\nb"})
    with pytest.raises(RocetuneError) as e:
        render(plan, fmt, f)
    assert e.value.code == ExitCode.OUTPUT and "Q_NEWLINE" in e.value.message and fmt in e.value.message


@pytest.mark.parametrize("fmt", ["nccl-conf", "docker"])
def test_line_formats_carry_everything_else_verbatim(fmt):
    values = {"NCCL_" + k: v for k, v in HOSTILE.items() if "\n" not in v}
    plan, f = plan_with(values)
    text = render(plan, fmt, f)
    # NCCL's reader and docker's: '#' lines are comments, the rest of the line after the first '='
    got = {}
    for line in text.split("\n"):
        if not line or line.lstrip().startswith("#"):
            continue
        k, _, v = line.partition("=")
        got[k] = v
    want = {k: v for k, v in plan.env.items() if fmt == "docker" or k.startswith("NCCL_")}
    assert got == want
    assert parse_text(text, fmt).assignments[0].rule_id is not None


def test_nccl_conf_holds_only_what_nccl_reads():
    f = rail_host(1).build()
    text = render(build_plan(f), "nccl-conf", f)
    keys = [line.split("=", 1)[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert keys and all(k.startswith("NCCL_") for k in keys)
    assert "UCX_NET_DEVICES" in text.splitlines()[3]  # named in the header as not written
    p = Plan(decisions=[Decision("UCX_TLS", "rc", "override")])
    assert [line for line in render(p, "nccl-conf", f).splitlines() if not line.startswith("#")] == []


def test_nccl_conf_writes_the_exact_match_marker_plainly():
    plan = build_plan(rail_host(1).build())
    text = render(plan, "nccl-conf", rail_host(1).build())
    assert "\nNCCL_SOCKET_IFNAME==eth0\n" in text
    assert "\nNCCL_IB_HCA==mlx5_0:1\n" in text


def test_deepspeed_env_has_only_key_value_lines_and_refuses_unsafe_values():
    plan = build_plan(rail_host(2).build())
    text = render(plan, "deepspeed", rail_host(2).build())
    for line in text.splitlines():
        key, val = line.split("=", 1)          # what DeepSpeed's launcher does with every line
        assert plan.env[key.strip()] == val.strip()
    for bad in ("a b", "$HOME", "it's", "`x`", "a;b"):
        p, f = plan_with({"Q": bad})
        with pytest.raises(RocetuneError) as e:
            render(p, "deepspeed", f)
        assert e.value.code == ExitCode.OUTPUT


def test_nul_is_refused_everywhere():
    p = Plan(decisions=[Decision("Q", "a\x00b", "override")])
    for fmt in dialects.names(written=True):
        with pytest.raises(RocetuneError):
            render(p, fmt, rail_host(1).build())


@pytest.mark.parametrize("fmt", dialects.names(written=True))
def test_same_features_same_bytes(fmt):
    f = rail_host().build()
    a = render(build_plan(f), fmt, f)
    shuffled = json.loads(json.dumps(f))
    items = list(shuffled.items())
    random.Random(7).shuffle(items)
    g = dict(items)
    b = render(build_plan(g), fmt, g)
    assert a == b


@pytest.mark.parametrize("fmt", ["sh", "nccl-conf", "systemd", "docker", "k8s"])
def test_header_names_version_format_and_features_hash(fmt):
    f = rail_host().build()
    plan = build_plan(f)
    text = render(plan, fmt, f)
    head = "\n".join(text.splitlines()[:4])
    assert f"rocetune {__version__}" in head and f"format: {fmt}" in head
    assert f"sha256:{fingerprint(f)}" in head and re.search(r"sha256:[0-9a-f]{12}\b", head)
    rules = re.findall(r"# rule: (\S+)", text)
    assert len(rules) == len([d for d in plan.decisions if fmt != "nccl-conf" or d.key.startswith("NCCL_")])


def test_the_probing_process_memlock_does_not_change_the_file():
    """An Ansible session opened before memlock was raised (8 MiB) and the boot unit
    (unlimited) probe the same host: the same bytes, so the boot unit leaves the file alone."""
    session = rail_host().build()
    session["kernel"]["memlock"] = "8388608"
    assert "memlock-limited" in {f.id for f in host_findings(session)}
    boot = json.loads(json.dumps(session))
    boot["kernel"]["memlock"] = "unlimited"
    assert "memlock-limited" not in {f.id for f in host_findings(boot)}
    assert render(build_plan(session), "sh", session) == render(build_plan(boot), "sh", boot)
    # A host fact next to it still changes the fingerprint.
    boot["kernel"]["modules"]["nvidia_peermem"] = not boot["kernel"]["modules"].get("nvidia_peermem")
    assert fingerprint(boot) != fingerprint(session)


def test_every_line_of_every_format_parses_back_with_its_rule():
    f = rail_host().build()
    plan = build_plan(f, Overrides.from_args(["NCCL_DEBUG=WARN"], []))
    for fmt in ("sh", "nccl-conf", "systemd", "docker", "k8s"):
        parsed = parse_text(render(plan, fmt, f), "auto", f"env.{fmt}")
        assert parsed.fmt == fmt
        assert {a.key: (a.value, a.rule_id) for a in parsed.assignments} == \
            {d.key: (d.value, d.rule_id) for d in plan.decisions if fmt != "nccl-conf" or d.key.startswith("NCCL_")}


def test_systemd_refuses_what_systemd_rejects():
    for bad in ("\ufeffx", "a\uffff", "\ufdd0"):
        p, f = plan_with({"Q": bad})
        with pytest.raises(RocetuneError):
            render(p, "systemd", f)


def test_unknown_format():
    with pytest.raises(RocetuneError) as e:
        render(build_plan(rail_host(1).build()), "ini", rail_host(1).build())
    assert e.value.code == ExitCode.USAGE


def _systemd_ok(ch):
    o = ord(ch)
    return not (0xFDD0 <= o <= 0xFDEF or (o & 0xFFFE) == 0xFFFE or o == 0xFEFF)


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00").filter(_systemd_ok),
                max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_text, min_size=1, max_size=4))
def test_any_value_survives_sh_and_systemd(tmp_path, values):
    env = {f"V{i}": v for i, v in enumerate(values)}
    p = Plan(decisions=[Decision(k, v, "override", "", {"origin": "--set"}) for k, v in env.items()])
    f = rail_host(1).build()
    path = tmp_path / "env.sh"
    path.write_text(render(p, "sh", f), encoding="utf-8")
    assert bash_env(str(path), list(env)) == env
    assert {k: v for k, v, _, _ in systemd_env_pairs(render(p, "systemd", f))} == env
