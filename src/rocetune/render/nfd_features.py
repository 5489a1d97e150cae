"""node-feature-discovery's feature file (nfd-worker's `local` source reads every file of
/etc/kubernetes/node-feature-discovery/features.d/): doctor's verdict and the node's facts as node
labels, so a Kubernetes scheduler can select on them.

The format, from NFD's source/local/local.go (v0.14 to v0.20): one `name[=value]` a line, `#` a
comment, `# +expiry-time=RFC3339` a directive after which lines count only until then, at most
64 KiB. A name with a `ns/` prefix keeps it (nfd-master denies only `kubernetes.io` and its
sub-namespaces by default). So:

- rocetune's facts under its own prefix, `rocetune.io/` (health, roce-ready, rails, nccl,
  nccl-<kind>-plugin and its version);
- topology only under topograph's keys (v1.0.0 standardised them): `fabric.topograph.run/tier-1`,
  the leaf switches the node's rails reach (one name, or a name for the set). Nothing else of
  topograph's is known on a node (tier-2 needs the switches' cabling: `fleet topology`).

Every value is held to Kubernetes' label value syntax (at most 63 characters, `[A-Za-z0-9]`
at both ends, `-_.` inside); one that does not fit is left out, never cut. The labels expire
(`expiry`) so that a node whose checks stopped running does not keep saying it is healthy.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Dict, List, Optional

PREFIX = "rocetune.io/"
TIER1 = "fabric.topograph.run/tier-1"
VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?)$")
HEALTH = {"healthy": "pass", "warnings": "warn", "failing": "fail", "timeout": "fail", "tool-error": "unknown"}
_RAIL = re.compile(r"^rail\.(\d+)\.switch$")


def labels(status: str, facts: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """The node's labels from the gate's status (HEALTH's keys) and doctor's `fleet_facts`
    (fleet.facts.to_json's form); `facts` None when the checks gave no result."""
    health = HEALTH[status]
    out = {f"{PREFIX}health": health}
    facts = facts or {}

    def known(key: str) -> Any:
        entry = facts.get(key)
        return entry.get("value") if isinstance(entry, dict) and entry.get("known", True) else None

    rails = known("hca.count")
    rails = rails if isinstance(rails, int) and not isinstance(rails, bool) else None
    roce = rails is not None and rails > 0 and known("gid_index") not in (None, [])
    out[f"{PREFIX}roce-ready"] = "true" if roce and health in ("pass", "warn") else "false"
    if rails is not None:
        out[f"{PREFIX}rails"] = str(rails)
    versions = known("nccl.versions")
    if isinstance(versions, list) and versions:
        out[f"{PREFIX}nccl"] = "_".join(str(v) for v in versions)
    for text in known("nccl.plugins") or []:
        parts = str(text).split()
        if len(parts) >= 2 and re.match(r"^[a-z]+$", parts[0]):
            out[f"{PREFIX}nccl-{parts[0]}-plugin"] = parts[1]
            if len(parts) > 2:
                out[f"{PREFIX}nccl-{parts[0]}-plugin-version"] = parts[2]
    tier1 = _leaf_set(facts)
    if tier1:
        out[TIER1] = tier1
    return {k: v for k, v in out.items() if VALUE.match(v)}


def _leaf_set(facts: Dict[str, Any]) -> Optional[str]:
    """The switches every compute rail reaches, as one label value: the switch's name, the names
    joined by `_` where that fits, else a name made from them (the same on every node that
    reaches the same set). None unless every rail tells its switch."""
    rails = [(int(m.group(1)), v) for k, v in facts.items() if (m := _RAIL.match(k))]
    if not rails or not all(
        isinstance(v, dict) and v.get("known", True) and isinstance(v.get("value"), str) and v["value"]
        for _, v in rails
    ):
        return None
    leaves = sorted({v["value"] for _, v in rails})
    joined = "_".join(leaves)
    if VALUE.match(joined):
        return joined
    return "leafset-" + hashlib.sha256("\n".join(leaves).encode()).hexdigest()[:16]


def feature_file(found: Dict[str, str], expiry: str, node: str, version: str) -> str:
    lines: List[str] = [
        f"# node-feature-discovery feature file, written by rocetune {version} doctor on {_comment(node)}",
        f"# +expiry-time={expiry}",
    ]
    lines += [f"{k}={v}" for k, v in sorted(found.items())]
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)
