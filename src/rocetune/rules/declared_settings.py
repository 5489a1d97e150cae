"""declared-settings: the NCCL settings the host's owner already declares stay as declared.

Cloud and cluster vendors ship NCCL settings that encode what no host probe can see -- the
switch QoS classes (OCI's NCCL_IB_TC=41), the fabric's ECMP depth, a topology file for a VM that
hides its PCI tree (Azure's NCCL_TOPO_FILE=/opt/microsoft/<shape>/topo.xml), a net plugin's tuning
(GCP's gIB set_nccl_env.sh says "These parameters should not be modified"). The probe's
`declared` source reads them through the root; this rule carries every declared NCCL_* value into
the plan unchanged, with the file it came from, and every other rule leaves a declared key alone:

* a value rocetune would choose differently from defaults alone is kept, with a note;
* a value the host's own evidence contradicts (a declared NCCL_IB_HCA that misses the active
  compute ports, a GID index that is not a RoCE v2 IPv4 GID, a topology file that does not exist,
  a traffic class the NICs map to a lossy priority) is kept too, and a `declared-contradicted`
  finding shows the evidence;
* only an explicit override (`--set KEY=VALUE`) replaces a declared value.

Why the values must be in rocetune's output: NCCL reads /etc/nccl.conf only when nothing earlier
set the name (src/misc/param.cc: setenv(name, value, 0); order: environment, $NCCL_CONF_FILE or
~/.nccl.conf, /etc/nccl.conf). rocetune's own /etc/nccl.conf replaces the vendor's (the agent
role keeps a backup), so the vendor's lines must survive in it; they are written there under a
`# rule: declared-settings` comment. Names libnccl itself does not read (a tuner or net plugin's
own variables) are not carried: they stay in the vendor's env file, and a warning names them.
"""

from __future__ import annotations

from typing import List

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import KEY_RE, Decision
from ..nccl.catalog import load_catalog

ID = "declared-settings"


declare(
    id="declared-topo-missing", kind="rule", severity="warning",
    by=("declared-settings",),
    title="A declared NCCL_TOPO_FILE does not exist",
    checks="The file a declared NCCL_TOPO_FILE names.",
    reads="The declared NCCL_TOPO_FILE (the Features `declared.topology_files[]`) and whether "
          "that path exists under the root.",
    why="NCCL only logs 'Could not open XML topology file' at INFO level and detects the topology "
        "itself: on a VM whose PCI tree is flattened, that silently loses the GPU-NIC pairing and "
        "GPUDirect RDMA the file was there to give.",
    fix="install the file (a cloud image's topology package, e.g. Azure's /opt/microsoft/ndv4/topo.xml) "
        "or remove the declaration so rule nccl-topo-file can plan one",
    source="NVIDIA/nccl v2.30.7-1 src/graph/xml.cc (ncclTopoGetXmlFromFile: a missing file is an "
           "INFO message, not an error).",
)

declare(
    id="declared-not-nccl", kind="rule", severity="warning",
    by=("declared-settings",),
    title="Declared variables NCCL does not read",
    checks="Variables in the host's own NCCL files (/etc/nccl.conf, a vendor env script) that "
           "libnccl does not read.",
    reads="The declared files (the Features `declared.files`) and NCCL's variables (nccl_vars.json).",
    why="They stay in the vendor's file: an nccl.conf written by rocetune would not carry them.",
    fix="add them with --set if they belong to a plugin or the job",
    source="NVIDIA/nccl v2.28.9-1 src/misc/param.cc (what libnccl reads)",
)


@emits("declared-not-nccl", "declared-topo-missing")
def rule(features: dict, ctx) -> List[Decision]:
    decl = features.get("declared") or {}
    for f in decl.get("files", []):
        if f.get("ignored"):
            ctx.note(f"{f['path']} ignored: {f['ignored']}")
    cat = load_catalog()
    out: List[Decision] = []
    skipped = []
    for key, entry in sorted(ctx.declared.items()):
        if not KEY_RE.match(key) or not cat.known(key):
            skipped.append(f"{key} ({entry['source']})")
            continue
        out.append(ctx.decision(key, entry["value"],
                                f"declared by the host's owner in {entry['source']}: kept as declared",
                                source=entry["source"], kind=entry["kind"]))
    if skipped:
        ctx.finding("declared-not-nccl", "warning", "declared",
                    "declared but not read by libnccl, so not carried into rocetune's files (they stay "
                    "in the vendor's file; add them with --set if rocetune's nccl.conf replaces it): "
                    + ", ".join(skipped), names=skipped)
    for t in decl.get("topology_files", []):
        if t.get("declared_by") and not t.get("exists"):
            ctx.finding("declared-topo-missing", "warning", "NCCL_TOPO_FILE",
                        f"NCCL_TOPO_FILE={t['path']} (declared in {t['declared_by']}) does not exist: NCCL "
                        "only logs 'Could not open XML topology file' at INFO level and detects the "
                        "topology itself (src/graph/xml.cc)", file=t["path"], declared_by=t["declared_by"])
    return out
