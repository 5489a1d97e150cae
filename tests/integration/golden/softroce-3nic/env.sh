# rocetune 0.1.0 format: sh  NCCL/UCX environment for rxe-vm-03
# features sha256:c9b820aa8b2f  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='ens3'
# rule: nccl-cross-nic
export NCCL_CROSS_NIC='0'
# rule: nccl-ib-gid-index
export NCCL_IB_GID_INDEX='1'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=rxe1:1,rxe2:1'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=ens3'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='ens3'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='ens3'
# rule: ucx-net-devices
export UCX_NET_DEVICES='rxe1:1,rxe2:1'
