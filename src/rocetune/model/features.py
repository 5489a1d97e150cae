"""Load, dump and fingerprint Features documents (see docs/features.md)."""

from __future__ import annotations

import json

from ..errors import ExitCode, RocetuneError
from .jsonread import load_json
from .schema import check, features_schema

SCHEMA_VERSION = 1


def canonical(features: dict) -> str:
    return json.dumps(features, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# Facts about the process that ran the probe, not about the host: a login shell, an Ansible
# session opened before the rdma_core role raised memlock, and the boot unit see different
# values on the same host. No rule reads them for a value, so the fingerprint leaves them out
# and an env file is not rewritten only because someone else ran the probe.
CALLER_SCOPED = (("kernel", "memlock"), ("kernel", "stack_limit"))


def fingerprint(features: dict) -> str:
    """Short sha256 of the canonical JSON of the host facts (no caller-scoped facts): the same
    host gives the same value, whoever probed."""
    import hashlib  # here: OpenSSL's loading is a probe's cost only where a fingerprint is asked for

    host_only = dict(features)
    for section, key in CALLER_SCOPED:
        if isinstance(host_only.get(section), dict) and key in host_only[section]:
            host_only[section] = {k: v for k, v in host_only[section].items() if k != key}
    return hashlib.sha256(canonical(host_only).encode()).hexdigest()[:12]


def with_nccl_version(features: dict, version: str, by: str = "--nccl-version") -> dict:
    """A copy of `features` planned for NCCL `version` (a job whose NCCL is not on the host: a
    container image, a wheel elsewhere): kernel.nccl keeps the libraries found and says the
    version was declared, and by what."""
    kernel = dict(features.get("kernel") or {})
    nccl = dict(kernel.get("nccl") or {"libraries": [], "python_environments": []})
    nccl.update(version=version, path=None, basis="declared", declared={"version": version, "by": by})
    kernel["nccl"] = nccl
    return {**features, "kernel": kernel}


def load(path: str) -> dict:
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input
    from .jsonread import MAX_DOCUMENT_BYTES

    try:
        doc = load_json(read_input(path, MAX_DOCUMENT_BYTES))
    except HostReadError as exc:
        raise RocetuneError(f"cannot read features file {path}: {exc.reason}") from None
    except OSError as exc:
        raise RocetuneError(f"cannot read features file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise RocetuneError(f"{path} is not JSON: {exc}") from None
    if isinstance(doc, dict) and "data" in doc and isinstance(doc["data"], dict) \
            and "features" in doc["data"]:
        doc = doc["data"]["features"]  # a saved `rocetune probe --json` envelope
    if not isinstance(doc, dict):
        raise RocetuneError(f"{path}: not a Features document", code=ExitCode.INPUT)
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RocetuneError(f"{path}: schema_version {version!r}, this rocetune reads {SCHEMA_VERSION}",
                            hint="re-run 'rocetune probe --json' with this version",
                            code=ExitCode.INPUT)
    missing = [k for k in features_schema()["required"] if k not in doc]
    if missing:
        raise RocetuneError(f"{path}: not a complete Features document: {', '.join(missing)} missing",
                            hint="save one with 'rocetune probe --json > FILE'", code=ExitCode.INPUT)
    problem = check(doc)
    if problem:
        raise RocetuneError(f"{path}: not a valid Features document: {problem}",
                            hint="save one with 'rocetune probe --json > FILE'", code=ExitCode.INPUT)
    # Files saved before findings were computed at report time (rocetune.checks) carry them:
    # not facts, so dropped, and such a file fingerprints and plans as a fresh probe does.
    doc.pop("findings", None)
    return doc
