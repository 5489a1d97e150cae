# rocetune 0.1.0 format: sh  NCCL/UCX environment for roce-client-05
# features sha256:0f655e7a47a6  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='eno1'
# rule: nccl-ib-gid-index
export NCCL_IB_GID_INDEX='3'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_0:1'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=eno1'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='eno1'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='eno1'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_0:1'
