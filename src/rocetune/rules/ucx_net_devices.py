"""ucx-net-devices: UCX (MPI, UCC, Slurm PMIx) uses the same devices as NCCL.

UCX does not read NCCL_IB_HCA. Without UCX_NET_DEVICES it may stripe over every RDMA port,
storage and front-end ports included. On a host with compute RDMA ports the value lists them in
UCX's `device:port` form (`mlx5_0:1,mlx5_3:1`); with `--local-rank N` only the ports nearest that
rank's GPU, for launchers that bind one rank per GPU. On a host without usable RDMA it names the
socket interface chosen by the socket-ifname rule. Devices named only by a pasted
`nvidia-smi topo -m` (no port numbers) give nothing: UCX needs the port.
"""

from __future__ import annotations

from typing import List

from ..model.plan import Decision

ID = "ucx-net-devices"


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if sel.names_only:
        if sel.chosen:
            ctx.note("UCX_NET_DEVICES needs device:port names and nvidia-smi topo -m gives no port "
                     "numbers: not set (run rocetune on the host)")
        return []
    if sel.chosen:
        ports = sel.chosen
        scope = "every compute RDMA port"
        if ctx.local_rank is not None:
            gpus = ctx.host.gpus
            if 0 <= ctx.local_rank < len(gpus):
                near = ctx.host.compute_ports_of_gpu(gpus[ctx.local_rank])
                if near:
                    ports = near
                    gpu = gpus[ctx.local_rank]["index"]
                    scope = f"the compute ports nearest GPU{gpu} (local rank {ctx.local_rank})"
        return [ctx.decision("UCX_NET_DEVICES", ",".join(p.name for p in ports),
                             f"{scope}, as NCCL_IB_HCA; UCX would otherwise also use storage and "
                             "front-end ports", ports=[p.name for p in ports])]
    if sel.rdma_visible or ctx.host.plugin_cloud():
        iface, why, _ = ctx.host.socket_interface()
        if iface is not None:
            return [ctx.decision("UCX_NET_DEVICES", iface["name"],
                                 f"no usable RDMA port: UCX's TCP transport on {iface['name']} ({why})",
                                 interface=iface["name"])]
    return []
