"""Reading settings back: each format the way its consumer reads it."""

from __future__ import annotations

import pytest

from rocetune.envfiles.detect import detect
from rocetune.envfiles.dialects.systemd import systemd_env_pairs
from rocetune.envfiles.read import parse_text
from rocetune.envfiles.shell_arith import arith
from rocetune.envfiles.shell_lexer import shell_commands


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


@pytest.mark.parametrize("scalar,want", [('"a\\"b"', 'a"b'), ("'it''s'", "it's"), ('"\\x41\\u00e9\\n"', "A\u00e9\n"),
                                         ("plain # c", "plain"), (">-\n    eth0\n    eth1", "eth0 eth1"),
                                         ("|\n    eth0", "eth0\n"), ("|-\n    eth0", "eth0")])
def test_configmap_scalars_as_kubernetes_reads_them(scalar, want):
    text = f"kind: ConfigMap\ndata:\n  NCCL_X: {scalar}\n  NCCL_Y: \"1\"\n"
    assert kv(text, "k8s") == {"NCCL_X": want, "NCCL_Y": "1"}


def test_configmap_flow_mapping_and_several_documents():
    text = ("apiVersion: v1\nkind: Service\n---\nkind: ConfigMap\ndata: {NCCL_A: \"1\", NCCL_B: eth0}\n"
            "---\nkind: ConfigMap\ndata:\n  # rule: nccl-ib-hca\n  NCCL_IB_HCA: \"=mlx5_0\"\n")
    parsed = parse_text(text, name="nccl.env")
    assert parsed.fmt == "k8s" and parsed.problems == []
    assert [(a.key, a.value, a.line, a.rule_id) for a in parsed.assignments] == [
        ("NCCL_A", "1", 5, None), ("NCCL_B", "eth0", 5, None), ("NCCL_IB_HCA", "=mlx5_0", 10, "nccl-ib-hca")]


def test_configmap_values_that_are_not_strings_duplicates_and_bad_yaml():
    parsed = parse_text("kind: ConfigMap\ndata:\n  NCCL_IB_TC: 106\n  NCCL_A: x\n  NCCL_A: y\n", "k8s")
    assert {(ln, pid) for ln, pid, _ in parsed.problems} == {(3, "k8s-not-a-string"), (5, "k8s-unreadable")}
    bad = parse_text("kind: ConfigMap\ndata:\n  A: [\n", "k8s")
    assert [pid for _, pid, _ in bad.problems] == ["k8s-unreadable"] and bad.assignments == []
    assert [pid for _, pid, _ in parse_text("kind: Pod\n", "k8s").problems] == ["k8s-no-configmap"]


def test_heredoc_bodies_are_not_settings():
    text = ("cat > nccl.conf <<EOF\nNCCL_IB_HCA=mlx5_0\nEOF\nexport NCCL_A=1\n"
            "cat <<-'END' | tee x\n\tNCCL_B=2\n\tEND\nNCCL_C=3 cmd <<< NCCL_D=4\n")
    parsed = parse_text(text, "sh")
    assert [(a.key, a.line) for a in parsed.assignments] == [("NCCL_A", 4), ("NCCL_C", 8)]
    assert parsed.problems == []
    open_doc = parse_text("cat <<EOF\nNCCL_X=1\n", "sh")
    assert open_doc.assignments == [] and open_doc.problems[0][1] == "sh-syntax"


def test_export_n_and_declare_plus_x_take_names_out_of_the_environment():
    parsed = parse_text("export -n NCCL_A=1\ndeclare +x NCCL_B\ndeclare -x NCCL_C=3\nexport -- NCCL_D=4\n", "sh")
    assert kv("export -n NCCL_A=1\ndeclare -x NCCL_C=3\nexport -- NCCL_D=4\n", "sh") == {"NCCL_C": "3", "NCCL_D": "4"}
    assert [(ln, pid) for ln, pid, _ in parsed.problems] == [(1, "sh-unexported"), (2, "sh-unexported")]


@pytest.mark.parametrize("word,want", [
    ("$'a\\tb'", "a\tb"), ("$'\\x41\\101\\u00e9'", "A" + "A" + "\u00e9"), ("$'it\\'s'", "it's"),
    ("$'a\\0b'", "a"), ("$'\\cA\\e'", "\x01\x1b"), ("$'\\q'", "\\q"), ("x$'=y'", "x=y"),
    ('$"loc"', "loc"), ("\"$'x'\"", "$'x'"),
])
def test_ansi_c_quoting(word, want):
    assert kv(f"export V={word}\n", "sh") == {"V": want}


def test_names_bash_rejects_are_reported_not_skipped():
    parsed = parse_text("NCCL_IB_\u00c4HCA=mlx5_0\nexport NCCL-IB-HCA=x\na[1]=x\nNCCL_A+=:y\n", "sh")
    assert [(ln, pid) for ln, pid, _ in parsed.problems] == [(1, "sh-bad-name"), (2, "sh-bad-name")]
    assert [(a.key, a.value, a.dynamic) for a in parsed.assignments] == \
        [("NCCL_A", None, "append (+=) to the previous value")]


def test_carriage_returns_are_kept_by_the_shell_and_dropped_by_systemd_docker_deepspeed():
    assert kv("export NCCL_SOCKET_IFNAME==bond0\r\n", "sh") == {"NCCL_SOCKET_IFNAME": "=bond0\r"}
    assert [(k, v) for k, v, _, _ in systemd_env_pairs("A=1\r\nB='x'\r\n")] == [("A", "1"), ("B", "x")]
    assert kv("A=1\r\n", "docker") == {"A": "1"}
    assert kv("A=1\r\n", "deepspeed") == {"A": "1"}


@pytest.mark.parametrize("name,text,fmt", [
    ("nccl.conf", "NCCL_A=1\n", "nccl-conf"), ("x.json", "{}", "json"), (".deepspeed_env", "A=1\n", "deepspeed"),
    ("cm.yaml", "kind: ConfigMap\n", "k8s"), ("job.sh", "export A=1\n", "sh"), ("notes.md", "x", "markdown"),
    ("Dockerfile", "FROM x\n", "dockerfile"), ("any", "# rocetune 0.1.0 format: systemd  x\nA='1'\n", "systemd"),
])
def test_format_detection(name, text, fmt):
    assert detect(text, name)[0] == fmt


@pytest.mark.parametrize("name,text,fmt,why", [
    ("nccl.env", "apiVersion: v1\nkind: ConfigMap\ndata:\n  NCCL_A: \"1\"\n", "k8s", "ConfigMap"),
    ("job.conf", "export NCCL_A=1\n", "sh", "shell syntax on line 1"),
    ("nccl.conf", "# x\nexport NCCL_A=1\n", "sh", "shell syntax on line 2"),
    ("env.sh", "{\"NCCL_A\": \"1\"}", "json", "JSON"),
    ("x.yaml", '{"kind": "ConfigMap", "data": {}}', "k8s", "ConfigMap"),
    ("settings.txt", "FROM x\nENV NCCL_A=1\n", "dockerfile", "FROM/ENV"),
    ("notes.md", "Set it:\n\n    export NCCL_A=1\n", "markdown", "file name"),
    ("nccl.conf", "NCCL_A=1\n", "nccl-conf", "file name"),
    (".deepspeed_env", "NCCL_A=1\n", "deepspeed", "file name"),
    ("env", "NCCL_A=1\n", "sh", "default"),
])
def test_content_wins_over_the_name_which_only_breaks_ties(name, text, fmt, why):
    got, reason, _ = detect(text, name)
    assert (got, why in reason) == (fmt, True), reason
