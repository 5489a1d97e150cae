"""Two rails for namespace lab hosts, each behind its own "switch": a network namespace per rail
(`rtlab-rail0`, `rtlab-rail1`) holding a bridge and Debian's lldpd as the switch's LLDP agent
(SysName `leaf-rail0`/`leaf-rail1`, port IDs the switch port names), and in each host the two
rail interfaces of the softroce-3nic host, `ens4` (rail 0) and `ens5` (rail 1), addressed on the
rail subnets 198.19.20.0/24 and 198.19.21.0/24 (.10 + the host's number), with lldpd on them.

The hosts answer ARP only for the receiving interface's addresses (arp_ignore=1, arp_announce=2,
as the roce_net role sets them on rail hosts); their earlier values come back with `remove()`.

`cross(host)` moves that host's two cables to each other's switch; `route(True)` joins the rail
subnets through a router (a veth between the switch namespaces, forwarding on, a gateway .1 on
each bridge, and a route to the other rail's subnet on each host interface); `route(False)`
takes it away. Everything lives in lab namespaces: `netns.down()` removes it with them; `remove()`
takes it away earlier and stops the lldpd daemons it started (by their pid).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from lab import netns

RAILS = 2
HOST_IFS = ("ens4", "ens5")
SWITCH_NS = "rtlab-rail{}"
LEAF = "leaf-rail{}"
BRIDGE = "railbr"
ROUTER_IF = "uplink"
HOST_PIDFILE = "/run/lldpd-rails.pid"


def subnet(rail: int) -> str:
    return f"198.19.{20 + rail}"


def rail_ip(rail: int, host_ip: str) -> str:
    return f"{subnet(rail)}.{host_ip.rsplit('.', 1)[1]}"


def port_name(host: str, ifname: str) -> str:
    """The switch port a host interface is cabled to: `n03-ens4` (names the cable)."""
    return f"n{host[-2:]}-{ifname}"


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise netns.LabError(f"ip {' '.join(args)}: {proc.stdout.strip()}")


class Rails:
    def __init__(self, info: netns.LabInfo):
        self.info = info
        self.switch_lldpd: List[subprocess.Popen] = []
        # The switches' lldpd sockets: lldpcli drops to lldpd's user, which may not enter the
        # lab's state directory (0700).
        self.state = Path(tempfile.mkdtemp(prefix="rtlab-lldpd-"))
        self.state.chmod(0o755)

    # --- wiring -------------------------------------------------------------------------------
    ARP = {"net.ipv4.conf.all.arp_ignore": "1", "net.ipv4.conf.all.arp_announce": "2"}

    def add(self) -> None:
        self.saved_sysctl = {}
        for name, _ in self.info.hosts:
            keys = " ".join(self.ARP)
            self.saved_sysctl[name] = netns.run_on(name, f"sysctl -n {keys}").stdout.split()
            netns.run_on(name, "sysctl -q -w " + " ".join(f"{k}={v}" for k, v in self.ARP.items()))
        for r in range(RAILS):
            ns = SWITCH_NS.format(r)
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "add", BRIDGE, "mtu", "9216", "type", "bridge", "stp_state", "0",
                "forward_delay", "0")
            _ip("-n", ns, "link", "set", BRIDGE, "up")
        for name, ip in self.info.hosts:
            for r, ifname in enumerate(HOST_IFS):
                ns, port = SWITCH_NS.format(r), port_name(name, ifname)
                _ip("-n", ns, "link", "add", port, "mtu", "9216", "type", "veth", "peer", "name", ifname,
                    "netns", netns.NS_PREFIX + name)
                _ip("-n", ns, "link", "set", port, "master", BRIDGE, "up")
                host_ns = netns.NS_PREFIX + name
                _ip("-n", host_ns, "link", "set", ifname, "mtu", "9000", "up")
                _ip("-n", host_ns, "addr", "add", f"{rail_ip(r, ip)}/24", "dev", ifname)

    def cross(self, host: str) -> None:
        """Swap the host's two cables: ens4 now ends on rail 1's switch, ens5 on rail 0's (or back)."""
        ports = {r: port_name(host, ifname) for r, ifname in enumerate(HOST_IFS)}
        where = {r: self._switch_of(ports[r]) for r in range(RAILS)}
        for r in range(RAILS):
            src, dst = SWITCH_NS.format(where[r]), SWITCH_NS.format(1 - where[r])
            _ip("-n", src, "link", "set", ports[r], "netns", dst)
            _ip("-n", dst, "link", "set", ports[r], "master", BRIDGE, "up")

    def _switch_of(self, port: str) -> int:
        for r in range(RAILS):
            if subprocess.run(["ip", "-n", SWITCH_NS.format(r), "link", "show", port], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return r
        raise netns.LabError(f"switch port {port} is in no rail namespace")

    def route(self, on: bool) -> None:
        ns0, ns1 = SWITCH_NS.format(0), SWITCH_NS.format(1)
        if on:
            _ip("-n", ns0, "link", "add", ROUTER_IF, "type", "veth", "peer", "name", ROUTER_IF, "netns", ns1)
            for r, ns in enumerate((ns0, ns1)):
                _ip("-n", ns, "addr", "add", f"{subnet(r)}.1/24", "dev", BRIDGE)
                _ip("-n", ns, "addr", "add", f"198.19.29.{r + 1}/30", "dev", ROUTER_IF)
                _ip("-n", ns, "link", "set", ROUTER_IF, "up")
                _ip("-n", ns, "route", "add", f"{subnet(1 - r)}.0/24", "via", f"198.19.29.{2 - r}")
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], check=True)
        else:
            subprocess.run(["ip", "-n", ns0, "link", "del", ROUTER_IF], stderr=subprocess.DEVNULL)
            for ns in (ns0, ns1):
                subprocess.run(["ip", "-n", ns, "addr", "flush", "dev", BRIDGE], stderr=subprocess.DEVNULL)
        # The other rail's subnet through this rail's gateway, below its connected route (metric
        # 100): what a socket bound to this rail's interface -- a RoCE QP's GID -- is routed by.
        for name, _ in self.info.hosts:
            for r, ifname in enumerate(HOST_IFS):
                verb = "replace" if on else "del"
                netns.run_on(name, f"ip route {verb} {subnet(1 - r)}.0/24 via {subnet(r)}.1 dev {ifname} metric 100"
                           + ("" if on else " 2>/dev/null || true"))

    # --- LLDP ---------------------------------------------------------------------------------
    def start_lldpd(self) -> None:
        """lldpd on both switches (foreground, pid kept) and on every host (its pidfile)."""
        Path("/run/lldpd").mkdir(exist_ok=True)  # lldpd's privilege-separation chroot
        for r in range(RAILS):
            sock = self.state / f"lldpd-rail{r}.sock"
            # The switch's name from lldpd's start (-O: what lldpcli runs before lldpd sends its
            # first frame): a name set afterwards leaves the hosts with the machine's own hostname
            # until that first frame's TTL (120 s) runs out, should the update not reach them.
            conf = self.state / f"lldpd-rail{r}.conf"
            conf.write_text(f"configure system hostname {LEAF.format(r)}\n"
                            "configure lldp portidsubtype ifname\nconfigure lldp tx-interval 1\n")
            proc = subprocess.Popen(["ip", "netns", "exec", SWITCH_NS.format(r), "lldpd", "-dd", "-u", str(sock),
                                     "-p", str(self.state / f"lldpd-rail{r}.pid"), "-O", str(conf), "-I", "n*"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.switch_lldpd.append(proc)
        for r in range(RAILS):
            sock = str(self.state / f"lldpd-rail{r}.sock")
            self._lldpcli(sock, "show configuration")  # lldpd is up and answers on its socket
        for name, _ in self.info.hosts:
            netns.run_on(name, f"mkdir -p /run/lldpd && lldpd -p {HOST_PIDFILE} -I {','.join(HOST_IFS)} && "
                             "sleep 0.5 && lldpcli configure lldp tx-interval 1 >/dev/null")

    def _lldpcli(self, sock: str, *commands: str) -> None:
        deadline = time.monotonic() + 15
        while not Path(sock).exists():
            if time.monotonic() > deadline:
                raise netns.LabError(f"lldpd did not open {sock}")
            time.sleep(0.1)
        for command in commands:
            subprocess.run(["lldpcli", "-u", sock, *command.split()], check=True, stdout=subprocess.DEVNULL)

    def neighbours(self, host: str) -> Dict[str, List[dict]]:
        from rocetune.probe.parsers.lldpctl import parse_lldpctl_json

        return parse_lldpctl_json(netns.run_on(host, "lldpctl -f json0").stdout)

    def wait_cabling(self, expected: Dict[str, Dict[str, str]], timeout: float = 45.0) -> None:
        """Until every host hears exactly the switch `expected[host][ifname]` on each rail interface."""
        deadline = time.monotonic() + timeout
        seen: Dict[str, Dict[str, Optional[List[str]]]] = {}
        while True:
            seen = {h: {i: [n["chassis"] for n in ns] for i, ns in self.neighbours(h).items()} for h in expected}
            if all(seen[h].get(i) == [leaf] for h, want in expected.items() for i, leaf in want.items()):
                return
            if time.monotonic() > deadline:
                raise netns.LabError(f"LLDP did not settle within {timeout:g} s: {json.dumps(seen)}")
            time.sleep(1.0)

    def remove(self) -> None:
        for name, values in getattr(self, "saved_sysctl", {}).items():
            netns.run_on(name, "sysctl -q -w " + " ".join(f"{k}={v}" for k, v in zip(self.ARP, values)), check=False)
        for name, _ in self.info.hosts:
            netns.run_on(name, f"[ -f {HOST_PIDFILE} ] && kill $(cat {HOST_PIDFILE}) || true; "
                             f"ip link del {HOST_IFS[0]} 2>/dev/null; ip link del {HOST_IFS[1]} 2>/dev/null; true",
                       check=False)
        for proc in self.switch_lldpd:
            proc.terminate()
        for proc in self.switch_lldpd:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for r in range(RAILS):
            subprocess.run(["ip", "netns", "del", SWITCH_NS.format(r)], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.state, ignore_errors=True)


def straight(info: netns.LabInfo) -> Dict[str, Dict[str, str]]:
    return {name: {ifname: LEAF.format(r) for r, ifname in enumerate(HOST_IFS)} for name in info.names}
