"""The pcie_p2p role's reader and writer (plugins/module_utils/rocetune_pcie_p2p.py) on sysfs trees:
the GPU-NIC pairs taken from rocetune's topology reader (PIX/PXB on the plan's rails, run on real
fixture hosts), the bridges between the two of each pair found from the PCI hierarchy, their ACS Control
register found by walking the extended capabilities of the configuration space, the redirect
bits cleared and read back, and nothing else touched."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins" / "module_utils"))
import rocetune_pcie_p2p as p2p  # noqa: E402

ROLE = Path(__file__).resolve().parents[3] / "roles" / "pcie_p2p"

REDIRECTED = 0x001D  # SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+: what Linux sets with an IOMMU on


def config(acs_ctl=None, before=None):
    """4 KiB of config space: a capability chain at 0x100 (AER first where `before`), ACS last."""
    data = bytearray(4096)
    struct.pack_into("<HH", data, 0, 0x8086, 0x1234)
    offset = 0x100
    if before is not None:
        struct.pack_into("<I", data, offset, 0x0001 | (1 << 16) | (0x148 << 20))  # AER, next 0x148
        offset = 0x148
    if acs_ctl is not None:
        struct.pack_into("<I", data, offset, p2p.ACS_CAP_ID | (1 << 16))
        struct.pack_into("<HH", data, offset + 4, 0x005F, acs_ctl)
    return bytes(data)


def tree(tmp_path, devices):
    """devices: [(path below pci0000:00, vendor, class, config bytes)]."""
    bus = tmp_path / "sys/bus/pci/devices"
    bus.mkdir(parents=True)
    for rel, vendor, cls, cfg in devices:
        d = tmp_path / "sys/devices/pci0000:00" / rel
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text("0x1234\n")
        (d / "class").write_text(cls + "\n")
        (d / "config").write_bytes(cfg)
        os.symlink(os.path.relpath(d, bus), bus / d.name)  # as sysfs links them
    return p2p.Sysfs(str(tmp_path))


def hgx(tmp_path, extra=()):
    """A root port, a PCIe switch (upstream 01:00.0, downstream 02:00.0 and 02:01.0), a GPU and a
    ConnectX behind it, and a front-end NIC on another root port."""
    rp, sw = "0000:00:01.0", "0000:00:01.0/0000:01:00.0"
    return tree(tmp_path, [
        (rp, "0x8086", "0x060400", config(REDIRECTED)),
        (sw, "0x1000", "0x060400", config(REDIRECTED, before=True)),
        (f"{sw}/0000:02:00.0", "0x1000", "0x060400", config(REDIRECTED)),
        (f"{sw}/0000:02:01.0", "0x1000", "0x060400", config(REDIRECTED)),
        (f"{sw}/0000:02:00.0/0000:03:00.0", "0x10de", "0x030200", config()),
        (f"{sw}/0000:02:01.0/0000:04:00.0", "0x15b3", "0x020000", config()),
        ("0000:00:02.0", "0x8086", "0x060400", config(REDIRECTED)),
        ("0000:00:02.0/0000:05:00.0", "0x14e4", "0x020000", config()),
        *extra])


PAIR = ("0000:03:00.0", "0000:04:00.0")  # the GPU and the ConnectX behind one switch in hgx()


def test_the_bridges_between_a_gpu_and_the_nic_beside_it(tmp_path):
    fs = hgx(tmp_path)
    assert p2p.pair_bridges(fs.parents, [PAIR]) == {b: ["0000:03:00.0-0000:04:00.0"]
                                            for b in ("0000:01:00.0", "0000:02:00.0", "0000:02:01.0")}
    # the front-end NIC on another root port is never a pair's: the GPU and it share no switch
    with pytest.raises(p2p.P2PError, match="share no PCIe switch here"):
        p2p.pair_bridges(fs.parents, [("0000:03:00.0", "0000:05:00.0")])


def probe_doc(host):
    """`rocetune --json probe` on a fixture host, as the module reads it on a node."""
    import json

    repo = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(repo / "src"))
    proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "probe", "--root",
                           str(repo / "tests" / "fixtures" / "hosts" / host)],
                          capture_output=True, text=True, env=env, check=False)
    return json.loads(proc.stdout)


def test_pairs_are_the_topology_readers_pix_pxb_gpus_on_the_plans_rails():
    pairs = p2p.pairs_from_probe(probe_doc("dgx-h100-roce"))
    assert len(pairs) == 8 and ("0000:1b:00.0", "0000:18:00.0") in pairs  # GPU0 and mlx5_0, PIX
    assert all(nic not in {"0000:1f:00.0"} for _, nic in pairs)
    # no RDMA rail at all: the Broadcom management NIC is nobody's pair
    assert p2p.pairs_from_probe(probe_doc("hgx-h100-nvlink-nonic")) == []
    # every GPU is NODE or SYS from every NIC: NCCL does not use GPUDirect RDMA there
    assert p2p.pairs_from_probe(probe_doc("pcie-4gpu-2nic")) == []


def test_pairs_it_cannot_tell_are_refused():
    doc = probe_doc("dgx-h100-roce")
    entry = next(e for e in doc["data"]["features"]["topology"]["gpu_nic"] if e["path"] == "PIX")
    entry["nvidia_smi"], entry["sysfs"] = "PIX", "PHB"
    with pytest.raises(p2p.P2PError, match="cannot tell the path"):
        p2p.pairs_from_probe(doc)
    doc["data"]["features"]["topology"]["gpu_nic"] = []
    with pytest.raises(p2p.P2PError, match="placed no GPU-NIC path"):
        p2p.pairs_from_probe(doc)
    with pytest.raises(p2p.P2PError, match="no features and plan"):
        p2p.pairs_from_probe({"data": {}})


def test_the_capability_chain_is_walked_to_acs():
    assert p2p.acs_offset(config(REDIRECTED, before=True)) == 0x148
    assert p2p.acs_offset(config(REDIRECTED)) == 0x100
    assert p2p.acs_offset(config()) is None
    assert p2p.acs_offset(config(REDIRECTED)[:256]) is None  # not root: 256 bytes only


def test_redirect_cleared_and_read_back_other_bits_kept(tmp_path):
    fs = hgx(tmp_path)
    steps, unreadable = p2p.plan(fs, pairs=[PAIR])
    assert unreadable == [] and [s["bdf"] for s in steps] == ["0000:01:00.0", "0000:02:00.0", "0000:02:01.0"]
    assert {s["after"] for s in steps} == {0x0011}  # SrcValid+ UpstreamFwd+ stay
    assert p2p.apply(fs, steps) == [s["bdf"] for s in steps]
    again, _ = p2p.plan(fs, pairs=[PAIR])
    assert {s["before"] for s in again} == {0x0011} and p2p.apply(fs, again) == []
    # the root ports and the front-end NIC's port were not touched
    for bdf in ("0000:00:01.0", "0000:00:02.0"):
        assert struct.unpack_from("<H", fs.config(bdf), 0x106)[0] == REDIRECTED


def test_scope_all_clears_every_acs_function_like_deepops(tmp_path):
    fs = hgx(tmp_path)
    steps, _ = p2p.plan(fs, scope="all", clear=list(p2p.BITS))
    assert len(steps) == 5 and {s["after"] for s in steps} == {0}


def test_a_gpu_and_a_nic_on_different_root_ports_are_no_pair(tmp_path):
    """PHB or farther: the traffic crosses the root complex whatever ACS says; no root port is
    cleared for it."""
    fs = tree(tmp_path, [
        ("0000:00:01.0", "0x8086", "0x060400", config(REDIRECTED)),
        ("0000:00:01.0/0000:01:00.0", "0x10de", "0x030200", config()),
        ("0000:00:02.0", "0x8086", "0x060400", config(REDIRECTED)),
        ("0000:00:02.0/0000:02:00.0", "0x15b3", "0x020700", config()),
    ])
    with pytest.raises(p2p.P2PError, match="only a root port or the root complex"):
        p2p.pair_bridges(fs.parents, [("0000:01:00.0", "0000:02:00.0")])


def boot(argv, root):
    """The boot unit's command, as run() gives it: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    return p2p.run(argv, out, err, root=str(root)), out.getvalue(), err.getvalue()


