#!/usr/bin/env python3
"""Build src/rocetune/nccl/data/nccl_vars.json, rocetune's own catalog of NCCL environment variables.

Input: a JSON inventory of the variables one NCCL release reads (name, default, type, category,
whether env.rst documents it) plus the names that circulate but are not read. Output: the compact
catalog that `rocetune lint` and `rocetune explain` use at run time (no network, no source tree).

    python3 tools/build_nccl_catalog.py PATH/TO/nccl-vars.json [-o src/rocetune/nccl/data/nccl_vars.json]

The inventory supplies facts (which names exist, their defaults and types). What rocetune says
about them (kinds, checked ranges, the retired names and their replacements) is curated below and
cross-checked against the inventory: the build fails when the inventory names a retired variable
this table does not cover, or when a range is given for a variable NCCL does not read.
The output is deterministic (sorted keys, fixed indentation), so re-running it on the same
input gives the same bytes.

The inventory is of one release (2.30.7). NEWER lists the names later releases added, each with the
first release that reads it and where that is read (a file at the release's tree, its env.rst, or its
release notes); they enter the catalog with `since` and `source`, so lint knows them and can say a
name is newer than the host's NCCL. tools/nccl_var_releases.py checks them against a release tree
when one is given (--tree).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "src", "rocetune", "nccl", "data", "nccl_vars.json")

# Checked value ranges (inclusive) for variables where a wrong number silently misbehaves.
# Sources: NCCL's env documentation and the code paths named in the knowledge base.
RANGES: Dict[str, Tuple[int, int]] = {
    "NCCL_IB_TIMEOUT": (0, 31),           # 5-bit QP attribute: 4.096 us * 2^N, 0 = no timeout
    "NCCL_IB_RETRY_CNT": (0, 7),          # 3-bit QP attribute
    "NCCL_IB_TC": (0, 255),               # GRH traffic class byte: DSCP << 2 | ECN
    "NCCL_IB_FIFO_TC": (0, 255),
    "NCCL_GIN_IB_TC": (0, 255),
    "NCCL_IB_SL": (0, 15),                # 4-bit service level
    "NCCL_IB_QPS_PER_CONNECTION": (1, 128),
    "NCCL_IB_GID_INDEX": (-1, 255),       # sgid_index is 8 bits; -1 = auto-select
    "NCCL_IB_ROCE_VERSION_NUM": (1, 2),
    "NCCL_SOCKET_NTHREADS": (1, 16),
    "NCCL_NSOCKS_PERTHREAD": (1, 64),
    "NCCL_IB_PCI_RELAXED_ORDERING": (0, 2),
    "NCCL_CROSS_NIC": (0, 2),
    "NCCL_IB_SPLIT_DATA_ON_QPS": (0, 1),
    "NCCL_IB_DISABLE": (0, 1),
    "NCCL_IB_MERGE_NICS": (0, 1),
    "NCCL_IB_ADAPTIVE_ROUTING": (0, 1),
}

# Enumerations checked by lint: (choices, case-sensitive?). NCCL compares the address families
# with strcmp (anything else silently means AF_INET); the debug level is case-insensitive.
ENUMS: Dict[str, Tuple[List[str], bool]] = {
    "NCCL_IB_ADDR_FAMILY": (["AF_INET", "AF_INET6"], True),
    "NCCL_SOCKET_FAMILY": (["AF_INET", "AF_INET6"], True),
    # ATTN: a 2.32-era src/debug.cc (NCCL_DEBUG's options: VERSION, WARN, ATTN, INFO, ABORT, TRACE)
    "NCCL_DEBUG": (["VERSION", "WARN", "ATTN", "INFO", "ABORT", "TRACE"], False),
}

# Path-level variables: a level name or a legacy integer.
PATH_LEVELS = ["LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"]
LEVEL_VARS = {"NCCL_NET_GDR_LEVEL": 5, "NCCL_P2P_LEVEL": 5}  # highest legacy integer accepted

# Short descriptions rocetune shows for the variables it plans or checks (our wording).
DESCRIPTIONS: Dict[str, str] = {
    "NCCL_IB_HCA": "which RDMA devices/ports NCCL may use; '=' makes names exact, '^' excludes",
    "NCCL_IB_GID_INDEX": "GID table index for RoCE; -1 (from 2.21.5) lets NCCL pick the first IPv4 RoCE v2 GID",
    "NCCL_IB_ADDR_FAMILY": "address family NCCL's GID auto-selection looks for (AF_INET or AF_INET6)",
    "NCCL_IB_ADDR_RANGE": "CIDR the auto-selected RoCE GID must fall in",
    "NCCL_IB_TC": "traffic class byte of RoCE packets (DSCP << 2 | ECN bits)",
    "NCCL_IB_SL": "service level; the VLAN priority of RoCE packets under PCP trust",
    "NCCL_IB_FIFO_TC": "traffic class of the receiver's credit (CTS) messages",
    "NCCL_IB_QPS_PER_CONNECTION": "queue pairs per connection (flows for ECMP/LAG hashing)",
    "NCCL_IB_DISABLE": "1 = do not use the verbs (IB/RoCE) transport",
    "NCCL_IB_TIMEOUT": "RC ACK timeout exponent: 4.096 us * 2^N",
    "NCCL_IB_RETRY_CNT": "RC retransmissions before a QP errors out",
    "NCCL_SOCKET_IFNAME": "interfaces for bootstrap and the socket transport; '=' exact, '^' excludes",
    "NCCL_SOCKET_NTHREADS": "helper threads per socket connection (socket transport)",
    "NCCL_NSOCKS_PERTHREAD": "sockets per helper thread (socket transport)",
    "NCCL_TOPO_FILE": "topology XML loaded before detection; its values win",
    "NCCL_NET_GDR_LEVEL": "farthest GPU-NIC path on which GPUDirect RDMA is used",
    "NCCL_ALGO": "restrict collective algorithms",
    "NCCL_PROTO": "restrict protocols",
}

# Names NCCL does not read, with what to do instead (our wording; facts from the inventory).
RETIRED: Dict[str, Dict[str, Any]] = {
    "NCCL_TOPOLOGY_AWARE": {"status": "never-existed", "replacement": None,
                            "note": "NCCL is always topology aware; to correct what it sees use "
                                    "NCCL_TOPO_FILE, NCCL_CROSS_NIC or NCCL_NETDEVS_POLICY"},
    "NCCL_IB_MTU": {"status": "never-existed", "replacement": None,
                    "note": "the RDMA MTU follows the interface MTU (RoCE) or the port's "
                            "active_mtu; set the netdev MTU instead"},
    "NCCL_IB_ECN": {"status": "never-existed", "replacement": "NCCL_IB_TC",
                    "note": "ECN bits are the low two bits of NCCL_IB_TC"},
    "NCCL_IB_DSCP": {"status": "never-existed", "replacement": "NCCL_IB_TC",
                     "note": "DSCP is NCCL_IB_TC >> 2; set NCCL_IB_TC = DSCP << 2 | ECN"},
    "NCCL_IB_ROCE_VERSION": {"status": "misspelled", "replacement": "NCCL_IB_ROCE_VERSION_NUM",
                             "note": "the variable ends in _NUM"},
    "NCCL_IB_RETRY_COUNT": {"status": "misspelled", "replacement": "NCCL_IB_RETRY_CNT",
                            "note": "the variable is spelled _CNT"},
    "NCCL_USE_ROCE": {"status": "never-existed", "replacement": None,
                      "note": "RoCE is used automatically when a port's link layer is Ethernet"},
    "NCCL_IB_ENABLE": {"status": "never-existed", "replacement": "NCCL_IB_DISABLE",
                       "note": "the verbs transport is on unless NCCL_IB_DISABLE=1"},
    "NCCL_SHARP_ENABLE": {"status": "never-existed", "replacement": "NCCL_COLLNET_ENABLE",
                          "note": "SHARP comes through the CollNet plugin (NCCL_COLLNET_ENABLE=1)"},
    "NCCL_P2P_NET_DISABLE": {"status": "never-existed", "replacement": None,
                             "note": "no such switch; see NCCL_NET_DISABLE_INTRA or NCCL_P2P_DISABLE"},
    "NCCL_IB_GDR_LEVEL": {"status": "removed", "replacement": "NCCL_NET_GDR_LEVEL", "since": "2.4.0",
                          "note": "renamed in NCCL 2.4.0"},
    "NCCL_IB_CUDA_SUPPORT": {"status": "removed", "replacement": "NCCL_NET_GDR_LEVEL", "since": "2.4.0",
                             "note": "removed in NCCL 2.4.0"},
    "NCCL_LL_THRESHOLD": {"status": "removed", "replacement": None, "since": "2.5",
                          "note": "removed in NCCL 2.5; protocol choice is tuned per size"},
    "NCCL_TREE_THRESHOLD": {"status": "removed", "replacement": None, "since": "2.5",
                            "note": "removed in NCCL 2.5; algorithm choice is tuned per size"},
    "NCCL_SINGLE_RING_THRESHOLD": {"status": "removed", "replacement": None, "since": "2.3",
                                   "note": "removed in NCCL 2.3"},
    "NCCL_CHECKS_DISABLE": {"status": "removed", "replacement": None, "since": "2.2.12",
                            "note": "deprecated in NCCL 2.2.12 and no longer read"},
    "NCCL_ASYNC_ERROR_HANDLING": {"status": "pytorch", "replacement": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                  "note": "a PyTorch ProcessGroupNCCL setting, never read by libnccl"},
    "NCCL_BLOCKING_WAIT": {"status": "pytorch", "replacement": "TORCH_NCCL_BLOCKING_WAIT",
                           "note": "a PyTorch ProcessGroupNCCL setting, never read by libnccl"},
}

# Prefixes of variables that NCCL network/tuner/profiler plugins read (not libnccl itself).
PLUGIN_PREFIXES: Dict[str, str] = {
    "NCCL_GPUDIRECTTCPX_": "Google GPUDirect-TCPX net plugin",
    "NCCL_FASTRAK_": "Google GPUDirect-TCPXO (FasTrak) net plugin",
    "NCCL_OFI_": "aws-ofi-nccl (libfabric/EFA) net plugin",
    "NCCL_TUNER_": "tuner plugin",
    "NCCL_INSPECTOR_": "inspector (profiler) plugin",
    "NCCL_PROFILE_": "example profiler plugin",
}

# Names first read after the inventory's release: (first release, default, kind, category, source).
# 2.31.2: NVIDIA/nccl v2.31.2-1 at commit 889806836 (the public code index holds its tree); 2.32.3: its
# release notes (NVIDIA/nccl#2419), or a 2.32-era tree in the code index whose commit is not identified.
_T2312 = "v2.31.2-1 (889806836) "
NEWER: Dict[str, Tuple[str, Optional[str], str, str, str]] = {
    "NCCL_IB_EVENT_BASED_LB": ("2.31.2", "0", "int", "ib", _T2312 + "src/transport/net_ib/common.cc "
                               "NCCL_PARAM(IbEventBasedLb); env.rst (since 2.31)"),
    "NCCL_IB_EVENT_BASED_LB_REMOTE": ("2.31.2", "1", "int", "ib",
                                      _T2312 + "src/transport/net_ib/common.cc NCCL_PARAM(IbEventBasedLbRemote)"),
    "NCCL_IB_PKEY_VALUE": ("2.31.2", "-1", "int", "ib", _T2312 + "docs/userguide/source/env.rst (since 2.31)"),
    "NCCL_RMA_EAGER_INIT": ("2.31.2", "0", "int", "misc", _T2312 + "docs/userguide/source/env.rst (since 2.31)"),
    "NCCL_GIN_PROXY_NTHREADS": ("2.31.2", "1", "int", "gin",
                                _T2312 + "src/gin/gin_host.cc NCCL_PARAM(GinProxyNthreads)"),
    "NCCL_RUN_DIAGNOSTICS": ("2.31.2", "0", "int", "debug",
                             _T2312 + "docs/userguide/source/troubleshooting/diagnostics.rst"),
    "NCCL_RUN_RAS_DIAGNOSTICS": ("2.31.2", "0", "int", "debug",
                                 _T2312 + "docs/userguide/source/troubleshooting/ras.rst (RAS Diagnostics)"),
    "NCCL_WIN_REGISTER_GIN": ("2.32.3", None, "int", "gin", "2.32.3 release notes (NVIDIA/nccl#2419)"),
    "NCCL_HIER_CE_COLL_AG_RAIL_RING_ENABLE": ("2.32.3", None, "int", "tuning",
                                              "2.32.3 release notes (NVIDIA/nccl#2419, PR #2299)"),
    "NCCL_DEBUG_LEVELS": ("2.32.3", None, "string", "debug",
                          "a 2.32-era src/debug.cc (DEFINE_NCCL_PARAM ncclParamDebugLevels) in the public code "
                          "index, commit not identified"),
    "NCCL_LOG_PLUGIN": ("2.32.3", None, "path", "plugin",
                        "a 2.32-era log plugin loader in the public code index (libnccl-log-<name>.so, "
                        "ncclLogPlugin_v1), commit not identified"),
}

_SENTINELS = {
    "-2": "auto",
    "-1": "unset: falls back to ncclConfig_t or a built-in value",
    "NCCL_CONFIG_UNDEF_INT": "taken from ncclConfig_t, else automatic",
}


# What a sentinel default means for one variable, where the generic text above would mislead
# (read in the code that uses the value, NVIDIA/nccl 2.30.7).
DEFAULT_MEANS: Dict[str, str] = {
    "NCCL_IB_GID_INDEX": "NCCL scans each port's GID table itself (ncclIbGetGidIndex, "
                         "src/transport/net_ib/connect.cc:298-335; auto-selection since 2.21.5)",
    "NCCL_IB_TC": "the application's ncclConfig_t.trafficClass, else 0 (connect.cc:996-1001; since 2.26.2)",
    "NCCL_IB_SL": "the application's ncclConfig_t.trafficClass, else 0 (connect.cc:996-1001; since 2.26.2)",
    "NCCL_IB_FIFO_TC": "CTS messages keep the connection's traffic class (connect.cc:1245-1247)",
}


def _kind(var: Dict[str, Any]) -> str:
    name, typ = var["name"], (var.get("type") or "").lower()
    if name in LEVEL_VARS:
        return "path-level"
    if name in ENUMS or typ.startswith("enum"):
        return "enum"
    if typ.startswith("int") or typ.startswith("uint"):
        return "int"
    if typ == "bool":
        return "bool"
    if typ.startswith("path"):
        return "path"
    return "string"


_EXPR_RE = re.compile(r"^[0-9()\s*+<LlUu-]+$")


def _default(raw: Any) -> Tuple[Optional[str], bool]:
    """(default as text, symbolic?) -- C expressions like `128 * 1024` are evaluated."""
    if raw is None or raw in ("nullptr", "NULL"):
        return None, False
    text = str(raw).strip()
    if re.fullmatch(r"-?\d+", text):
        return text, False
    if _EXPR_RE.match(text):
        expr = re.sub(r"(?<=\d)[LlUu]+", "", text)
        if re.fullmatch(r"[0-9()\s*+<-]+", expr) and ("<<" in expr or "*" in expr):
            try:
                value = _eval_int(expr)
                return str(value), False
            except ValueError:
                pass
    return text, True


def _eval_int(expr: str) -> int:
    tokens = re.findall(r"\d+|<<|[()*+-]", expr)
    if "".join(tokens) != re.sub(r"\s+", "", expr):
        raise ValueError(expr)
    pos = 0

    def atom() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            value = shift()
            pos += 1  # ')'
            return value
        if tok == "-":
            return -atom()
        return int(tok)

    def product() -> int:
        nonlocal pos
        value = atom()
        while pos < len(tokens) and tokens[pos] == "*":
            pos += 1
            value *= atom()
        return value

    def total() -> int:
        nonlocal pos
        value = product()
        while pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            value = value + product() if op == "+" else value - product()
        return value

    def shift() -> int:
        nonlocal pos
        value = total()
        while pos < len(tokens) and tokens[pos] == "<<":
            pos += 1
            value <<= total()
        return value

    result = shift()
    if pos != len(tokens):
        raise ValueError(expr)
    return result


def _split_names(key: str) -> List[str]:
    return [part.strip() for part in key.split("/") if part.strip()]


def build(inventory: Dict[str, Any]) -> Dict[str, Any]:
    variables: Dict[str, Dict[str, Any]] = {}
    for var in inventory["variables"]:
        name = var["name"]
        if not name.startswith("NCCL_"):
            continue  # CUDA/HOME/DOCA names NCCL happens to read are not NCCL settings
        default, symbolic = _default(var.get("default"))
        entry: Dict[str, Any] = {
            "default": default,
            "kind": _kind(var),
            "category": var.get("category"),
            "documented": bool(var.get("documented_in_env_rst")),
        }
        if symbolic:
            entry["default_symbolic"] = True
        if name in DEFAULT_MEANS:
            entry["default_means"] = DEFAULT_MEANS[name]
        elif default in _SENTINELS:
            entry["default_means"] = _SENTINELS[default]
        if name in RANGES:
            entry["min"], entry["max"] = RANGES[name]
        if name in ENUMS:
            choices, case = ENUMS[name]
            entry["choices"] = choices
            entry["case_sensitive"] = case
        if name in LEVEL_VARS:
            entry["choices"] = PATH_LEVELS
            entry["case_sensitive"] = False
            entry["max_legacy_int"] = LEVEL_VARS[name]
        if name in DESCRIPTIONS:
            entry["description"] = DESCRIPTIONS[name]
        variables[name] = entry

    for name, (since, default, kind, category, source) in sorted(NEWER.items()):
        if name in variables:
            raise SystemExit(f"catalog inconsistent:\n  {name} is in NEWER but the inventory's release reads it")
        variables[name] = {"default": default, "kind": kind, "category": category,
                           "documented": "env.rst" in source or ".rst" in source, "since": since, "source": source}
    problems = []
    for name in list(RANGES) + list(ENUMS) + list(LEVEL_VARS) + list(DESCRIPTIONS):
        if name not in variables:
            problems.append(f"{name} is curated here but the inventory says NCCL does not read it")
    listed = set()
    for key in inventory.get("not_in_nccl", {}):
        for name in _split_names(key):
            listed.add(name)
            if name not in RETIRED:
                problems.append(f"inventory lists {name} as not read by NCCL; add it to RETIRED")
    for item in inventory.get("checked_list", []):
        if not item.get("exists_in_nccl_2_30_7", True) and item["name"] not in RETIRED:
            problems.append(f"{item['name']} does not exist; add it to RETIRED")
    for name in RETIRED:
        if name in variables:
            problems.append(f"{name} is in RETIRED but the inventory says NCCL reads it")
        repl = RETIRED[name].get("replacement")
        if repl and repl.startswith("NCCL_") and repl not in variables:
            problems.append(f"replacement {repl} of {name} is not read by NCCL")
    if problems:
        raise SystemExit("catalog inconsistent:\n  " + "\n  ".join(problems))

    version = str(inventory.get("nccl_version", "")).split()[0] or None
    return {
        "schema": 1,
        "source": {"nccl_version": version, "repo": inventory.get("repo"),
                   "commit": inventory.get("commit"),
                   "newest": max((v[0] for v in NEWER.values()), key=lambda t: tuple(int(x) for x in t.split(".")),
                                 default=version)},
        "variables": variables,
        "retired": RETIRED,
        "plugin_prefixes": PLUGIN_PREFIXES,
    }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inventory", help="the NCCL variable inventory JSON (e.g. nccl-vars.json)")
    ap.add_argument("-o", "--out", default=DEFAULT_OUT, help="catalog to write (default: %(default)s)")
    args = ap.parse_args(argv)
    with open(args.inventory, encoding="utf-8") as fh:
        inventory = json.load(fh)
    catalog = build(inventory)
    text = json.dumps(catalog, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    out = os.path.normpath(args.out)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, out)
    print(f"{out}: {len(catalog['variables'])} variables, {len(catalog['retired'])} retired names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
