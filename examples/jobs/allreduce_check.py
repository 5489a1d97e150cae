#!/usr/bin/env python3
"""A torch.distributed Gloo all_reduce across hosts that checks every element of the result.

Run by a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun does;
examples/jobs/gloo_allreduce.sh starts torchrun on each host). The sockets Gloo opens follow
GLOO_SOCKET_IFNAME, which must come from the env file rocetune wrote on the host
(/etc/rocetune/nccl.env): this job proves the emitted interface variables work for a real
client. It is not a speed test (a CPU all_reduce), though it prints the bandwidth it saw.

Rank r contributes (i mod 251) + r at element i, so the sum at i is W*(i mod 251) + W(W-1)/2:
an exact float32 value for any world size below ~60000, compared element by element.

Rank 0 prints one line, e.g.
  allreduce_check: PASS world=4 backend=gloo iface=rtl0 hosts=node01,node02,node03,node04
  size=32.0MiB iters=5 moved=240.0MB time=0.612s busbw=0.39GB/s
where moved is what each rank sent in all (a ring all_reduce sends 2(W-1)/W of the buffer per
call) and busbw = moved / time (NCCL-tests' convention). Exit 0 on PASS, 1 on a wrong
result, 2 on a setup problem (missing env, unknown interface).
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import socket
import struct
import sys
import time
import warnings


def fail_setup(message: str) -> None:
    sys.stderr.write(f"allreduce_check: error: {message}\n")
    sys.exit(2)


def ipv4_of(ifname: str) -> str:
    """The IPv4 address of an interface (SIOCGIFADDR), or '' when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = struct.pack("256s", ifname.encode()[:15])
            return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])
        except OSError:
            return ""


def gather_strings(dist, torch, world: int, fields: list) -> list:
    """all_gather of a few short strings per rank (all_gather_object would need numpy)."""
    width = 512
    raw = json.dumps(fields).encode()[:width].ljust(width, b" ")
    mine = torch.tensor(list(raw), dtype=torch.uint8)
    bufs = [torch.empty(width, dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(bufs, mine)
    return [json.loads(bytes(b.tolist()).decode()) for b in bufs]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--size-mb", type=float, default=32.0, help="buffer size in MiB (default 32)")
    p.add_argument("--iters", type=int, default=5, help="timed all_reduce calls (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls first (default 1)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds for rendezvous and each collective")
    p.add_argument("--allow-no-env", action="store_true",
                   help="run even if GLOO_SOCKET_IFNAME is unset (Gloo then picks an interface itself)")
    args = p.parse_args()

    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            fail_setup(f"{var} is not set: start this under torchrun or examples/jobs/gloo_allreduce.sh")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    iface = os.environ.get("GLOO_SOCKET_IFNAME", "")
    if not iface and not args.allow_no_env:
        fail_setup("GLOO_SOCKET_IFNAME is not set: source the env file rocetune wrote "
                   "(/etc/rocetune/nccl.env) before starting the job")
    for name in filter(None, iface.split(",")):
        if not os.path.exists(f"/sys/class/net/{name}"):
            fail_setup(f"GLOO_SOCKET_IFNAME={iface}: no interface {name} on {socket.gethostname()}")
    first_if = iface.split(",")[0] if iface else ""
    my_addr = ipv4_of(first_if) if first_if else ""

    warnings.filterwarnings("ignore", message=".*NumPy.*")  # CPU torch without numpy: harmless
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
    try:
        n = max(1, int(args.size_mb * (1 << 20)) // 4)
        pattern = (torch.arange(n, dtype=torch.int64) % 251).to(torch.float32)
        expected = pattern * world + world * (world - 1) / 2
        buf = torch.empty(n, dtype=torch.float32)

        def one_call() -> bool:
            torch.add(pattern, float(rank), out=buf)
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            return torch.equal(buf, expected)

        ok = True
        for _ in range(args.warmup):
            ok &= one_call()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            ok &= one_call()
        elapsed = time.perf_counter() - start

        bad_at = ""
        if not ok:
            idx = int(torch.nonzero(buf != expected)[0])
            bad_at = f"index {idx}: got {float(buf[idx])} want {float(expected[idx])}"
        # Everyone learns whether everyone passed, the slowest time, and who used what.
        failed = torch.tensor([0 if ok else 1], dtype=torch.int64)
        slowest = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(failed, op=dist.ReduceOp.SUM)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        who = gather_strings(dist, torch, world, [socket.gethostname(), first_if, my_addr, bad_at])
    finally:
        dist.destroy_process_group()

    failures, slowest = int(failed[0]), float(slowest[0])
    if rank == 0:
        size = n * 4
        moved = 2 * (world - 1) / world * size * args.iters
        ifaces = sorted({w[1] or "?" for w in who})
        line = (f"allreduce_check: {'PASS' if failures == 0 else 'FAIL'} world={world} backend=gloo "
                f"iface={','.join(ifaces)} hosts={','.join(w[0] for w in who)} "
                f"size={size / (1 << 20):.1f}MiB iters={args.iters} moved={moved / 1e6:.1f}MB "
                f"time={slowest:.3f}s busbw={moved / slowest / 1e9 if slowest > 0 else 0:.2f}GB/s")
        if failures:
            line += " wrong: " + "; ".join(f"rank {r} ({w[0]}) {w[3]}" for r, w in enumerate(who) if w[3])
        print(line, flush=True)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
