"""Fixture hosts: committed trees match their specs, embed real outputs byte-exact, and never
contradict the real `nvidia-smi topo -m` matrix they model.

The topology check reads only the generated files (sysfs links and attributes, recorded
commands), with a classifier written here independently of the builder's renderer.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import pytest

pytestmark = pytest.mark.slow  # rebuilds every fixture tree

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the fixture specs (pip install pyyaml)")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
HOSTS = os.path.join(FIXTURES, "hosts")
SPECS = os.path.join(FIXTURES, "specs")
CORPUS = os.path.join(FIXTURES, "corpus")
BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
TOPO = "commands/nvidia-smi_topo_-m.txt"
QUERY = "commands/nvidia-smi_--query-gpu=index,pci.bus_id,name_--format=csv,noheader.txt"


def spec_names() -> List[str]:
    return sorted(f[:-4] for f in os.listdir(SPECS) if f.endswith(".yml"))


def load_spec(name: str) -> dict:
    with open(os.path.join(SPECS, name + ".yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def read(root: str, rel: str) -> Optional[str]:
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def rdma_specs(spec: dict) -> Dict[str, dict]:
    """RDMA device name -> its spec entry: PCI functions (SR-IOV VF templates expanded), mlx5
    sub-functions (`pf` set to the PF's BDF) and Soft-RoCE devices (`soft` set)."""
    sys.path.insert(0, FIXTURES)
    from hostspec import expand_sriov

    out: Dict[str, dict] = {}
    for d in expand_sriov(spec["pci"]["devices"]):
        if d.get("rdma"):
            out[d["rdma"]] = d
        for sf in d.get("subfunctions") or []:
            out[sf["rdma"]] = dict(sf, pf=d["bdf"])
    for soft in spec.get("soft_rdma") or []:
        out[soft["rdma"]] = dict(soft, soft=True)
    return out


HOST_NAMES = spec_names()
TOPO_HOSTS = [n for n in HOST_NAMES if os.path.exists(os.path.join(HOSTS, n, TOPO))]


# ------------------------------------------------------------------------------------- builder
def test_committed_trees_are_up_to_date():
    proc = subprocess.run([sys.executable, os.path.join(FIXTURES, "hostspec.py"), "build", "--check"],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_spec_has_a_host_and_every_host_a_spec():
    hosts = sorted(d for d in os.listdir(HOSTS) if os.path.isdir(os.path.join(HOSTS, d)))
    assert hosts == HOST_NAMES


@pytest.mark.parametrize("name", HOST_NAMES)
def test_host_has_provenance(name):
    text = read(os.path.join(HOSTS, name), "PROVENANCE.md")
    assert text and len(text) > 400, "PROVENANCE.md missing or too short"
    assert "## Files taken byte-exact from the corpus" in text


@pytest.mark.parametrize("name", HOST_NAMES)
def test_embedded_corpus_outputs_are_byte_identical(name):
    spec = load_spec(name)
    for entry in spec.get("embed") or []:
        with open(os.path.join(CORPUS, entry["corpus"]), "rb") as fh:
            want = fh.read()
        with open(os.path.join(HOSTS, name, entry["to"]), "rb") as fh:
            got = fh.read()
        assert got == want, f"{entry['to']} differs from corpus/{entry['corpus']}"


def test_corpus_copies_have_provenance_lines():
    with open(os.path.join(CORPUS, "SOURCES-fixtures.md"), encoding="utf-8") as fh:
        sources = fh.read()
    for name in HOST_NAMES:
        for entry in load_spec(name).get("embed") or []:
            assert f"| {entry['corpus']} |" in sources, f"no provenance line for corpus/{entry['corpus']}"


@pytest.mark.parametrize("name", HOST_NAMES)
def test_links_are_relative_and_stay_inside_the_root(name):
    root = os.path.realpath(os.path.join(HOSTS, name))
    dangling = []
    for dirpath, dirnames, filenames in os.walk(root):
        for entry in dirnames + filenames:
            full = os.path.join(dirpath, entry)
            if not os.path.islink(full):
                continue
            target = os.readlink(full)
            assert not target.startswith("/"), f"absolute link {full} -> {target}"
            real = os.path.realpath(full)
            assert real.startswith(root + os.sep), f"{full} escapes the root"
            if not os.path.exists(real):
                dangling.append(os.path.relpath(full, root))
    assert not dangling, f"dangling links: {dangling[:5]}"


@pytest.mark.parametrize("name", HOST_NAMES)
def test_no_empty_directories(name):
    """git cannot keep an empty directory: a tree that needs one would differ after checkout."""
    root = os.path.join(HOSTS, name)
    for dirpath, dirnames, filenames in os.walk(root):
        assert dirnames or filenames, f"empty directory {os.path.relpath(dirpath, root)}"


def test_hosts_tree_stays_small():
    total = 0
    for dirpath, _, filenames in os.walk(HOSTS):
        for f in filenames:
            full = os.path.join(dirpath, f)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    assert total < 5 * 1024 * 1024, f"fixture hosts hold {total} bytes of file content"


# ------------------------------------------------------------------------------------- sysfs reading
class SysfsPci:
    """Reads the PCI tree of a root the way a sysfs reader does: through the bus links."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)
        self._paths: Dict[str, List[str]] = {}

    def path(self, bdf: str) -> List[str]:
        if bdf not in self._paths:  # a 530-column matrix asks for each device 1000 times
            self._paths[bdf] = self._path(bdf)
        return self._paths[bdf]

    def _path(self, bdf: str) -> List[str]:
        real = os.path.realpath(os.path.join(self.root, "sys/bus/pci/devices", bdf))
        assert real.startswith(self.root), real
        rel = os.path.relpath(real, os.path.join(self.root, "sys/devices")).split(os.sep)
        start = next(i for i, c in enumerate(rel) if re.fullmatch(r"pci[0-9a-f]{4}:[0-9a-f]{2}", c))
        comps = rel[start:]
        assert all(BDF_RE.match(c) for c in comps[1:]), comps
        assert comps[-1] == bdf
        return comps

    def numa(self, bdf: str) -> int:
        key = "numa:" + bdf
        if key not in self._paths:
            self._paths[key] = [read(self.root, f"sys/bus/pci/devices/{bdf}/numa_node").strip()]
        return int(self._paths[key][0])

    def classify(self, a: str, b: str) -> str:
        pa, pb = self.path(a), self.path(b)
        if pa[0] != pb[0]:
            na, nb = self.numa(a), self.numa(b)
            return "NODE" if na >= 0 and na == nb else "SYS"
        ca, cb = pa[1:-1], pb[1:-1]  # bridges, root port first
        k = 0
        while k < min(len(ca), len(cb)) and ca[k] == cb[k]:
            k += 1
        if k == 0:
            return "PHB"
        # Below a root port, PCIe alternates switch upstream ports (odd depth) and downstream
        # ports (even depth); a downstream port belongs to the switch of its parent.
        switches = set()
        for chain in (ca, cb):
            for depth in range(k - 1, len(chain)):
                if depth == 0:
                    switches.add(("root port", chain[0]))
                elif depth % 2:
                    switches.add(("switch", chain[depth]))
                else:
                    switches.add(("switch", chain[depth - 1]))
        return "PIX" if len(switches) == 1 else "PXB"


def parse_matrix(text: str) -> Tuple[List[str], Dict[str, Dict[str, str]], Dict[str, Tuple[str, str]], Dict[str, str]]:
    """Minimal `nvidia-smi topo -m` reader: columns, cells, GPU affinities, NIC legend."""
    lines = ANSI_RE.sub("", text).splitlines()
    header = next(line for line in lines if line.strip().startswith("GPU0"))
    cols = [c for c in re.split(r"\s+", header.strip()) if re.fullmatch(r"(GPU|NIC)\d+", c)]
    cells: Dict[str, Dict[str, str]] = {}
    aff: Dict[str, Tuple[str, str]] = {}
    for line in lines[lines.index(header) + 1:]:
        if not line.strip():
            break
        toks = line.split()
        name, values, rest = toks[0], toks[1:1 + len(cols)], toks[1 + len(cols):]
        cells[name] = dict(zip(cols, values))
        if name.startswith("GPU") and len(rest) >= 2:
            aff[name] = (rest[0], rest[1])
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", "\n".join(lines), re.M))
    return cols, cells, aff, legend


def gpu_bus_ids(root: str) -> List[str]:
    out = []
    for line in read(root, QUERY).splitlines():
        idx, busid, _ = [x.strip() for x in line.split(",", 2)]
        dom, rest = busid.split(":", 1)
        out.append(f"{int(dom, 16):04x}:{rest.lower()}")
    return out


def cpulist(text: str) -> List[int]:
    cpus: List[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        elif part:
            cpus.append(int(part))
    return cpus


@pytest.mark.parametrize("name", TOPO_HOSTS)
def test_pci_tree_yields_the_topo_matrix(name):
    root = os.path.join(HOSTS, name)
    cols, cells, aff, legend = parse_matrix(read(root, TOPO))
    pci = SysfsPci(root)
    gpus = gpu_bus_ids(root)
    devs: Dict[str, str] = {f"GPU{i}": bdf for i, bdf in enumerate(gpus)}
    for nic, ibdev in legend.items():
        link = os.path.join(root, "sys/class/infiniband", ibdev, "device")
        assert os.path.exists(link), f"{nic}: {ibdev} is not in /sys/class/infiniband"
        devs[nic] = os.path.basename(os.path.realpath(link))
    assert sorted(devs) == sorted(cols), "matrix columns and recorded devices differ"
    wrong = []
    for r in cols:
        for c in cols:
            if r == c:
                continue
            want = cells[r][c]
            if want.startswith("NV"):
                assert r.startswith("GPU") and c.startswith("GPU")
                continue
            got = pci.classify(devs[r], devs[c])
            if got != want:
                wrong.append(f"{r}({devs[r]})-{c}({devs[c]}): matrix {want}, sysfs {got}")
    assert not wrong, "\n".join(wrong)
    # CPU and NUMA affinity of each GPU agree with sysfs
    for gpu, (cpus, numa) in aff.items():
        bdf = devs[gpu]
        if numa.isdigit():
            assert pci.numa(bdf) == int(numa), gpu
            node_cpus = read(root, f"sys/devices/system/node/node{numa}/cpulist")
            assert cpulist(node_cpus) == cpulist(cpus), gpu
            assert cpulist(read(root, f"sys/bus/pci/devices/{bdf}/local_cpulist")) == cpulist(cpus), gpu


@pytest.mark.parametrize("name", HOST_NAMES)
def test_recorded_gpus_are_gpus_in_sysfs(name):
    root = os.path.join(HOSTS, name)
    if read(root, QUERY) is None:  # no nvidia-smi: the host has no GPU
        assert not os.path.exists(os.path.join(root, TOPO))
        for bdf in os.listdir(os.path.join(root, "sys/bus/pci/devices")):
            assert not read(root, f"sys/bus/pci/devices/{bdf}/class").startswith("0x03"), bdf
        return
    for bdf in gpu_bus_ids(root):
        cls = read(root, f"sys/bus/pci/devices/{bdf}/class").strip()
        assert cls.startswith("0x03"), (bdf, cls)
        assert os.readlink(os.path.join(root, f"sys/bus/pci/devices/{bdf}/driver")).endswith("/nvidia")


@pytest.mark.parametrize("name", HOST_NAMES)
def test_rdma_ports_are_consistent(name):
    """Each RDMA port: device link, netdev through the GID table, RoCE GIDs in mlx5 order."""
    root = os.path.join(HOSTS, name)
    ibroot = os.path.join(root, "sys/class/infiniband")
    if not os.path.isdir(ibroot):
        return
    for dev in sorted(os.listdir(ibroot)):
        port = os.path.join(ibroot, dev, "ports", "1")
        layer = read(port, "link_layer").strip()
        assert layer in ("Ethernet", "InfiniBand")
        assert re.fullmatch(r"\d: [A-Z_]+", read(port, "state").strip())
        assert re.fullmatch(r"\d+(\.\d+)? Gb/sec \(\d+X [A-Z]+\)", read(port, "rate").strip())  # rxe: 2.5
        gids = {int(i): read(port, f"gids/{i}").strip() for i in os.listdir(os.path.join(port, "gids"))}
        assert all(re.fullmatch(r"([0-9a-f]{4}:){7}[0-9a-f]{4}", g) for g in gids.values())
        types_dir = os.path.join(port, "gid_attrs", "types")
        types = {int(i): read(types_dir, i).strip() for i in os.listdir(types_dir)} if os.path.isdir(types_dir) else {}
        for i, t in types.items():
            assert t in ("IB/RoCE v1", "RoCE v2"), (dev, i, t)
            assert gids[i] != "0000:0000:0000:0000:0000:0000:0000:0000", (dev, i)
        if layer == "InfiniBand":
            assert gids[0].startswith("fe80:0000:0000:0000:"), dev
            node_guid = read(os.path.join(ibroot, dev), "node_guid").strip()
            assert gids[0].endswith(node_guid), dev
            continue
        ndev_dir = os.path.join(port, "gid_attrs", "ndevs")
        ndevs = {int(i): read(ndev_dir, i).strip() for i in os.listdir(ndev_dir)} if os.path.isdir(ndev_dir) else {}
        for i, nd in ndevs.items():
            assert os.path.lexists(os.path.join(root, "sys/class/net", nd)), (dev, i, nd)
        spec_dev = rdma_specs(load_spec(name))[dev]
        if spec_dev.get("soft"):
            # rxe: RoCE v2 only, one entry per address, link-local first
            assert types and all(t == "RoCE v2" for t in types.values()), dev
            assert gids[0].startswith("fe80:0000:0000:0000:") and sorted(types) == list(range(len(types))), dev
            continue
        if spec_dev.get("gids") is None and 0 in types:
            # the default mlx5 table: fe80 v1/v2 then each address as v1/v2
            assert types[0] == "IB/RoCE v1" and types[1] == "RoCE v2" and gids[0] == gids[1], dev
            for i in range(2, max(types) + 1, 2):
                assert types[i] == "IB/RoCE v1" and types[i + 1] == "RoCE v2" and gids[i] == gids[i + 1]


@pytest.mark.parametrize("name", HOST_NAMES)
def test_net_interfaces_match_ip_addr_recording(name):
    import json

    root = os.path.join(HOSTS, name)
    text = read(root, "commands/ip_-j_addr_show.txt")
    if text is None:
        return
    links = json.loads(text)
    names = sorted(link["ifname"] for link in links)
    assert names == sorted(os.listdir(os.path.join(root, "sys/class/net")))
    for link in links:
        d = os.path.join(root, "sys/class/net", link["ifname"])
        assert int(read(d, "mtu")) == link["mtu"]
        assert int(read(d, "ifindex")) == link["ifindex"]
        assert read(d, "address").strip() == link["address"]


AUX_HOSTS = [n for n in HOST_NAMES if any(d.get("pf") or d.get("soft") for d in rdma_specs(load_spec(n)).values())]


@pytest.mark.parametrize("name", AUX_HOSTS)
def test_rdma_devices_without_a_pci_function_have_the_kernel_layout(name):
    """mlx5 SFs hang below their PF as auxiliary devices; rxe devices are virtual, with `parent`."""
    root = os.path.realpath(os.path.join(HOSTS, name))
    for dev, spec in sorted(rdma_specs(load_spec(name)).items()):
        ibdir = os.path.realpath(os.path.join(root, "sys/class/infiniband", dev))
        if spec.get("pf"):
            sf = os.path.realpath(os.path.join(ibdir, "device"))
            assert os.path.basename(sf) == f"mlx5_core.sf.{spec['aux']}", dev
            assert os.path.basename(os.path.dirname(sf)) == spec["pf"], dev
            assert os.path.realpath(os.path.join(root, "sys/bus/auxiliary/devices", os.path.basename(sf))) == sf
            assert read(sf, "sfnum").strip() == str(spec["sfnum"]), dev
            assert os.readlink(os.path.join(sf, "driver")).endswith("/auxiliary/drivers/mlx5_core.sf")
            netdev = os.path.realpath(os.path.join(root, "sys/class/net", spec["netdev"], "device"))
            assert netdev == sf, f"{spec['netdev']} is not below {sf}"
            assert not os.path.exists(os.path.join(sf, "config")), "an SF is not a PCI function"
        elif spec.get("soft"):
            assert ibdir == os.path.join(root, "sys/devices/virtual/infiniband", dev), dev
            assert not os.path.lexists(os.path.join(ibdir, "device")), f"{dev}: rxe has no parent device"
            assert read(ibdir, "parent").strip() == spec["netdev"], dev
            assert read(ibdir, "fw_ver") == "\n" and not os.path.exists(os.path.join(ibdir, "board_id"))
            assert os.path.isdir(os.path.join(root, "sys/class/net", spec["netdev"])), dev


# ------------------------------------------------------------------------------------- captures
def test_captures_are_the_archives_their_readme_records():
    """A real capture is kept byte-exact: its sha256 is the one recorded beside it."""
    sys.path.insert(0, FIXTURES)
    from roots import CAPTURES_DIR, capture_sha256, captured_hosts

    readme = read(CAPTURES_DIR, "README.md") or ""
    assert captured_hosts(), "no capture found"
    for name in captured_hosts():
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{name}.tar.gz`")), "")
        assert capture_sha256(name) in row, f"{name}.tar.gz is not the archive README.md records"
