"""The rocetune lab on one Linux machine: namespace hosts (netns), Soft-RoCE QEMU VMs (vm,
vm_image), a real Slurm over the hosts (slurm), the fabric and rail networks (fabric_net,
rails_net) and the playbook runs against them (playbooks). The tests in tests/lab, the demo
(scripts/demo.sh) and the benches build on it; `python3 -m lab --help` runs it by hand.
"""
