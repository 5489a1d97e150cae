"""Reading settings back: each format the way its consumer reads it."""

from __future__ import annotations

import pytest

from rocetune.envfiles.read import arith, detect_format, parse_text, shell_commands, yaml_scalar


def kv(text, fmt="auto", name=""):
    return {a.key: a.value for a in parse_text(text, fmt, name).assignments}


def test_shell_export_prefix_and_continuations():
    text = ("export A=1 B='two words' \\\n\tC=\"x $HOME\"\nD=4 cmd --flag\n"
            "export E=$((512 * 1024))\nF=${G:-x}\n")
    got = {a.key: (a.value, a.context, a.dynamic) for a in parse_text(text, "sh").assignments}
    assert got["A"] == ("1", "export", None)
    assert got["B"] == ("two words", "export", None)
    assert got["C"][0] is None and got["C"][2] == "variable expansion"
    assert got["D"] == ("4", "prefix", None)
    assert got["E"] == ("524288", "export", None)
    assert got["F"][0] is None


def test_mpirun_and_docker_flags():
    text = 'mpirun -np 8 -x NCCL_DEBUG=WARN -x LD_LIBRARY_PATH=/x:$LD_LIBRARY_PATH ./a\ndocker run -e NCCL_IB_HCA==mlx5_0 --env=UCX_TLS=rc img\n'
    got = kv(text, "sh")
    assert got["NCCL_DEBUG"] == "WARN" and got["LD_LIBRARY_PATH"] is None
    assert got["NCCL_IB_HCA"] == "=mlx5_0" and got["UCX_TLS"] == "rc"


def test_dockerfile_env_both_forms():
    got = kv("FROM x\nENV NCCL_NET=gIB NCCL_CROSS_NIC=0\nENV NCCL_DEBUG WARN\n", name="Dockerfile")
    assert got == {"NCCL_NET": "gIB", "NCCL_CROSS_NIC": "0", "NCCL_DEBUG": "WARN"}


def test_comments_and_rule_comments():
    parsed = parse_text("# rule: nccl-ib-hca\nexport NCCL_IB_HCA='=mlx5_0:1'  # not a value\n", "sh")
    (a,) = parsed.assignments
    assert (a.key, a.value, a.rule_id) == ("NCCL_IB_HCA", "=mlx5_0:1", "nccl-ib-hca")


def test_nccl_conf_is_verbatim():
    parsed = parse_text("NCCL_A='x'\nNCCL_B = 1\n # NCCL_C=3\nNCCL_D==eth0\nnoequals\nNCCL_E=1\r\n", "nccl-conf")
    got = {a.key: a.value for a in parsed.assignments}
    assert got["NCCL_A"] == "'x'" and got["NCCL_D"] == "=eth0" and got["NCCL_E"] == "1\r"
    assert "NCCL_B" not in got
    ids = {pid for _, pid, _ in parsed.problems}
    assert {"conf-whitespace", "conf-ignored-line", "conf-bad-name"} <= ids


def test_markdown_reads_only_code_blocks_each_its_own_scope():
    text = "| `NCCL_X=1` | table |\n\n```\nNCCL_A=1\n```\ntext NCCL_B=2\n```bash\nexport NCCL_A=2\n```\n"
    parsed = parse_text(text, name="notes.md")
    assert parsed.fmt == "markdown"
    assert [(a.key, a.value, a.scope, a.line) for a in parsed.assignments] == \
        [("NCCL_A", "1", 1, 4), ("NCCL_A", "2", 2, 8)]


def test_templates_are_not_values():
    (a,) = parse_text("NCCL_NET_PLUGIN={{hpcx_path}}\n", "nccl-conf").assignments
    assert a.dynamic == "template placeholder"


def test_never_raises_on_garbage():
    for text in ("'unterminated", '"open $(', "a=$((", "`x", "$", "((((", "\\"):
        parse_text(text, "sh")
        shell_commands(text)


@pytest.mark.parametrize("expr,want", [("512 * 1024", 524288), ("1 << 20", 1 << 20), ("010", 8), ("0x10", 16),
                                       ("-7 / 2", -3), ("7 % -3", 1), ("(1+2)*3", 9), ("x+1", None),
                                       ("1/0", None), ("09", None)])
def test_shell_arithmetic(expr, want):
    assert arith(expr) == want


@pytest.mark.parametrize("text,want", [('"a\\"b"', 'a"b'), ("'it''s'", "it's"), ('"\\x41\\u00e9\\n"', "A\u00e9\n"),
                                       ("plain # c", "plain")])
def test_yaml_scalars(text, want):
    assert yaml_scalar(text) == want


@pytest.mark.parametrize("name,text,fmt", [
    ("nccl.conf", "NCCL_A=1\n", "nccl-conf"), ("x.json", "{}", "json"), (".deepspeed_env", "A=1\n", "deepspeed"),
    ("cm.yaml", "kind: ConfigMap\n", "k8s"), ("job.sh", "export A=1\n", "sh"), ("notes.md", "x", "markdown"),
    ("Dockerfile", "FROM x\n", "dockerfile"), ("any", "# rocetune 0.1.0 format: systemd  x\nA='1'\n", "systemd"),
])
def test_format_detection(name, text, fmt):
    assert detect_format(text, name) == fmt
