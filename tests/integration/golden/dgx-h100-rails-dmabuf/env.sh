# rocetune 0.1.0 format: sh  NCCL/UCX environment for dgx-h100-07
# features sha256:d565a69ae751  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='bond0'
# rule: nccl-cross-nic
export NCCL_CROSS_NIC='0'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'
# rule: traffic-class
export NCCL_IB_TC='106'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=bond0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='bond0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='bond0'
# rule: traffic-class
export UCX_IB_TRAFFIC_CLASS='106'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'
