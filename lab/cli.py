"""The lab's command line: `python3 -m lab up N [--systemd | --vm] | status | ssh HOST CMD |
pid HOST | deps | down` (docs/lab.md). `down` takes both tiers down."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional, Sequence

from lab import netns, vm, vm_image


def _print_status(st: dict) -> None:
    mode = "systemd" if st["systemd"] else "overlay"
    print(f"phase: {st['phase']}  mode: {mode}  state: {st['state_dir']}")
    if st["inventory"]:
        print(f"inventory: {st['inventory']}")
    for h in st["hosts"]:
        print(f"  {h['name']:<8} {h['ip'] or '-':<15} netns={'yes' if h['netns'] else 'no':<3} "
              f"ssh={'yes' if h['ssh'] else 'no'}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab", description="rocetune multi-host lab")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="bring up N hosts (tears down a running lab first)")
    p_up.add_argument("n", type=int)
    p_up.add_argument("--systemd", action="store_true", help="boot real systemd in every host")
    p_up.add_argument("--vm", action="store_true",
                      help="boot N QEMU VMs with Soft-RoCE instead (vm01..; see lab/vm.py)")
    p_up.add_argument("--timeout", type=float, default=None, help="readiness timeout per lab (s)")
    sub.add_parser("down", help="remove everything the lab created (namespace hosts and VMs)")
    p_st = sub.add_parser("status", help="list hosts and whether ssh works")
    p_st.add_argument("--json", action="store_true")
    p_ssh = sub.add_parser("ssh", help="ssh to a lab host as root")
    p_ssh.add_argument("host")
    p_ssh.add_argument("command", nargs=argparse.REMAINDER)
    p_pid = sub.add_parser("pid", help="print the machine's PID of a host's PID 1 (for nsenter)")
    p_pid.add_argument("host")
    p_deps = sub.add_parser("deps", help="install what the lab needs, then exit")
    p_deps.add_argument("--systemd", action="store_true")
    p_deps.add_argument("--vm", action="store_true", help="also build the VM image")
    args = parser.parse_args(argv)

    try:
        if args.cmd == "up" and args.vm:
            started = time.monotonic()
            vms = vm.up(args.n, timeout=args.timeout)
            for name, ip in vms.hosts:
                print(f"{name}\t{ip}\tfabric {' '.join(vms.fabric[name])}\t"
                      f"boot {vms.boot_seconds[name]:.1f}s")
            print(f"inventory: {netns.INVENTORY}")
            print(f"up: {len(vms.hosts)} VMs ({vms.accel.upper()}: {vms.accel_reason}) in "
                  f"{time.monotonic() - started:.1f}s; try: ansible vm -m ansible.builtin.ping")
        elif args.cmd == "up":
            started = time.monotonic()
            hosts = netns.up(args.n, systemd=args.systemd, timeout=args.timeout)
            took = time.monotonic() - started
            for name, ip in hosts.hosts:
                print(f"{name}\t{ip}")
            print(f"inventory: {hosts.inventory}")
            print(f"up: {len(hosts.hosts)} hosts ({'systemd' if hosts.systemd else 'overlay'}) "
                  f"in {took:.1f}s; try: ansible lab -m ansible.builtin.ping")
        elif args.cmd == "down":
            started = time.monotonic()
            netns.down()
            vm.down()
            print(f"down in {time.monotonic() - started:.1f}s")
        elif args.cmd == "status":
            st = netns.status()
            if args.json:
                print(json.dumps(st, indent=2, sort_keys=True))
            else:
                _print_status(st)
            return 0 if st["up"] else 3
        elif args.cmd == "ssh":
            if args.host.startswith("vm") or args.host.startswith("198.18.1."):
                    cmd = vm.ssh_command(args.host)
            else:
                cmd = netns.ssh_command(netns._resolve(args.host))
            if args.command:
                cmd += ["--", " ".join(args.command)]  # like ssh itself
            os.execvp(cmd[0], cmd)
        elif args.cmd == "pid":
            pid = netns.host_pid(args.host)
            if pid is None:
                raise netns.LabError(f"{args.host}: no such lab host is running")
            print(pid)
        elif args.cmd == "deps":
            netns._require_root()
            netns.ensure_deps(args.systemd)
            if args.systemd:
                netns.ensure_rootfs()
            if args.vm:
                img = vm_image.ensure_image()
                print(f"VM image {img.key}: {img.dir}")
    except netns.LabError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
    return 0
