"""rocetune doctor: a node checked against its plan and against the pitfalls that cost bandwidth
silently -- readings beyond the Features (readings.py), one function per check (checks.py), NIC
counters judged as rates over a sliding window (nic_health.py over rocetune.checks.nic_counters,
nic_baseline.py), the kernel log within its window and after the repair mark (kernel_log.py,
repair.py), faults grouped by cause (causes.py), and the report a person or a scheduler's prolog
reads (report.py)."""