def test_named_devices_ids_and_the_boot_entry(tmp_path):
    fs = hgx(tmp_path)
    steps, _ = p2p.plan(fs, scope="none", extra=["0000:00:02.0"])
    assert [s["bdf"] for s in steps] == ["0000:00:02.0"]
    with pytest.raises(p2p.P2PError, match="not a PCI address"):
        p2p.plan(fs, scope="none", extra=["02.0"])
    with pytest.raises(p2p.P2PError, match="unknown ACS bit"):
        p2p.plan(fs, clear=["ReqRedirect"])
    with pytest.raises(p2p.P2PError, match="EgressCtrl left on: the bits cleared include ReqRedir, CmpltRedir, "
                                           "EgressCtrl"):
        p2p.plan(fs, clear=["ReqRedir", "CmpltRedir"])  # a node doctor-acs-redirect would fail
    pair = ["--pair", ",".join(PAIR)]
    code, out, _ = boot(["--check", *pair], tmp_path)
    assert code == 0 and "0000:01:00.0: ACS would clear (SrcValid+ TransBlk- ReqRedir+ CmpltRedir+" in out
    code, out, _ = boot(pair, tmp_path)
    assert code == 0 and "cleared" in out
    code, out, _ = boot([f"--pair={','.join(PAIR)}"], tmp_path)  # as the unit writes it
    assert code == 0 and "already clear" in out
    code, _, err = boot(["--device", "02.0"], tmp_path)
    assert code == 1 and err.startswith("rocetune-pcie-p2p: ") and "not a PCI address" in err


def test_the_unit_s_script_runs_the_module_utils_installed_beside_it(tmp_path):
    """As the role installs them: the script and rocetune_pcie_p2p.py in one directory."""
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(ROLE / "files" / "rocetune_pcie_p2p_boot.py", lib)
    shutil.copy(Path(p2p.__file__), lib)
    proc = subprocess.run([sys.executable, str(lib / "rocetune_pcie_p2p_boot.py"), "--scope", "bogus"],
                          capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("usage: rocetune_pcie_p2p_boot.py"), proc.stderr


def test_an_unreadable_extended_space_is_said(tmp_path):
    rp = "0000:00:01.0"
    fs = tree(tmp_path, [(rp, "0x8086", "0x060400", config(REDIRECTED)[:256]),
                         (f"{rp}/0000:01:00.0", "0x10de", "0x030200", config()),
                         ("0000:00:02.0", "0x8086", "0x060400", config(REDIRECTED)),
                         ("0000:00:02.0/0000:02:00.0", "0x15b3", "0x020000", config())])
    steps, unreadable = p2p.plan(fs, scope="none", extra=["0000:00:01.0", "0000:00:02.0"])
    assert unreadable == ["0000:00:01.0"] and [s["bdf"] for s in steps] == ["0000:00:02.0"]


def test_the_grub_dropin_appends_iommu_pt():
    assert p2p.grub_dropin().endswith('GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} iommu=pt"\n')
    assert p2p.cmdline_has("BOOT_IMAGE=/vmlinuz ro iommu=pt quiet", "iommu=pt")
    assert not p2p.cmdline_has("ro intel_iommu=on", "iommu=pt")
