# rocetune 0.1.0 format: sh  NCCL/UCX environment for GPU-87
# features sha256:b6432cd5e1d3  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='enp45s0f0'
# rule: declared-settings
export NCCL_DEBUG='WARN'
# rule: declared-settings
export NCCL_IB_GID_INDEX='3'
# rule: declared-settings
export NCCL_IB_HCA='=mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_14,mlx5_15,mlx5_16,mlx5_17,mlx5_9,mlx5_10,mlx5_11,mlx5_12'
# rule: declared-settings
export NCCL_IB_QPS_PER_CONNECTION='4'
# rule: declared-settings
export NCCL_IB_SL='0'
# rule: nccl-ib-qps
export NCCL_IB_SPLIT_DATA_ON_QPS='0'
# rule: declared-settings
export NCCL_IB_TC='41'
# rule: nccl-ib-timeout
export NCCL_IB_TIMEOUT='20'
# rule: declared-settings
export NCCL_IGNORE_CPU_AFFINITY='1'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=enp45s0f0'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='enp45s0f0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='enp45s0f0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1,mlx5_10:1,mlx5_11:1,mlx5_12:1,mlx5_14:1,mlx5_15:1,mlx5_16:1,mlx5_17:1'
