"""When a topology file is planned, GPU-NIC paths (and the GPUDirect RDMA advice) are the file's."""

from __future__ import annotations

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.nccl.topo_read import parse_topology, to_nodes
from rocetune.probe.sources import declared
from tests.fixtures.roots import root_of

from .featurekit import plan_of, rail_host


def gdr(plan):
    return plan.reports["gpudirect-rdma"]


def notes(plan, rule="gpudirect-rdma"):
    return [m.message for m in plan.notes if m.rule_id == rule]


def test_azure_vm_reads_its_declared_vendor_file_not_the_flattened_view():
    from rocetune.planner import build_plan
    from rocetune.probe import collect_features

    plan = build_plan(collect_features(root_of("azure-vm-flat")))
    report = gdr(plan)
    assert report["paths_from"] == ("NCCL topology file /opt/microsoft/ndv4/topo.xml "
                                    "(declared in /etc/nccl.conf)")
    pix = [p for p in report["pairs"] if p["path"] == "PIX"]
    # Azure's file puts two GPUs and two HCAs under each of four bridges
    assert len(pix) == 16 and all(p["default_level"] for p in pix)
    assert {(p["gpu"], p["port"]) for p in pix} >= {(0, "mlx5_ib0:1"), (0, "mlx5_ib1:1"), (7, "mlx5_ib7:1")}
    assert not any("staged through host memory" in n for n in notes(plan))
    assert any("16 GPU-NIC pair(s)" in n and "/opt/microsoft/ndv4/topo.xml" in n for n in notes(plan))


def _file_for(h, nic_numa):
    """A topology file placing GPU0 with its NIC on one CPU, or the NIC on another CPU."""
    f = h.build()
    gpu, nic = f["gpus"][0]["bdf"], f["rdma"]["devices"][0]["pci"]
    return parse_topology(f"""<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="{gpu}" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>
    </pci>
  </cpu>
  <cpu numaid="{nic_numa}" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="ffff:ff:02.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="{nic}" class="0x020000" link_speed="32.0 GT/s PCIe" link_width="16"/>
    </pci>
  </cpu>
</system>""")


def test_an_owners_file_wins_over_the_probe_on_any_host():
    h = rail_host(1).declare(NCCL_TOPO_FILE="/etc/topo.xml")
    h.topology_files.append({"path": "/etc/topo.xml", "vendor": None, "exists": True,
                             "declared_by": "/etc/nccl.conf", "nodes": to_nodes(_file_for(h, 1))})
    plan = plan_of(h.build())
    assert [(p["gpu"], p["port"], p["path"]) for p in gdr(plan)["pairs"]] == [(0, "mlx5_0:1", "SYS")]
    assert "/etc/topo.xml (declared in /etc/nccl.conf)" in gdr(plan)["paths_from"]
    assert any("no GPU-NIC pair is PIX/PXB (paths from the NCCL topology file /etc/topo.xml" in n
               for n in notes(plan))


def test_without_a_file_the_probe_paths_stay():
    plan = plan_of(rail_host(1).build())
    assert gdr(plan)["paths_from"] is None and gdr(plan)["pairs"][0]["path"] == "PIX"


def test_a_file_nccl_would_refuse_is_a_warning_and_its_paths_still_count():
    h = rail_host(1).declare(NCCL_TOPO_FILE="/etc/topo.xml")
    tree = _file_for(h, 0)
    for cpu in tree.find("cpu"):
        cpu.attrs = {"numaid": cpu.attrs["numaid"]}  # rocetune's old output: no CPU identity
    h.topology_files.append({"path": "/etc/topo.xml", "vendor": None, "exists": True,
                             "declared_by": "/etc/nccl.conf", "nodes": to_nodes(tree)})
    plan = plan_of(h.build())
    warning = [str(w) for w in plan.warnings if "NCCL's loader would stop" in str(w)]
    assert warning and "has no arch" in warning[0] and "NCCL 2.23.4" in warning[0]
    assert gdr(plan)["pairs"][0]["path"] == "PHB"


def test_a_malformed_declared_file_is_a_warning_not_a_crash(tmp_path):
    for rel, text in {"etc/nccl.conf": "NCCL_TOPO_FILE=/etc/topo.xml\n",
                      "etc/topo.xml": "<system version='1'><cpu numaid='0'></system>"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    ctx = ProbeContext(HostRoot(str(tmp_path)))
    d = declared.probe(ctx)
    (entry,) = d["topology_files"]
    assert "not well-formed" in entry["read_error"] and "nodes" not in entry
    assert any("/etc/topo.xml: not well-formed" in w for w in ctx.status.warnings)
    f = rail_host(1).build()
    f["declared"] = d
    plan = plan_of(f)
    assert any("/etc/topo.xml cannot be read" in str(w) for w in plan.warnings)
    assert gdr(plan)["paths_from"] is None and gdr(plan)["pairs"][0]["path"] == "PIX"


def test_nccls_own_default_topology_file_is_left_to_nccl(tmp_path):
    """NCCL loads /var/run/nvidia-topologyd/virtualTopology.xml while NCCL_TOPO_FILE is unset (v2.30.7-1
    src/graph/topo.cc:1774-1781, v2.10.3-1 topo.cc:589): on azure-vm-flat without /opt/microsoft, the
    Azure file placed there and an nccl.conf without its TOPO_FILE line, rocetune writes no file of its own."""
    import shutil

    from rocetune.planner import build_plan
    from rocetune.probe import collect_features

    root = tmp_path / "root"
    shutil.copytree(root_of("azure-vm-flat"), root, symlinks=True)
    azure = root / "opt" / "microsoft" / "ndv4" / "topo.xml"
    target = root / "var" / "run" / "nvidia-topologyd" / "virtualTopology.xml"
    target.parent.mkdir(parents=True)
    shutil.copy(azure, target)
    shutil.rmtree(root / "opt" / "microsoft")
    conf = root / "etc" / "nccl.conf"
    conf.write_text("".join(line for line in conf.read_text().splitlines(True) if "NCCL_TOPO_FILE" not in line))
    plan = build_plan(collect_features(str(root)))
    assert "NCCL_TOPO_FILE" not in plan.env
    assert gdr(plan)["paths_from"] == ("NCCL topology file /var/run/nvidia-topologyd/virtualTopology.xml "
                                       "(NCCL loads it itself while NCCL_TOPO_FILE is unset)")
    assert any("NCCL loads /var/run/nvidia-topologyd/virtualTopology.xml itself" in n
               for n in notes(plan, "nccl-topo-file"))
    assert len([p for p in gdr(plan)["pairs"] if p["path"] == "PIX"]) == 16
