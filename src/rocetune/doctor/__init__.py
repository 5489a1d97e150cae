"""rocetune doctor: a node checked against its plan and against the pitfalls that cost bandwidth
silently -- readings beyond the Features (readings.py), one function per check (checks.py), NIC
counters judged as rates against a saved baseline (nic_health.py, nic_checks.py,
nic_baseline.py), and the report a person or a scheduler's prolog reads (report.py)."""
