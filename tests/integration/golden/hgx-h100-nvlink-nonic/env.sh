# rocetune 0.1.0 format: sh  NCCL/UCX environment for h100-node-07
# features sha256:a046196184d8  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: socket-ifname
export GLOO_SOCKET_IFNAME='eno1np0'
# rule: no-rdma
export NCCL_IB_DISABLE='1'
# rule: no-rdma
export NCCL_NSOCKS_PERTHREAD='1'
# rule: socket-ifname
export NCCL_SOCKET_IFNAME='=eno1np0'
# rule: no-rdma
export NCCL_SOCKET_NTHREADS='2'
# rule: socket-ifname
export OMPI_MCA_btl_tcp_if_include='eno1np0'
# rule: socket-ifname
export OMPI_MCA_oob_tcp_if_include='eno1np0'
# rule: ucx-net-devices
export UCX_NET_DEVICES='eno1np0'
