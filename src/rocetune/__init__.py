"""rocetune: bring GPU nodes onto a tuned RDMA/RoCEv2 fabric and tell jobs how to use it."""

__version__ = "0.1.0"
