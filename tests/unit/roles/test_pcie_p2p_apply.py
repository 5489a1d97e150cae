"""The pcie_p2p_apply module's body on a sysfs tree and a boot loader directory under tmp: every
input and the node's state (ids, addresses, ACS bits, the boot loader, the drop-in's directory)
is checked before anything changes; on an error the ACS registers and the drop-in are as they
were and the message names the input. Converged, a rerun and a check run change nothing."""

from __future__ import annotations

import json
import struct
import sys

import pytest

from tests.unit.roles import REPO
from tests.unit.roles.test_pcie_p2p import REDIRECTED, hgx

pytest.importorskip("ansible", reason="the module's body runs inside ansible-core's AnsibleModule")
sys.path.insert(0, str(REPO / "collections"))
from ansible_collections.rocetune.fabric.plugins.modules import pcie_p2p_apply as M  # noqa: E402

BRIDGES = ("0000:01:00.0", "0000:02:00.0", "0000:02:01.0")
PAIRS = [{"gpu": "0000:03:00.0", "nic": "0000:04:00.0"}]


class Done(Exception):
    pass


class Failed(Exception):
    pass


class Node:
    """What the module's body needs of AnsibleModule, with the tools this node has."""

    def __init__(self, params, tools=("update-grub",), check_mode=False, diff=True, fails=()):
        self.params = dict({k: v.get("default") for k, v in M.ARGUMENT_SPEC.items()}, **dict({"pairs": PAIRS}, **params))
        self.tools, self.check_mode, self.warnings, self.ran = set(tools), check_mode, [], []
        self._diff, self.fails = diff, set(fails)

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/sbin/" + name if name in self.tools else None

    def run_command(self, argv):
        self.ran.append(argv)
        return (1, "", "grub-mkconfig: error: out of disk space") if argv[0] in self.fails else (0, "", "")

    def warn(self, message):
        self.warnings.append(message)

    def exit_json(self, **result):
        raise Done(result)

    def fail_json(self, msg, **result):
        raise Failed(msg)


def acs(fs):
    return {b: struct.unpack_from("<H", fs.config(b), 0x106 if b != "0000:01:00.0" else 0x14E)[0]
            for b in BRIDGES}


def run(node, fs, tmp_path):
    (tmp_path / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/vda1 intel_iommu=on\n")
    with pytest.raises((Done, Failed)) as info:
        M.converge(node, fs, str(tmp_path / "cmdline"))
    return info.value


def dropin(tmp_path):
    return str(tmp_path / "etc/default/grub.d/rocetune-pcie-p2p.cfg")


@pytest.mark.parametrize("params, needle", [
    ({"pairs": [{"gpu": "03:00.0", "nic": "0000:04:00.0"}]}, "pairs: {'gpu': '03:00.0'"),
    ({"pairs": [{"gpu": "0000:03:00.0", "nic": "0000:05:00.0"}]}, "share no PCIe switch here"),
    ({"pairs": [], "rocetune_command": "/nonexistent/rocetune"}, "rocetune_command: /nonexistent/rocetune is not "
                                                                 "installed"),
    ({"acs_devices": ["02:00.0"]}, "acs_devices: '02:00.0' is not a PCI address"),
    ({"acs_clear": ["ReqRedirect"]}, "acs_clear: unknown ACS bit(s) ReqRedirect"),
    ({"acs_clear": ["ReqRedir"]}, "acs_clear: CmpltRedir, EgressCtrl left on"),
    ({"boot_loader": "grubby"}, "boot_loader: grubby is not installed on this node"),
    ({"grub_dropin": "FILE/grub.d/x.cfg"}, "grub_dropin: "),
])
def test_an_input_or_node_state_it_cannot_use_changes_nothing_and_is_named(tmp_path, params, needle):
    fs = hgx(tmp_path)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "file").write_text("not a directory\n")
    if "grub_dropin" in params:
        params = {"grub_dropin": str(tmp_path / "etc/file/grub.d/x.cfg")}
    before = acs(fs)
    node = Node(dict({"grub_dropin": dropin(tmp_path)}, **params))
    out = run(node, fs, tmp_path)
    assert isinstance(out, Failed), out
    message = out.args[0]
    assert needle in message and message.endswith("nothing was changed"), message
    assert acs(fs) == before and set(before.values()) == {REDIRECTED}
    assert node.ran == [] and not (tmp_path / "etc/default").exists()


