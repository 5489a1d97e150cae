# rocetune 0.1.0 format: sh  NCCL/UCX environment for verl-worker-0
# features sha256:976e0f7b8105  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='eth0'
# rule: nccl-cross-nic
export NCCL_CROSS_NIC='0'
# rule: nccl-ib-gid-index
export NCCL_IB_GID_INDEX='5'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_4:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_13:1,mlx5_14:1,mlx5_15:1,mlx5_16:1'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=eth0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='eth0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='eth0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_4:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_13:1,mlx5_14:1,mlx5_15:1,mlx5_16:1'
