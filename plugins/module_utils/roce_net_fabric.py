# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""What roce_net decides, as pure functions over what the node reports: what each fabric
interface's MTU must become (the interfaces that carry the Ansible connection come from the
shared rocetune_links), the per-interface ARP
sysctls, the persistence files, and how a jumbo ping between two peers went.

No Ansible imports: unit-tested on recorded outputs of `ip -j addr`, `ip -j route` and ping.
"""

from __future__ import absolute_import, division, print_function

import ipaddress
import re

__metaclass__ = type

# RoCE's largest path MTU is 4096 bytes of payload; the netdev MTU must leave room for the
# RoCE headers (the kernel subtracts them when it derives the active MTU from the netdev's).
ROCE_MIN_NETDEV_MTU = 4200

# Several fabric NICs in one subnet: each NIC answers ARP only for its own addresses
# (arp_ignore=1), announces its own address as the source (arp_announce=2), and the reverse-path
# filter is loose (rp_filter=2) so replies arriving on a sibling NIC are not dropped.
# Kernel: Documentation/networking/ip-sysctl.rst; NCCL issues #1109 and #1348.
ARP_ISOLATION = (("arp_ignore", "1"), ("arp_announce", "2"), ("rp_filter", "2"))

FLAP_VAR = "roce_net_allow_link_flap"
IFACES_VAR = "roce_net_interfaces"


def plan_links(interfaces, want_mtu, current, protected, allow_flap):
    """One entry per fabric interface: {interface, mtu_before, mtu, action, reason}.

    action: "none" (already right), "set" (ip link set ... mtu), "refused" (it carries the
    connection and roce_net_allow_link_flap is false), "missing" (no such interface).
    """
    out = []
    for ifname in interfaces:
        have = current.get(ifname)
        entry = {"interface": ifname, "mtu_before": have, "mtu": have, "action": "none", "reason": ""}
        if have is None:
            entry["action"] = "missing"
            entry["reason"] = "no interface %s on this node (check %s)" % (ifname, IFACES_VAR)
        elif have != want_mtu:
            if ifname in protected and not allow_flap:
                entry["action"] = "refused"
                entry["reason"] = (
                    "refusing to change the MTU of %s (%d -> %d): %s, and an MTU change can take "
                    "the link down. Set %s: true to allow it (roll out with serial; see "
                    "roles/roce_net/README.md), or take %s out of %s"
                    % (ifname, have, want_mtu, protected[ifname], FLAP_VAR, ifname, IFACES_VAR))
            else:
                entry["action"] = "set"
                entry["mtu"] = want_mtu
        out.append(entry)
    return out


def shares_subnet(addrs, interfaces):
    """True when two of the given interfaces hold addresses in one IPv4 subnet."""
    seen = {}
    for ifname in interfaces:
        for cidr in addrs.get(ifname, []):
            iface = ipaddress.ip_interface(cidr)
            if iface.version != 4:
                continue
            other = seen.get(iface.network)
            if other is not None and other != ifname:
                return True
            seen[iface.network] = ifname
    return False


def arp_sysctls(interfaces, addrs, mode):
    """{sysctl key: value} of the ARP isolation for the fabric interfaces, or {}.

    mode "auto" applies it only when two fabric interfaces share a subnet; "on" always;
    "off" never. A dot in an interface name (a VLAN) is written as "/" (sysctl.d(5)).
    """
    if mode == "off" or (mode == "auto" and not shares_subnet(addrs, interfaces)):
        return {}
    out = {}
    for ifname in interfaces:
        for name, value in ARP_ISOLATION:
            out["net.ipv4.conf.%s.%s" % (ifname.replace(".", "/"), name)] = value
    return out


def networkd_file(link_state_text):
    """The .network file systemd-networkd applied to a link, from /run/systemd/netif/links/N."""
    for line in (link_state_text or "").splitlines():
        if line.startswith("NETWORK_FILE="):
            return line.split("=", 1)[1].strip() or None
    return None


def networkd_dropin(network_file, mtu):
    """(path, content) of a drop-in that makes networkd keep the MTU (works for a file netplan
    generates under /run too: drop-in directories are searched in /etc as well)."""
    base = network_file.rsplit("/", 1)[-1]
    path = "/etc/systemd/network/%s.d/60-rocetune-mtu.conf" % base
    content = ("# Written by rocetune's roce_net role.\n[Link]\nMTUBytes=%d\n" % mtu)
    return path, content


# ---------------------------------------------------------------------------------------------
# The jumbo path check between peers


def ping_size(mtu):
    """ICMP payload that fills an IPv4 packet of exactly `mtu` bytes (20 IP + 8 ICMP headers)."""
    return mtu - 28


def path_pairs(mine, peers):
    """Which peer addresses to ping, and from which of my interfaces.

    mine: {ifname: [cidr]}; peers: [{"name", "interfaces": {ifname: {"mtu", "addresses"}}}].
    Returns [{peer, peer_interface, peer_mtu, address, interface, routed}]: a peer address in a
    subnet of one of my fabric interfaces is pinged from that interface; on a routed fabric (a
    /31 or /30 per port to its switch) a peer interface of the same name as one of mine -- the
    same rail -- is pinged from mine through the routes. A peer with neither gets a "skip"
    reason, which the caller reports as unchecked, never as a pass.
    """
    out = []
    mine4 = dict((myif, [ipaddress.ip_interface(c) for c in cidrs if ipaddress.ip_interface(c).version == 4])
                 for myif, cidrs in mine.items())
    for peer in peers:
        found = []
        for pif in sorted(peer.get("interfaces", {})):
            info = peer["interfaces"][pif]
            for cidr in info.get("addresses", []):
                paddr = ipaddress.ip_interface(cidr)
                if paddr.version != 4:
                    continue
                local = [myif for myif in sorted(mine4) if any(a.network == paddr.network for a in mine4[myif])]
                if local:
                    myif, routed = local[0], False
                elif mine4.get(pif):
                    myif, routed = pif, True
                else:
                    continue
                found.append({"peer": peer["name"], "peer_interface": pif, "peer_mtu": info.get("mtu"),
                              "address": str(paddr.ip), "interface": myif, "routed": routed})
        local_only = [f for f in found if not f["routed"]]
        out += local_only or found
        if not found:
            out.append({"peer": peer["name"], "skip": "shares no IPv4 subnet with this node's fabric interfaces "
                                                      "and has no fabric interface of the same name (rail)"})
    return out


def outside_peer(name, interfaces, links):
    """A peer outside this run (--limit), as path_pairs takes it, from the `ip -j addr show` it
    answered (read by rocetune_ip_addr into {ifname: {"mtu", "addresses"}}): only its fabric
    interfaces, with their IPv4 and non-link-scope addresses."""
    out = {}
    for ifname in interfaces:
        link = links.get(ifname)
        if link is None:
            continue
        out[ifname] = {"mtu": link.get("mtu"),
                       "addresses": ["%s/%s" % (a["address"], a["prefixlen"]) for a in link["addresses"]
                                     if a.get("scope") != "link"]}
    return {"name": name, "interfaces": out}


_MTU_RE = re.compile(r"mtu\s*=\s*(\d+)")


def ping_verdict(rc, output):
    """(ok, reason) for `ping -M do -s SIZE -c N -W 1 -I IF ADDR`."""
    if rc == 0:
        return True, ""
    m = _MTU_RE.search(output or "")
    if "message too long" in (output or "") or m:
        return False, "this node's route MTU is %s: it cannot send the jumbo packet" % (m.group(1) if m else "smaller")
    if rc == 1:
        return False, "no reply to a don't-fragment jumbo ping"
    last = [ln for ln in (output or "").splitlines() if ln.strip()]
    return False, "ping failed: %s" % (last[-1].strip() if last else "exit %d" % rc)


def pair_message(host, pair, mtu, reason):
    """One line per failed pair, naming a peer whose MTU is below the fabric's."""
    line = "%s %s -> %s %s (%s): %s" % (host, pair["interface"], pair["peer"], pair["peer_interface"],
                                        pair["address"], reason)
    if pair.get("peer_mtu") is not None and pair["peer_mtu"] < mtu:
        line += "; %s %s is at MTU %d, not %d" % (pair["peer"], pair["peer_interface"], pair["peer_mtu"], mtu)
    return line


# ---------------------------------------------------------------------------------------------
# What persists the MTU and the ARP sysctls across a reboot


def udev_rule(interfaces, mtu):
    """A udev rule that sets the MTU whenever one of the interfaces appears (boot, driver
    reload). Its file sorts after 80-net-setup-link.rules, so NAME is the final name."""
    head = ("# Written by rocetune's roce_net role: the fabric MTU, set whenever the NIC appears (boot,\n"
            "# driver reload). Edit roce_net_interfaces / roce_net_mtu in the inventory, not this file.\n")
    return head + "".join('ACTION=="add", SUBSYSTEM=="net", NAME=="%s", ATTR{mtu}="%d"\n' % (i, mtu)
                          for i in interfaces)


def arp_sysctl_file(sysctls):
    """The sysctl.d file for the ARP isolation sysctls; only comments when none are needed, so a
    stale key from an earlier run never survives."""
    head = ("# Written by rocetune's roce_net role: each fabric NIC answers ARP for its own address\n"
            "# only when several share a subnet (roce_net_arp_isolation). See roles/roce_net/README.md.\n")
    return head + "".join("%s = %s\n" % (k, sysctls[k]) for k in sorted(sysctls))
