# rocetune 0.1.0 format: sh  NCCL/UCX environment for gpu-node-02
# features sha256:01085a89087b  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='bond0'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=bond0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='bond0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='bond0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'
