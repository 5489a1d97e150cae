# rocetune 0.1.0 format: sh  NCCL/UCX environment for gpu-edge-14
# features sha256:e7d70a37f2da  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='ens3np0'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_0:1'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=ens3np0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='ens3np0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='ens3np0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_0:1'
