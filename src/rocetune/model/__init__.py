"""The contracts between layers: Features (what a host is), the Plan (what to set and why),
the QoS plan, the one Finding type and the shared vocabulary (PCI path types, name order).

Everything above imports from here; this package imports nothing of rocetune but errors."""

# Where a node keeps its declared expectations (under --root): here, so that a verb can look for
# the file without importing the reader (model.expect, whose DEFAULT_PATH this is).
EXPECT_PATH = "/etc/rocetune/expect.yml"
