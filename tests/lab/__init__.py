"""The lab tier: tests against the namespace hosts and Soft-RoCE VMs of the `lab` package."""
