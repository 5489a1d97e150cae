"""local-rank: the GPU, nearest compute NIC, NUMA node and CPUs of each local rank.

Launchers that bind ranks (mpirun --map-by/--bind-to, srun --cpu-bind, numactl wrappers, UCX)
need, per local rank, the GPU it drives and what is close to that GPU. Local rank N drives the
N-th GPU in nvidia-smi order (the convention of torchrun, Slurm and mpirun with one rank per GPU).
Its NIC is one of the compute ports nearest that GPU; GPUs that share the same nearest ports are
spread over them in turn. The table is always in the plan (`ranks`); with `--local-rank N` the
env also carries that rank's row as ROCETUNE_* variables (and the ucx-net-devices rule narrows
UCX_NET_DEVICES to its ports):

    ROCETUNE_GPU          GPU index (nvidia-smi order)
    ROCETUNE_GPU_BUS_ID   its PCI address
    ROCETUNE_NUMA_NODE    its NUMA node
    ROCETUNE_CPUS         CPU list to bind the rank to (numactl -C / taskset -c syntax)
    ROCETUNE_NIC          its nearest compute port (device:port)

CUDA_VISIBLE_DEVICES is deliberately not set: frameworks index GPUs by LOCAL_RANK and would see
a renumbered device.

NCCL_IGNORE_CPU_AFFINITY is not set either. With its default 0 NCCL pins its threads to the
intersection of the job's CPU mask and the GPU's NUMA CPUs, and leaves the mask alone when that
intersection is empty (2.30.7 src/init.cc:1158-1162, src/graph/topo.cc:2148-2172). It matters
only where a launcher binds each rank to CPUs away from its GPU -- mpirun's default
`--bind-to core`/`socket`, `srun --cpu-bind`, Slurm's task/affinity plugin -- and then 1 makes
NCCL's threads use the GPU-local CPUs regardless (Azure and OCI ship 1 for that reason). Bind
ranks to ROCETUNE_CPUS instead, or set it with --set NCCL_IGNORE_CPU_AFFINITY=1 for such
launchers; a declared value (/etc/nccl.conf) is kept as declared.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..checks import declare
from ..checks.binding import emits
from ..errors import ExitCode, RocetuneError
from ..model.plan import Decision

ID = "local-rank"


declare(
    id="local-rank-no-affinity", kind="rule", severity="warning",
    by=("local-rank",),
    title="No CPU affinity known for a GPU",
    checks="Whether the GPU of the requested local rank has local CPUs in the Features.",
    reads="/sys/bus/pci/devices/BDF/local_cpulist, nvidia-smi topo -m (CPU Affinity).",
    why="Without it a rank cannot be bound next to its GPU and NIC; NCCL's proxy threads then "
        "cross the CPU interconnect.",
    fix="probe the host itself (a container may hide NUMA); bind ranks by hand",
    source="NCCL user guide, NCCL_IGNORE_CPU_AFFINITY",
)


def ranks(ctx) -> List[Dict[str, Any]]:
    host = ctx.host
    numa_cpus = {n.get("id"): n.get("cpulist") for n in (ctx.features.get("host") or {}).get("numa_nodes", [])}
    gpus = sorted(host.gpus, key=lambda g: int(g["index"]))
    seen: Dict[tuple, int] = {}
    out = []
    for rank, g in enumerate(gpus):
        near = host.compute_ports_of_gpu(g)
        names = tuple(p.name for p in near)
        nic: Optional[str] = None
        if names:
            k = seen.get(names, 0)
            seen[names] = k + 1
            nic = names[k % len(names)]
        numa = g.get("numa_node")
        cpus = g.get("cpu_affinity") or (numa_cpus.get(numa) if numa is not None else None)
        paths = host.gpu_paths()
        out.append({
            "local_rank": rank,
            "gpu": int(g["index"]),
            "gpu_bus_id": g.get("bdf"),
            "numa_node": numa,
            "cpus": cpus,
            "nic": nic,
            "nearest_nics": list(names),
            "nic_path": paths.get(nic.split(":")[0], {}).get(int(g["index"])) if nic else None,
        })
    return out


@emits("local-rank-no-affinity")
def rule(features: dict, ctx) -> List[Decision]:
    table = ranks(ctx)
    ctx.ranks.extend(table)
    if ctx.local_rank is None:
        return []
    if not table:
        raise RocetuneError(f"--local-rank {ctx.local_rank}: this host has no GPU",
                            code=ExitCode.USAGE)
    if not 0 <= ctx.local_rank < len(table):
        raise RocetuneError(f"--local-rank {ctx.local_rank}: this host has {len(table)} GPU(s), "
                            f"local ranks 0..{len(table) - 1}", code=ExitCode.USAGE)
    row = table[ctx.local_rank]
    ev = {"rank": row}
    why = f"local rank {ctx.local_rank} drives GPU{row['gpu']}"
    out = [
        ctx.decision("ROCETUNE_GPU", row["gpu"], f"{why} (nvidia-smi order)", **ev),
    ]
    if row["gpu_bus_id"]:
        out.append(ctx.decision("ROCETUNE_GPU_BUS_ID", row["gpu_bus_id"], f"PCI address of GPU{row['gpu']}", **ev))
    if row["numa_node"] is not None:
        out.append(ctx.decision("ROCETUNE_NUMA_NODE", row["numa_node"], f"NUMA node of GPU{row['gpu']}", **ev))
    if row["cpus"]:
        out.append(ctx.decision("ROCETUNE_CPUS", row["cpus"],
                                f"CPUs local to GPU{row['gpu']}: bind the rank here", **ev))
    else:
        ctx.finding("local-rank-no-affinity", "warning", f"GPU{row['gpu']}",
                    f"no CPU affinity known for GPU{row['gpu']} (container without NUMA info?)",
                    gpu=row["gpu"], numa_node=row["numa_node"])
    if row["nic"]:
        out.append(ctx.decision("ROCETUNE_NIC", row["nic"],
                                f"compute port nearest GPU{row['gpu']} ({row['nic_path'] or '?'})", **ev))
    return out
