"""The code the agent shares with the Ansible collection, in one place: each module here is
standard library only and has a generated copy in plugins/module_utils (tools/sync_module_utils.py
writes the copies, `--check` fails on any drift), so a module on the node runs the same code as the
agent. A module here imports only the standard library and other modules of this package.
"""
