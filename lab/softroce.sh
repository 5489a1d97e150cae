#!/bin/sh
# rocetune-softroce: create or remove Soft-RoCE (rdma_rxe) devices on Ethernet NICs.
#
# SOFTWARE STAND-IN. A Soft-RoCE device is RoCE v2 implemented by the kernel on top of any
# Ethernet NIC: it has a real GID table, real verbs, real RDMA-CM, and moves real RDMA traffic,
# so it tests GID choice, MTUs and RDMA paths on machines without RDMA NICs. It is slow, has no
# hardware QoS (PFC/ETS/ECN) and no vendor counters, and it is never evidence that a ConnectX
# (or any other RDMA NIC) works.
#
#   rocetune-softroce up [NAME=]NETDEV ...   e.g. up rxe0=ens4 rxe1=ens5 (default names rxe0, rxe1, ...)
#   rocetune-softroce down                   remove every rxe device
#   rocetune-softroce status                 list rxe devices and their netdevs
#
# As a unit: put SOFTROCE_LINKS="rxe0=ens4 rxe1=ens5" in /etc/default/rocetune-softroce and
# `systemctl enable --now rocetune-softroce` (lab/vm_guest/rocetune-softroce.service).
# Needs root, iproute2's `rdma` and a kernel with rdma_rxe (Debian's linux-image-amd64 has it).
set -eu
prog=rocetune-softroce
die() { echo "$prog: error: $*" >&2; exit 1; }

rxe_of() {  # netdev -> name of the rxe device on it, if any
    rdma link show 2>/dev/null | awk -v nd="$1" '$NF == nd && $2 ~ /^rxe/ {sub("/.*", "", $2); print $2}'
}

case "${1:-}" in
up)
    shift
    [ $# -gt 0 ] || die "up needs at least one NETDEV (or NAME=NETDEV)"
    modprobe rdma_rxe || die "cannot load rdma_rxe (this kernel has no Soft-RoCE)"
    n=0
    for arg in "$@"; do
        case "$arg" in *=*) name=${arg%%=*} dev=${arg#*=} ;; *) name=rxe$n dev=$arg ;; esac
        n=$((n + 1))
        [ -e "/sys/class/net/$dev" ] || die "$dev: no such network interface"
        have=$(rxe_of "$dev")
        if [ -n "$have" ]; then
            [ "$have" = "$name" ] || die "$dev already has Soft-RoCE device $have (wanted $name)"
            echo "$prog: $name on $dev: already there"
            continue
        fi
        rdma link add "$name" type rxe netdev "$dev" || die "rdma link add $name type rxe netdev $dev failed"
        echo "$prog: $name on $dev: created (software stand-in, not an RDMA NIC)"
    done ;;
down)
    for dev in $(rdma link show 2>/dev/null | awk '$2 ~ /^rxe/ {sub("/.*", "", $2); print $2}' | sort -u); do
        rdma link delete "$dev" && echo "$prog: $dev removed"
    done ;;
status)
    rdma link show 2>/dev/null | awk '$2 ~ /^rxe/' ;;
*)
    echo "usage: $prog up [NAME=]NETDEV ... | down | status" >&2; exit 2 ;;
esac
