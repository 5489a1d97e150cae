"""What a user or the Ansible agent asks of rocetune, one use case a module, each one request
type and one function: env, probe, topo, explain, doctor, lint, qos, capture, fleet. Below
them, by job: inputs (the Features and the node's declared files), planning (the plan and its
env texts), expectations (the plan held to what the node should be), env_files (writing the
env, or refusing to), node_checks (doctor's checks of a node), findings (what a person sees).

The CLI verbs and the node agent's Ansible module both call these; neither plans on its own.
Names once defined here are still found here, each in the module of its job.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_MOVED = {
    "host_features": "inputs", "planned_features": "inputs", "qos_plan": "inputs", "expectations": "inputs",
    "node_settings": "inputs", "check_config": "inputs", "overrides": "inputs", "collect_features": "inputs",
    "PlanRequest": "planning", "plan_host": "planning", "PlannedFile": "planning", "EnvResult": "planning",
    "plan_env": "planning", "plan_env_for": "planning", "DEFAULT_ENV_DIR": "planning",
    "hold_to_expectations": "expectations",
    "FileWrite": "env_files", "BACKUP_SUFFIX": "env_files", "write_env": "env_files",
    "refuse_degraded": "env_files", "accept_written": "env_files", "degradation": "env_files",
    "doctor_checks": "node_checks", "deployed_ports": "node_checks", "nic_counters": "node_checks",
    "plan_facts": "node_checks", "nccl_log_against": "node_checks", "recorded_overrides": "node_checks",
    "nccl_topology": "topo",
}


def __getattr__(name: str) -> Any:
    """A name of the module of its job, asked for here (`from rocetune.app import write_env`)."""
    if name in _MOVED:
        return getattr(import_module(f"{__name__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
