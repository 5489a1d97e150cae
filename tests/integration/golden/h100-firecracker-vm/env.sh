# rocetune 0.1.0 format: sh  NCCL/UCX environment for vm
# features sha256:313266a2317a  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='eth0'
# rule: no-rdma
export NCCL_IB_DISABLE='1'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=eth0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='eth0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='eth0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='eth0'
