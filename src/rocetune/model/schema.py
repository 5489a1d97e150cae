"""The shape of a Features document (schema_version 1), and a checker that names the first
field that is wrong: `rdma.devices[3].ports[0].port: expected an integer, got "1"`.

A saved Features file is user input (`--features FILE`): it may be hand-edited, truncated or
from another tool. Everything the rules, the analysis, lint and the renderers read is described
here, so a bad file is an input error with the field's path, never a crash deep in a rule.

Notation: a type name ("str", "int", "num", "bool"), "?" after it for "may be null", a list of
one spec for "list of", a dict for an object (keys ending in "?" are optional; "*" describes the
values of a map keyed by name). Keys the schema does not describe are not checked: an older
file's `findings`, say, which rocetune now computes when it reports (rocetune.checks).
"""

from __future__ import annotations

from typing import Any, List, Optional

_GID = {"index": "int", "gid": "str", "type": "str?", "ndev": "str?", "ipv4": "ip?", "ipv6": "ip?"}
_PORT = {"port": "int", "state": "str?", "phys_state": "str?", "link_layer": "str?", "rate": "str?",
         "rate_gbps": "num?", "netdev": "str?", "netdev_mtu": "int?", "roce_mtu": "int?",
         "gids": [_GID], "roce_v2_ipv4_gids": ["int"], "roce_v2_ipv6_gids": ["int"]}
_RDMA_DEVICE = {"name": "str", "pci": "str?", "ports": [_PORT], "node_type?": "str?",
                "function?": "str", "numa_node?": "int?", "parent_netdev?": "str?", "auxiliary?": "str?",
                "node_guid?": "str?", "fw_ver?": "str?", "hca_type?": "str?", "board_id?": "str?",
                "ports_known?": "bool"}
_LINK = {"speed": "str?", "width": "int?", "max_speed": "str?", "max_width": "int?", "degraded": "bool"}
_PCI_DEVICE = {"bdf": "str", "kind": "str", "vendor": "str?", "device": "str?", "class": "str?",
               "driver": "str?", "numa_node": "int?", "parent": "str?", "root_complex": "str?",
               "switches": ["str"], "link": {"?": True, **_LINK}, "sriov": {"?": True, "total_vfs": "int?",
                                                                       "num_vfs": "int?", "physfn": "str?"}}
_ADDRESS = {"family": "str", "address": "ip", "prefixlen": "prefix?"}
_INTERFACE = {"name": "str", "kind": "str", "operstate": "str?", "carrier": "bool?", "mtu": "int?",
              "speed_mbps": "int?", "driver": "str?", "pci": "str?", "master": "str?",
              "slaves": ["str"], "addresses": [_ADDRESS], "default_route": "bool",
              "connected_networks?": ["str"]}
_ROUTE = {"interface": "str", "dest": "ip", "prefixlen": "prefix", "gateway": "ip?"}
_DEFAULT_ROUTE = {"interface": "str", "family": "str", "metric": "int"}
_NEAREST = {"device": "str", "port": "int?", "path": "str", "netdev": "str?", "link_layer": "str?",
            "state": "str?"}
_GPU = {"index": "int", "bdf": "str?", "name": "str?", "numa_node": "int?", "cpu_affinity": "str?",
        "nvlink": {"*": "int"}, "nearest_nics": [_NEAREST]}
_PAIR = {"gpu": "int", "nic": "str", "path": "str", "sysfs": "str?", "nvidia_smi": "str?"}
_NCCL_LIBRARY = {"path": "str", "version": "str?", "how": "str?", "package": "str?", "environment": "str?",
                 "via": ["str"]}
_NCCL = {"?": True, "path": "str?", "version": "str?", "basis?": "str", "libraries?": [_NCCL_LIBRARY],
         "python_environments?": ["str"], "declared?": {"version": "str", "by": "str"}}
_SOURCE = {"ok": "bool", "reason": "str?", "warnings": ["str"]}

