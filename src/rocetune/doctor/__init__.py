"""Doctor checks: judging a host's health from what the probe read (pure), and their registry."""
