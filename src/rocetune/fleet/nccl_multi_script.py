"""One rank of `fleet validate --tests nccl-multi`, started by the scheduler (srun) on each node with
the node's own env already sourced. Sent inline (base64 on the command line), run by the python
that has PyTorch: an all_reduce across every rank of the job, timed, its result checked.

With a GPU the backend is NCCL (what a training job uses; NCCL_DEBUG=INFO prints what it chose).
Without one it is Gloo, PyTorch's CPU collective library, on the interface NCCL_SOCKET_IFNAME names
(resolved as NCCL resolves it: prefixes, `=` exact, `^` exclude): NOT NCCL -- a stand-in that proves
the launch, the rendezvous and the socket path of the env, and says so in its result line.

Its arguments: the size in MiB, the timed iterations, the nodes' rendezvous addresses as
`node=address,...` (rank 0's node, the job's first in Slurm's order, holds the rendezvous), the port.

Prints one line per rank:
rocetune-nccl-multi: rank R world W backend B host H iface I ok=True bytes=N seconds=S algbw_gbs=A busbw_gbs=B
"""

import datetime
import os
import re
import socket
import sys
import time


def socket_ifaces(spec, names):
    """NCCL_SOCKET_IFNAME against the node's interfaces: `^` excludes, `=` matches exactly,
    otherwise each comma-separated entry is a prefix (NCCL's ncclFindInterfaces)."""
    if not spec:
        return []
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    wanted = [w for w in body.split(",") if w]

    def match(n):
        return any(n == w if exact else n.startswith(w) for w in wanted)
    return [n for n in names if n != "lo" and (not match(n) if exclude else match(n))]


def hostnames(nodelist):
    """The job's nodes in Slurm's order (rank 0 runs on the first): `scontrol show hostnames`, else
    the simple forms of a hostlist (`a,b`, `node[01-04,07]`)."""
    import subprocess

    try:
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=20).stdout.split()
        if out:
            return out
    except (OSError, subprocess.SubprocessError):
        pass
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", nodelist):
        m = re.match(r"^(.*)\[(.*)\]$", part)
        if not m:
            names.append(part)
            continue
        for r in m.group(2).split(","):
            lo, _, hi = r.partition("-")
            for n in range(int(lo), int(hi or lo) + 1):
                names.append("%s%0*d" % (m.group(1), len(lo), n))
    return names


def main(argv):
    size_mb, iters, addresses, port = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    # rank 0 holds the rendezvous: its node is the first of the job's, in Slurm's order
    table = dict(item.split("=", 1) for item in addresses.split(",") if "=" in item)
    first = hostnames(os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST", ""))
    master = table.get(first[0], first[0]) if first else table.get("", addresses)
    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    local = int(os.environ.get("SLURM_LOCALID", "0"))
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    iface = os.environ.get("NCCL_SOCKET_IFNAME", "")
    if not cuda:
        names = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
        found = socket_ifaces(iface, names)
        if found:
            os.environ["GLOO_SOCKET_IFNAME"] = ",".join(found)
        iface = os.environ.get("GLOO_SOCKET_IFNAME", "")
    os.environ.update(MASTER_ADDR=master, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=120))
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(local)
    n = size_mb * 2 ** 20 // 4
    x = torch.ones(n, dtype=torch.float32, device=device)
    check = torch.full((16,), float(rank + 1), device=device)
    dist.all_reduce(check)
    ok = bool((check == world * (world + 1) / 2).all().item())
    for _ in range(2):
        dist.all_reduce(x)
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    if cuda:
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / iters
    nbytes = n * 4
    algbw = nbytes / seconds / 1e9
    busbw = algbw * 2 * (world - 1) / world
    print("rocetune-nccl-multi: rank %d world %d backend %s host %s iface %s ok=%s bytes=%d seconds=%.6f "
          "algbw_gbs=%.4f busbw_gbs=%.4f" % (rank, world, backend, socket.gethostname(), iface or "-", ok,
                                            nbytes, seconds, algbw, busbw), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
