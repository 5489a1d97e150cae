"""The desired state of every host of a fleet (YAML, docs/fleet.md), as checks on the facts.

```yaml
mtu: 9000
gid_index: 3
hca_count: 8
hcas: [mlx5_0:1, mlx5_3:1]
nccl_version: "2.21.5"      # every NCCL library found is this release
kernel: 5.15.0-1042-nvidia
nic_driver: mlx5_core
nic_fw: 28.39.1002
link: {speed: 32, width: 16, rate_gbps: 400}   # PCIe GT/s and lanes of NICs and GPUs; RDMA port rate
env: {NCCL_IB_HCA: "=mlx5_0:1", NCCL_IB_GID_INDEX: null}   # null: the plan must not set it
rails: [leaf-r0, leaf-r1]   # the switch (LLDP SysName) rail 0, 1, ... of every host reaches
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..errors import ExitCode, RocetuneError
from .facts import Fact

MAX_MANIFEST_BYTES = 1 << 20  # a manifest is a few dozen lines


@dataclass(frozen=True)
class ManifestEntry:
    """One desired value of the manifest: the fact it holds every host to, and the key that asked."""

    fact: str
    desired: str  # the desired state, for people
    fits: Callable[[Fact], bool]
    source: str  # the manifest key


def load(path: str) -> List[ManifestEntry]:
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input
    from ..model.yamlread import YamlError, load_yaml

    try:
        text = read_input(path, MAX_MANIFEST_BYTES).decode("utf-8")
    except HostReadError as exc:
        raise RocetuneError(f"--manifest {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"--manifest {path}: cannot read: {exc.strerror}", code=ExitCode.INPUT) from None
    except UnicodeDecodeError:
        raise RocetuneError(f"--manifest {path}: not UTF-8 text", code=ExitCode.INPUT) from None
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise RocetuneError(f"--manifest {path}: {exc}", code=ExitCode.INPUT) from None
    try:
        return checks(doc)
    except ValueError as exc:
        raise RocetuneError(f"--manifest {path}: {exc}", hint="docs/fleet.md lists the manifest keys",
                            code=ExitCode.INPUT) from None


def checks(doc: Any) -> List[ManifestEntry]:
    """The checks a parsed manifest asks for; ValueError naming the key that is wrong."""
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise ValueError("expected a mapping of desired values")
    out: List[ManifestEntry] = []
    for key in doc:
        if key not in _KEYS:
            raise ValueError(f"unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
    for key, value in doc.items():
        out.extend(_KEYS[key](key, value))
    return out


def _int(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: expected a whole number, got {value!r}")
    return value


def _str(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{key}: expected a text value, got {value!r}")
    return str(value)


def _all_equal(fact: str, key: str, want: Any) -> ManifestEntry:
    return ManifestEntry(fact, str(want), lambda f: f.known and f.value == [want], key)


def _mtu(key, v):
    return [_all_equal("mtu", key, _int(key, v))]


def _gid(key, v):
    return [_all_equal("gid_index", key, _int(key, v))]


def _hca_count(key, v):
    n = _int(key, v)
    return [ManifestEntry("hca.count", str(n), lambda f: f.known and f.value == n, key)]


def _hcas(key, v):
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"{key}: expected a list of ports such as mlx5_0:1")
    want = sorted(v)
    return [ManifestEntry("hca.names", ", ".join(v), lambda f: f.known and sorted(f.value or []) == want, key)]


def _nccl(key, v):
    text = _str(key, v)
    if not re.match(r"^\d+\.\d+\.\d+\Z", text):
        raise ValueError(f"{key}: expected a release like 2.21.5, got {text!r}")
    return [_all_equal("nccl.versions", key, text)]


def _kernel(key, v):
    text = _str(key, v)
    return [ManifestEntry("kernel", text, lambda f: f.known and f.value == text, key)]


def _driver(key, v):
    return [_all_equal("nic.driver", key, _str(key, v))]


def _fw(key, v):
    return [_all_equal("nic.fw", key, _str(key, v))]


_GTS = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(?:GT/s)?(?:\s*PCIe)?\s*\Z")


def _link(key, v):
    if not isinstance(v, dict):
        raise ValueError(f"{key}: expected a mapping with speed, width, rate_gbps")
    out = []
    for sub in v:
        if sub not in ("speed", "width", "rate_gbps"):
            raise ValueError(f"{key}.{sub}: unknown key (known: speed, width, rate_gbps)")
    if "speed" in v:
        m = _GTS.match(str(v["speed"]))
        if not m or isinstance(v["speed"], bool):
            raise ValueError(f"{key}.speed: expected PCIe GT/s such as 32 or \"32.0 GT/s\", got {v['speed']!r}")
        speed = f"{float(m.group(1)):.1f} GT/s"
        for fact in ("pcie.nic", "pcie.gpu"):
            out.append(ManifestEntry(fact, f"{speed} (every device)", _each(lambda s, sp=speed: s.split(" x")[0] == sp),
                             f"{key}.speed"))
    if "width" in v:
        width = _int(f"{key}.width", v["width"])
        for fact in ("pcie.nic", "pcie.gpu"):
            out.append(ManifestEntry(fact, f"x{width} (every device)",
                             _each(lambda s, w=width: s.split(" x")[1].split(" ")[0] == str(w)), f"{key}.width"))
    if "rate_gbps" in v:
        rate = v["rate_gbps"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise ValueError(f"{key}.rate_gbps: expected a number, got {rate!r}")
        rate = int(rate) if float(rate).is_integer() else rate
        out.append(_all_equal("rdma.rate_gbps", f"{key}.rate_gbps", rate))
    return out


def _each(ok: Callable[[str], bool]) -> Callable[[Fact], bool]:
    def fits(f: Fact) -> bool:
        return f.known and bool(f.value) and all(" x" in s and ok(s) for s in f.value)
    return fits


def _env(key, v):
    if not isinstance(v, dict):
        raise ValueError(f"{key}: expected a mapping of variable names to values (null: not set)")
    out = []
    for name, want in v.items():
        if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*\Z", name):
            raise ValueError(f"{key}: {name!r} is not a variable name")
        text: Optional[str] = None if want is None else _str(f"{key}.{name}", want)
        out.append(ManifestEntry(f"env.{name}", "(unset)" if text is None else text,
                         lambda f, t=text: f.known and f.value == t, f"{key}.{name}"))
    return out


def _rails(key, v):
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise ValueError(f"{key}: expected a list of switch names (LLDP SysName), rail 0 first")
    return [ManifestEntry(f"rail.{i}.switch", name, lambda f, n=name: f.known and f.value == n, f"{key}[{i}]")
            for i, name in enumerate(v)]


_KEYS: Dict[str, Callable[[str, Any], List[ManifestEntry]]] = {
    "mtu": _mtu, "gid_index": _gid, "hca_count": _hca_count, "hcas": _hcas, "nccl_version": _nccl,
    "kernel": _kernel, "nic_driver": _driver, "nic_fw": _fw, "link": _link, "env": _env,
    "rails": _rails,
}
