# rocetune 0.1.0 format: sh  NCCL/UCX environment for vm
# features sha256:001e4a393b19  qos: built-in defaults  overrides: 0
# generated, do not edit: explain any line with 'rocetune explain VAR'
# rule: no-rdma
export NCCL_IB_DISABLE='1'
