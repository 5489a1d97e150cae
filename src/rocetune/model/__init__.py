"""The contracts between layers: Features (what a host is), the Plan (what to set and why),
the QoS plan, the one Finding type and the shared vocabulary (PCI path types, name order).

Everything above imports from here; this package imports nothing of rocetune but errors."""
