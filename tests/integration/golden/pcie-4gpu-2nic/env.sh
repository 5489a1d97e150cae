# rocetune 0.1.0 format: sh  NCCL/UCX environment for esc8000a-e12
# features sha256:f28494a91b0d  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='enp130s0f0'
# rule: nccl-cross-nic
export NCCL_CROSS_NIC='0'
# rule: nccl-ib-gid-index
export NCCL_IB_GID_INDEX='3'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1,mlx5_2:1'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=enp130s0f0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='enp130s0f0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='enp130s0f0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_0:1,mlx5_1:1,mlx5_2:1'
