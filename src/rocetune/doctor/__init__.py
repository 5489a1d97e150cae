"""rocetune doctor: a node checked against its plan and against the pitfalls that cost bandwidth
silently -- readings beyond the Features (readings.py), one function per check (checks.py), and
the report a person or a scheduler's prolog reads (report.py)."""
