"""rocetune doctor: a node checked against its plan and against the pitfalls that cost bandwidth
silently -- readings beyond the Features (readings.py), one function per check (checks.py), NIC
counters judged as rates against a saved baseline (nic_health.py over rocetune.checks.nic_counters,
nic_baseline.py), and the report a person or a scheduler's prolog reads (report.py)."""
