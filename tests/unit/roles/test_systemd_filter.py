"""The systemd filters put hostile values into unit lines as data: systemd reads back (splits,
unquotes, expands specifiers and variables) exactly the value given, or the filter refuses,
naming the input."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess

import pytest

from tests.unit.roles import REPO
from tests.unit.roles.systemd_reader import exec_argv

# The filter is an Ansible plugin: it raises Ansible's own error type. Without ansible-core
# (`pytest tests/unit` needs none) there is nothing to load it into.
AnsibleFilterError = pytest.importorskip("ansible.errors").AnsibleFilterError

_spec = importlib.util.spec_from_file_location("rocetune_filter_systemd", REPO / "plugins" / "filter" / "systemd.py")
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)

HOSTILE = [
    "NCCL_DEBUG_FILE=/tmp/nccl.%h.%p", "$HOME", "${HOME}/x", "$$", "100%", "a b", 'say "hi"', "it's",
    "x\nExecStartPre=/bin/sh -c id", "back\\slash", ";", "\\;", "", "tab\there", "bell\x07", "é-ü",
    "--set=NCCL_SOCKET_IFNAME==ens1", "%%h", "\r",
]


@pytest.mark.parametrize("arg", HOSTILE)
def test_systemd_reads_back_exactly_the_argument(arg):
    line = F.systemd_exec(["/usr/local/bin/rocetune", arg, "tail"])
    assert "\n" not in line and "\r" not in line
    assert exec_argv(line) == ["/usr/local/bin/rocetune", arg, "tail"]


def test_the_specifier_example_is_written_with_doubled_percents():
    line = F.systemd_exec(["/usr/bin/rocetune", "--set", "NCCL_DEBUG_FILE=/tmp/nccl.%h.%p", "$HOME"])
    assert line == '/usr/bin/rocetune --set "NCCL_DEBUG_FILE=/tmp/nccl.%%h.%%p" "$$HOME"'


def test_plain_words_stay_bare():
    argv = ["/usr/local/bin/rocetune", "--root", "/", "-q", "env", "--env-dir", "/etc/rocetune", "-o", "/etc/nccl.conf"]
    assert F.systemd_exec(argv) == " ".join(argv)


@pytest.mark.parametrize("program", [
    "rocetune", "-/usr/bin/rocetune", "@/usr/bin/x", "/usr/bin/%h", "/usr/bin/$X", "/opt/my tools/x", "",
    "/usr/bin/x\nExecStartPre=/bin/sh",
])
def test_a_program_that_is_no_literal_absolute_path_is_refused_and_named(program):
    with pytest.raises(AnsibleFilterError, match=r"^rocetune_env_command: .* must be an absolute path"):
        F.systemd_exec([program, "env"], "rocetune_env_command")


@pytest.mark.parametrize("argv", [[], "/usr/bin/x", None, ["/usr/bin/x", None], ["/usr/bin/x", {"a": 1}],
                                  ["/usr/bin/x", "nul\0byte"]])
def test_what_is_no_argument_list_is_refused(argv):
    with pytest.raises(AnsibleFilterError, match=r"^rocetune_env_args: "):
        F.systemd_exec(argv, "rocetune_env_args")


@pytest.mark.parametrize("value, escaped", [
    ("eth0", "eth0"), ("ens1f0-np0", "ens1f0\\x2dnp0"), ("eth0.100", "eth0.100"), (".hidden", "\\x2ehidden"),
    ("a%h", "a\\x25h"), ("x\nExecStart=/bin/sh", "x\\x0aExecStart\\x3d-bin-sh"), ("é", "\\xc3\\xa9"),
    ("$HOME", "\\x24HOME"),
])
def test_escape_for_unit_names_is_systemd_escape(value, escaped):
    assert F.systemd_escape(value) == escaped
    tool = shutil.which("systemd-escape")
    if tool:  # the same as systemd's own tool, where it is installed
        assert subprocess.run([tool, "--", value], capture_output=True, text=True, check=True).stdout.strip() == escaped


def test_escape_refuses_an_empty_name():
    with pytest.raises(AnsibleFilterError, match="^roce_qos_interfaces: an empty string"):
        F.systemd_escape("", "roce_qos_interfaces")


def test_unit_names_are_joined():
    names = ["network-online.target", "rdma-hw.target", "sys-subsystem-net-devices-ens1f0\\x2dnp0.device",
             "getty@tty1.service", "rtv-lab-rxe.service"]
    assert F.systemd_unit_names(names) == " ".join(names)
    assert F.systemd_unit_names([]) == ""


@pytest.mark.parametrize("bad", [
    "network-online.target\nExecStartPre=/bin/sh", "a.service b.service", "%h.service", "$HOME.service",
    "rdma-hw", "x.notatype", "", "a\"b.service", "x" * 250 + ".service",
])
def test_what_is_no_unit_name_is_refused_and_named(bad):
    with pytest.raises(AnsibleFilterError, match=r"^rocetune_env_boot_after: .* is not a systemd unit name"):
        F.systemd_unit_names(["network-online.target", bad], "rocetune_env_boot_after")


def test_a_single_string_is_no_list_of_unit_names():
    with pytest.raises(AnsibleFilterError, match="is not a list of unit names"):
        F.systemd_unit_names("network-online.target", "roce_qos_boot_after")


def test_the_filters_are_registered_under_their_names():
    assert set(F.FilterModule().filters()) == {"systemd_exec", "systemd_escape", "systemd_unit_names"}
    for name in F.FilterModule().filters():
        assert (REPO / "plugins" / "filter" / f"{name}.yml").is_file(), name
