"""The contracts between layers: Features (what a host is), the Plan (what to set and why) and
the env it is rendered and written as, the QoS plan, the expectations and the check
configuration, the one Finding type and the shared vocabulary (PCI path types, name order).

Everything above imports from here; this package imports only the ground floor of rocetune:
errors, text, pkgdata (its JSON data), core.nic_firmware_params (the NVCONFIG values) and hostfs.inputs (the
bounded reader of an input file)."""

# Where a node keeps its declared expectations (under --root): here, so that a verb can look for
# the file without importing the reader (model.expect, whose DEFAULT_PATH this is).
EXPECT_PATH = "/etc/rocetune/expect.yml"
