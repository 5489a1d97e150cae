# rocetune 0.1.0 format: sh  NCCL/UCX environment for gpu-h100-ib-014
# features sha256:9808a88a1a9d  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='eth0'
# rule: nccl-ib-hca
export NCCL_IB_HCA='=mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=eth0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='eth0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='eth0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1'
