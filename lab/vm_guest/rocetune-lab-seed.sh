#!/bin/sh
# Lab VM first step at boot (lab/vm.py): unpack this VM's own files from its seed disk
# (a plain tar on the virtio disk with serial "rtvseed": host name, /etc/hosts, SSH host key,
# authorized_keys, network plan), then configure the NICs that plan names.
#
# /etc/rocetune-lab/net.conf, one NIC per line:  NAME MAC MTU ADDRESS/PREFIX NETWORK/PREFIX
# and one line "gateway IP" for the management NIC's default route.
set -eu
seed=/dev/disk/by-id/virtio-rtvseed
i=0
while [ ! -b "$seed" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -b "$seed" ] || { echo "rocetune-lab-seed: no seed disk $seed" >&2; exit 1; }
tar -xf "$seed" -C / --no-same-owner --no-overwrite-dir
chown -R root:root /root/.ssh /etc/ssh
chmod 0600 /etc/ssh/ssh_host_ed25519_key /root/.ssh/id_ed25519 /root/.ssh/authorized_keys
hostname "$(cat /etc/hostname)"

# Two fabric NICs in one subnet: each answers ARP only for its own address and sources
# traffic from the NIC that owns the address (like a rail-optimised GPU node).
sysctl -q -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
    net.ipv4.conf.all.rp_filter=2 net.ipv4.conf.default.rp_filter=2

ifname_of() {  # MAC -> current interface name
    for d in /sys/class/net/*; do
        [ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && { basename "$d"; return 0; }
    done
    return 1
}

table=100
gateway=
while read -r name mac mtu addr net; do
    case "$name" in ''|'#'*) continue ;; gateway) gateway=$mac; continue ;; esac
    i=0
    until cur=$(ifname_of "$mac"); do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "rocetune-lab-seed: no NIC with MAC $mac" >&2; exit 1; }
        sleep 0.1
    done
    if [ "$cur" != "$name" ]; then
        ip link set dev "$cur" down
        ip link set dev "$cur" name "$name"
    fi
    ip link set dev "$name" mtu "$mtu" up
    ip addr add "$addr" dev "$name"
    case "$name" in
        ens3) ;;
        *)  # a per-NIC source route, so each rail's address leaves through its own NIC
            table=$((table + 1))
            ip route add "$net" dev "$name" src "${addr%/*}" table $table
            ip rule add from "${addr%/*}" table $table ;;
    esac
done < /etc/rocetune-lab/net.conf
ip link set lo up
[ -z "$gateway" ] || ip route add default via "$gateway" dev ens3
echo "rocetune-lab-seed: $(hostname) configured"
