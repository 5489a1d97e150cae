"""Sources: one per subsystem of the host, each failing alone (ok, reason, warnings)."""
