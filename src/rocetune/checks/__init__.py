"""One home for every check: the Check type, the registry of check ids, and the declarations of
host, rule, lint and doctor checks.

Importing this package declares every check, so `all_checks()` is complete and a finding for an
undeclared id fails (rocetune.checks.registry.UnknownCheck)."""

from . import doctor, expect, host, lint, plan, rules, switch  # noqa: F401  (each declares its checks)
from . import doctor_below  # noqa: F401
from .host import host_findings
from .registry import Check, UnknownCheck, all_checks, finding, get

__all__ = ["Check", "UnknownCheck", "all_checks", "finding", "get", "host_findings"]
