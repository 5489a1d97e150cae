"""host_tuning's sysctl decisions on a directory that plays /proc/sys."""

from __future__ import annotations

import os

import pytest

from tests.unit.roles import load_module_utils

S = load_module_utils("host_tuning", "host_tuning_sysctl_state")


@pytest.fixture
def proc(tmp_path):
    def put(key, value, mode=0o644):
        path = tmp_path.joinpath(*key.split("."))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
        os.chmod(path, mode)
    put("net.ipv4.tcp_rmem", "4096\t131072\t6291456")
    put("net.ipv4.tcp_mtu_probing", "1")
    put("net.core.rmem_max", "212992", 0o444)  # a namespace mirrors the host's value
    return tmp_path


WANT = {"net.ipv4.tcp_rmem": "4096 87380 134217728", "net.ipv4.tcp_mtu_probing": 1,
        "net.core.rmem_max": 134217728, "net.core.netdev_max_backlog": 30000}


def states(items):
    return {i["key"]: i["state"] for i in items}


def test_plan_sorts_keys_into_changed_unchanged_absent_and_read_only(proc):
    items = S.plan(str(proc), WANT)
    assert states(items) == {"net.core.netdev_max_backlog": "absent", "net.core.rmem_max": "read-only",
                             "net.ipv4.tcp_mtu_probing": "unchanged", "net.ipv4.tcp_rmem": "changed"}
    # Tabs in the kernel's output and spaces in the inventory compare equal.
    assert S.plan(str(proc), {"net.ipv4.tcp_rmem": "4096 131072  6291456"})[0]["state"] == "unchanged"


def test_apply_writes_only_what_changed_and_keeps_read_only_keys(proc):
    items = S.apply(str(proc), S.plan(str(proc), WANT))
    assert (proc / "net/ipv4/tcp_rmem").read_text() == "4096 87380 134217728\n"
    assert (proc / "net/core/rmem_max").read_text() == "212992\n"
    assert states(items)["net.core.rmem_max"] == "read-only"


def test_apply_as_root_changes_the_writable_key(proc):
    items = S.apply(str(proc), [i for i in S.plan(str(proc), WANT) if i["state"] == "changed"])
    assert [i["key"] for i in items] == ["net.ipv4.tcp_rmem"]
    assert (proc / "net/ipv4/tcp_rmem").read_text() == "4096 87380 134217728\n"
    assert S.plan(str(proc), {"net.ipv4.tcp_rmem": "4096 87380 134217728"})[0]["state"] == "unchanged"


def test_the_warning_names_every_skipped_key(proc):
    message = S.unsupported_message(S.plan(str(proc), WANT))
    assert "absent here: net.core.netdev_max_backlog" in message
    assert "read-only here: net.core.rmem_max" in message
    assert S.unsupported_message(S.plan(str(proc), {"net.ipv4.tcp_mtu_probing": 1})) == ""


def test_a_dotted_interface_name_uses_a_slash_in_the_key(tmp_path):
    assert S.key_path("/p", "net.ipv4.conf.eth0/100.rp_filter") == "/p/net/ipv4/conf/eth0.100/rp_filter"


@pytest.mark.parametrize("key, value", [
    ("net.core.rmem_max\nkernel.core_pattern", "1"),   # a newline would add a second setting
    ("net..core", "1"), ("net.core.rmem max", "1"), ("../../etc/passwd", "1"), ("rmem_max", "1"),
    ("net.core.rmem_max", "1\nkernel.core_pattern = |/tmp/x"), ("net.core.rmem_max", ""),
    ("net.core.rmem_max", None), ("net.core.rmem_max", [1, 2]),
    ("-net.core.rmem_max", "1"),                        # sysctl.d: "-" ignores a failure to set it
    ("net.core.rmem_max=1\nkernel.core_pattern", "1"), ("net.core.*.x", "1"), ("net.core.%h", "1"),
    ("net.core.rmem_max", "1\0"), ("net.core.rmem_max", "1\rkernel.x = 1"), ("net.core.rmem_max", "1\x0b2"),
    ("net.core.rmem_max", "1\u20282"), ("net.core.rmem_max", "1\x1b[2J"),
])
def test_a_key_or_value_that_is_no_sysctl_setting_is_named(key, value):
    problems = S.invalid_entries({key: value, "net.ipv4.tcp_mtu_probing": 1})
    assert len(problems) == 1 and repr(key)[1:-1][:8] in problems[0]


def test_valid_settings_pass_the_check():
    assert S.invalid_entries({**WANT, "net.ipv4.conf.eth0/100.rp_filter": 2}) == []


def test_only_keys_this_node_has_and_can_set_are_persisted(proc):
    text = S.file_content(WANT, S.plan(str(proc), WANT))
    assert "net.ipv4.tcp_rmem = 4096 87380 134217728\n" in text
    assert "net.ipv4.tcp_mtu_probing = 1\n" in text
    assert "netdev_max_backlog" not in text and "rmem_max" not in text
    assert "netdev_max_backlog" in S.file_content(WANT)  # without a plan: every key


def test_a_value_the_kernel_keeps_otherwise_restores_what_was_written(proc):
    put = proc / "net/ipv4/tcp_wmem"
    put.write_text("4096\t16384\t4194304\n")
    clamp = proc / "net/ipv4/zz_clamped"  # sorted after: written second, then refused
    clamp.write_text("5\n")
    items = S.plan(str(proc), {"net.ipv4.tcp_wmem": "4096 87380 134217728", "net.ipv4.zz_clamped": 6})

    real_open = open

    def clamping_open(path, mode="r", *a, **kw):
        if str(path).endswith("zz_clamped") and "w" in mode:
            return real_open(os.devnull, mode)  # the kernel ignores the write
        return real_open(path, mode, *a, **kw)

    import builtins
    builtins.open, saved = clamping_open, builtins.open
    try:
        with pytest.raises(ValueError, match="zz_clamped = 6: the kernel kept 5"):
            S.apply(str(proc), items)
    finally:
        builtins.open = saved
    assert put.read_text() == "4096 16384 4194304\n"  # restored


def test_a_value_with_spaces_tabs_and_an_equals_sign_is_one_line_and_passes():
    assert S.invalid_entries({"net.ipv4.tcp_rmem": "4096\t87380  6291456", "kernel.x": "a=b"}) == []
