"""Sent to a node by `fleet validate --nccl` and run there by the python that has PyTorch: two
ranks of a real NCCL all_reduce on the node's first GPU, each with its own NCCL_HOSTID, so NCCL
takes them for two hosts and connects them through its network transport (IB/RoCE where the env
names RDMA devices, else sockets), reading every variable of the env as a job would. NCCL
refuses two ranks on one GPU of one host ("Duplicate GPU detected"); NCCL_HOSTID is what it
takes the host identity from (src/misc/utils.cc getHostHash, NCCL 2.x).

Prints NCCL's own INFO lines (stderr of the ranks) and one line per rank:
`rocetune-nccl-check: rank R ok=True|False bytes=B seconds=S busbw_gbs=G`. Needs nothing from
rocetune; the process's environment is the job's env (the caller sources it first).
Arguments: SIZE_MB ITERS PORT; the caller writes this file on the node and runs it (each rank
runs it again with its RANK appended).
"""

import os
import subprocess
import sys
import time


def rank_main(rank, size_mb, iters, port):
    import torch
    import torch.distributed as dist

    os.environ["NCCL_HOSTID"] = "rocetune-check-%d" % rank
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2)
    x = torch.ones((size_mb << 20) // 4, device="cuda")
    dist.all_reduce(x)  # warm-up: connections are made here
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    x.fill_(1.0)
    dist.all_reduce(x)
    ok = float(x[0].item()) == 2.0
    nbytes = x.numel() * 4
    # nccl-tests' bus bandwidth for all_reduce: algbw * 2(n-1)/n, with n = 2 ranks
    busbw = nbytes * iters / seconds / 1e9 if seconds > 0 else 0.0
    print("rocetune-nccl-check: rank %d ok=%s bytes=%d seconds=%.6f busbw_gbs=%.3f"
          % (rank, ok, nbytes, seconds, busbw), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


def main(argv):
    size_mb, iters, port = int(argv[0]), int(argv[1]), int(argv[2])
    if len(argv) > 3:
        return rank_main(int(argv[3]), size_mb, iters, port)
    me = os.path.abspath(__file__)
    procs = [subprocess.Popen([sys.executable, me, str(size_mb), str(iters), str(port), str(rank)])
             for rank in (0, 1)]
    return max(p.wait() for p in procs)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
