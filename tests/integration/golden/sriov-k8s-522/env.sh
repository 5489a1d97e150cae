# rocetune 0.1.0 format: sh  NCCL/UCX environment for k8s-sriov-gpu-22
# features sha256:c44f81c64a42  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='enp127s0f0np0'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_10:1,mlx5_11:1,mlx5_12:1,mlx5_13:1'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=enp127s0f0np0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='enp127s0f0np0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='enp127s0f0np0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_10:1,mlx5_11:1,mlx5_12:1,mlx5_13:1'
