"""A fabric network for namespace lab hosts: a second bridge in the lab's fabric namespace and one
more interface per host (`rtf0`, 198.19.0.0/24, host MTU 1500, the "switch" at 9216), so the
fabric roles have an interface that is not the one carrying SSH (rtl0). Everything lives in the
lab's namespaces: `netns.down()` removes it with them; `remove()` takes it away earlier."""

from __future__ import annotations

import subprocess

from lab import netns

FABRIC_IF = "rtf0"
FABRIC_BRIDGE = "rtlbr1"
FABRIC_NET = "198.19.0"


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise netns.LabError(f"ip {' '.join(args)}: {proc.stdout.strip()}")


def fabric_ip(host_ip: str) -> str:
    return f"{FABRIC_NET}.{host_ip.rsplit('.', 1)[1]}"


def add(info: netns.LabInfo) -> None:
    ns = netns.FABRIC_NS
    _ip("-n", ns, "link", "add", FABRIC_BRIDGE, "mtu", "9216", "type", "bridge", "stp_state", "0", "forward_delay", "0")
    _ip("-n", ns, "link", "set", FABRIC_BRIDGE, "up")
    for name, ip in info.hosts:
        port, host_ns = f"rtl-f-{name}", netns.NS_PREFIX + name
        _ip("-n", ns, "link", "add", port, "mtu", "9216", "type", "veth", "peer", "name", FABRIC_IF, "netns", host_ns)
        _ip("-n", ns, "link", "set", port, "master", FABRIC_BRIDGE, "up")
        _ip("-n", host_ns, "link", "set", FABRIC_IF, "mtu", "1500", "up")
        _ip("-n", host_ns, "addr", "add", f"{fabric_ip(ip)}/24", "dev", FABRIC_IF)


def remove(info: netns.LabInfo) -> None:
    for name, _ in info.hosts:
        subprocess.run(["ip", "-n", netns.FABRIC_NS, "link", "del", f"rtl-f-{name}"], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "-n", netns.FABRIC_NS, "link", "del", FABRIC_BRIDGE], stderr=subprocess.DEVNULL)


def inventory_text() -> str:
    """An extra inventory that names rtf0 as every lab host's fabric interface."""
    return f"all:\n  children:\n    lab:\n      vars:\n        rocetune_lab_fabric_interfaces: [{FABRIC_IF}]\n"