def test_a_drop_in_directory_that_is_a_file_stops_it_before_acs_is_cleared(tmp_path):
    fs = hgx(tmp_path)
    (tmp_path / "etc/default").mkdir(parents=True)
    (tmp_path / "etc/default/grub.d").write_text("")
    out = run(Node({"grub_dropin": dropin(tmp_path)}), fs, tmp_path)
    assert isinstance(out, Failed) and "grub_dropin: " in out.args[0] and "is not a directory" in out.args[0]
    assert set(acs(fs).values()) == {REDIRECTED}


def test_converge_then_rerun_and_check_mode_change_nothing(tmp_path):
    fs = hgx(tmp_path)
    params = {"grub_dropin": dropin(tmp_path), "reboot_marker": str(tmp_path / "reboot-required")}
    check = Node(params, check_mode=True)
    first = run(check, fs, tmp_path)
    assert isinstance(first, Done) and first.args[0]["changed"] and check.ran == []
    assert "ReqRedir+" in first.args[0]["diff"]["before"] and "iommu=pt" in first.args[0]["diff"]["after"]
    assert set(acs(fs).values()) == {REDIRECTED} and not (tmp_path / "etc").exists()

    node = Node(params)
    out = run(node, fs, tmp_path).args[0]
    assert out["changed"] and out["reboot_required"] and node.ran == [["/usr/sbin/update-grub"]]
    assert set(acs(fs).values()) == {REDIRECTED & ~0x0C}
    assert "iommu=pt" in (tmp_path / "etc/default/grub.d/rocetune-pcie-p2p.cfg").read_text()

    for again in (Node(params), Node(params, check_mode=True)):
        out = run(again, fs, tmp_path).args[0]
        assert not out["changed"] and out["diff"]["before"] == out["diff"]["after"] == "", out
        assert out["reboot_required"] and again.ran == []  # the command line still waits for a reboot


def test_a_failed_update_grub_is_undone_so_the_next_run_tries_again(tmp_path):
    fs = hgx(tmp_path)
    params = {"grub_dropin": dropin(tmp_path), "reboot_marker": str(tmp_path / "reboot-required")}
    out = run(Node(params, fails={"/usr/sbin/update-grub"}), fs, tmp_path)
    assert isinstance(out, Failed) and "update-grub failed: grub-mkconfig: error: out of disk space" in out.args[0]
    assert "the next run tries again" in out.args[0] and not (tmp_path / "etc/default/grub.d/rocetune-pcie-p2p.cfg").exists()
    again = Node(params)
    done = run(again, fs, tmp_path).args[0]
    assert done["changed"] and done["iommu"]["configured"] and again.ran == [["/usr/sbin/update-grub"]]


def test_the_diff_comes_only_in_diff_mode(tmp_path):
    fs = hgx(tmp_path)
    params = {"grub_dropin": dropin(tmp_path), "reboot_marker": str(tmp_path / "reboot-required")}
    plain = run(Node(params, check_mode=True, diff=False), fs, tmp_path).args[0]
    assert plain["changed"] and "diff" not in plain
    assert "diff" in run(Node(params, check_mode=True), fs, tmp_path).args[0]


def test_the_pairs_come_from_the_agents_probe_on_the_node(tmp_path, monkeypatch):
    from tests.unit.roles.test_pcie_p2p import probe_doc

    doc = probe_doc("dgx-h100-roce")
    node = Node({"pairs": [], "rocetune_command": "/bin/true", "acs_scope": "gpu_nic"})
    node.run_command = lambda argv: (5, json.dumps(doc), "") if argv[1:] == ["--json", "probe"] else (0, "", "")
    pairs = M.gpu_nic_pairs(node, node.params)
    assert len(pairs) == 8 and ("0000:1b:00.0", "0000:18:00.0") in pairs
    node.run_command = lambda argv: (3, "", "rocetune: error: --root /x: not a directory")
    with pytest.raises(M.InputError, match="rocetune --json probe failed .exit 3.: rocetune: error"):
        M.gpu_nic_pairs(node, node.params)


def test_a_drop_in_it_cannot_write_is_a_clear_failure_naming_what_is_live(tmp_path, monkeypatch):
    fs = hgx(tmp_path)

    def immutable(changes):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(M, "apply_changes", immutable)
    out = run(Node({"grub_dropin": dropin(tmp_path), "reboot_marker": str(tmp_path / "rr")}), fs, tmp_path)
    assert isinstance(out, Failed), out
    assert out.args[0] == (f"cannot write {dropin(tmp_path)}: Operation not permitted; ACS cleared live on "
                           "0000:01:00.0, 0000:02:00.0, 0000:02:01.0, the command line not changed")