FEATURES = {
    "schema_version": "int",
    "tool?": {"name": "str", "version": "str"},
    "host": {"hostname": "str?", "kernel_release": "str?", "logical_cpus": "int?",
             "numa_nodes": [{"id": "int", "cpulist": "str?"}], "hypervisor?": "str?",
             "cpu?": {"arch": "str?", "arch_from": "str?", "vendor_id": "str?", "family": "int?",
                      "model": "int?"},
             "virtualization": {"hypervisor": "str?", "flattened": "bool", "reasons": ["str"]}},
    "sources?": {"*": _SOURCE},
    "pci": {"devices": [_PCI_DEVICE]},
    "net": {"interfaces": [_INTERFACE], "default_route_interfaces": ["str"], "addresses_known?": "bool",
            "routes?": [_ROUTE], "default_routes?": [_DEFAULT_ROUTE], "addresses_source?": "str?"},
    "rdma": {"devices": [_RDMA_DEVICE], "known?": "bool", "unknown_reason?": "str?", "from_tools?": "str"},
    "verbs?": {"via": "str?", "devices": ["any"], "disagreements": ["str"]},
    "gpu?": {"matrix": {"?": True, "gpus": ["any"], "nics": [{"index": "int", "name": "str?"}],
                        "links": {"*": {"*": "str"}}},
             "bus_ids": {"*": "str"}, "names": {"*": "str"}},
    "gpus": [_GPU],
    "topology": {"gpu_nic": [_PAIR], "disagreements": ["str"]},
    "kernel": {"modules?": {"*": "bool"}, "builtin_modules?": ["str"], "peer_memory?": {"*": "bool"}, "memlock?": "str?",
               "cmdline?": {"iommu": "str?", "intel_iommu": "str?", "amd_iommu": "str?", "acs": ["str"]},
               "iommu_groups?": "int?", "nccl?": _NCCL,
               "sysctl?": {"*": "str?"},
               "nvidia_driver?": {"?": True, "version": "str?", "open": "bool"},
               "libibverbs?": {"?": True, "rdma_core": "int", "path": "str"}},
    "declared?": {"files": [{"path": "str", "kind": "str", "values": {"*": "str"}, "ignored": "str?"}],
                  "topology_files": [{"path": "str", "vendor": "str?", "exists": "bool",
                                      "declared_by": "str?", "read_error?": "str?",
                                      "nodes?": [{"tag": "str", "attrs": {"*": "str"},
                                                  "parent": "int?"}]}]},
    "qos?": {"interfaces": {"*": {"tool": "str", "trust": "str?", "dscp_prio": {"*": "int"},
                                  "pfc_enabled": ["int"]}}},
}

_TYPES = {"str": (str,), "int": (int,), "num": (int, float), "bool": (bool,), "ip": (str,), "prefix": (int,)}
_NAMES = {"str": "a string", "int": "an integer", "num": "a number", "bool": "true or false",
          "ip": "an IP address", "prefix": "a prefix length 0..128"}


def _valid_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_FORMATS = {"ip": _valid_ip, "prefix": lambda n: 0 <= n <= 128}


def check(doc: Any, spec: Any = None, path: str = "") -> Optional[str]:
    """None when `doc` fits `spec` (the Features schema by default), else the first problem."""
    return _check(doc, FEATURES if spec is None else spec, path or "")


def _where(path: str) -> str:
    return path.lstrip(".") or "the document"


def _got(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(value: Any, spec: Any, path: str) -> Optional[str]:
    if spec == "any":
        return None
    if isinstance(spec, str):
        nullable = spec.endswith("?")
        base = spec.rstrip("?")
        if value is None:
            return None if nullable else f"{_where(path)}: expected {_NAMES[base]}, got null"
        if isinstance(value, bool) and base in ("int", "num"):
            return f"{_where(path)}: expected {_NAMES[base]}, got {_got(value)}"
        if not isinstance(value, _TYPES[base]) or not _FORMATS.get(base, lambda _v: True)(value):
            return f"{_where(path)}: expected {_NAMES[base]}, got {_got(value)}"
        return None
    if isinstance(spec, list):
        if not isinstance(value, list):
            return f"{_where(path)}: expected a list, got {_got(value)}"
        for i, item in enumerate(value):
            problem = _check(item, spec[0], f"{path}[{i}]")
            if problem:
                return problem
        return None
    if value is None and spec.get("?"):
        return None
    if not isinstance(value, dict):
        return f"{_where(path)}: expected an object, got {_got(value)}"
    if "*" in spec:
        for key in sorted(value, key=str):
            problem = _check(value[key], spec["*"], f"{path}.{key}")
            if problem:
                return problem
        return None
    for key, sub in spec.items():
        if key == "?":
            continue
        name, optional = (key[:-1], True) if key.endswith("?") else (key, False)
        if name not in value:
            if optional:
                continue
            return f"{_where(path + '.' + name)}: missing"
        problem = _check(value[name], sub, f"{path}.{name}")
        if problem:
            return problem
    return None
