"""nccl-version: which NCCL release the version-gated rules plan for, and why.

A report, not a setting. A job loads one NCCL, but which one depends on the job: PyTorch its
wheel's (nvidia-nccl-cuXX in site-packages), a conda env its own, an MPI job the loader's
(ld.so.cache). The probe lists every library it found (kernel.nccl.libraries) and plans for:

* the one release found (`single`);
* the lowest when they differ (`lowest`). Each version-gated rule is written so that what it
  sets for an older release also holds on a newer one -- a pinned NCCL_IB_GID_INDEX is the
  index 2.21.5+ would pick, NCCL_IB_TIMEOUT=20 and NCCL_IB_SPLIT_DATA_ON_QPS=0 are the
  defaults of 2.23.4 and 2.20.3 -- so one env fits a job that loads any of them. Planning for
  "unknown" instead would be less safe for the oldest: unknown counts nvidia_peermem as a
  peer-memory module (2.23.4+ only) and sets NCCL_IB_ADDR_FAMILY for IPv6-only ports, which
  NCCL < 2.21.5 ignores;
* an unknown release when a library's version cannot be read (`unreadable`): it may be older
  than the lowest one read, and every rule treats an unknown release as possibly old;
* an unknown release when none is found (`none`);
* the release given with `--nccl-version X.Y.Z` (the rocetune_env role's
  `rocetune_env_nccl_version`) for a job whose NCCL is not on the host (`declared`).

Findings: `nccl-versions-differ` (info) names each library; `nccl-version-unreadable`
(warning); `nccl-not-found` (info); `nccl-wheel-not-seen` (info) when every library found is a
system one, since a PyTorch job loads its wheel's NCCL, which a probe can only see where the
wheel lies in a place it searches -- and a capture holds only what its probe read.
"""

from __future__ import annotations

from typing import List

from ..model.plan import Decision

ID = "nccl-version"
HOW = {"file-name": "file name", "wheel-metadata": "wheel METADATA", "library-string": "'NCCL version' string"}
OVERRIDE = "pass --nccl-version X.Y.Z (rocetune_env_nccl_version) with the NCCL the jobs load"


def describe(lib: dict) -> str:
    """`2.19.3 at PATH (wheel nvidia-nccl-cu12 2.19.3; from its wheel METADATA)`."""
    parts = [f"wheel {lib['package']}" if lib.get("package") else None,
             f"version from its {HOW[lib['how']]}" if lib.get("how") in HOW else "version unreadable"]
    return f"{lib.get('version') or '?'} at {lib['path']} ({'; '.join(p for p in parts if p)})"


def _found(libs: List[dict]) -> List[dict]:
    return [{"path": x["path"], "version": x.get("version")} for x in libs]


def rule(features: dict, ctx) -> List[Decision]:
    host = ctx.host
    libs = host.nccl_libraries()
    ev = host.nccl_evidence()
    basis = ev["basis"]
    envs = ((features.get("kernel") or {}).get("nccl") or {}).get("python_environments") or []
    ctx.report({**ev, "libraries": libs, "python_environments": envs})
    listing = "; ".join(describe(x) for x in libs)
    if basis == "declared":
        ctx.note(f"planned for {host.nccl_basis_text()}" + (f"; found: {listing}" if libs else ""))
        return []
    if basis == "none":
        ctx.finding("nccl-not-found", "info", "nccl",
                    "no NCCL library found (system library directories, /etc/ld.so.cache, "
                    f"{_searched(envs)}): version-gated settings are planned for an unknown release, "
                    f"each on its safe side; {OVERRIDE}", searched=envs)
        return []
    if basis == "unreadable":
        bad = ", ".join(x["path"] for x in libs if not x.get("version"))
        ctx.finding("nccl-version-unreadable", "warning", "nccl",
                    f"the version of {bad} could not be read (no version in its name, no wheel "
                    f"METADATA, no 'NCCL version' string): planned for an unknown release, which may be "
                    f"older than the others found ({listing}); {OVERRIDE}", libraries=_found(libs))
        return []
    if basis == "lowest":
        ctx.finding("nccl-versions-differ", "info", "nccl",
                    f"{len(libs)} NCCL libraries of different releases: {listing}. Planned for "
                    f"{ev['version']}, the lowest: what is set for it also holds for a job loading a newer "
                    f"one; {OVERRIDE} to plan for one", libraries=_found(libs))
    else:
        ctx.note(f"planned for {host.nccl_basis_text()}")
    if libs and not any(x.get("environment") for x in libs):
        ctx.finding("nccl-wheel-not-seen", "info", "nccl",
                    f"only the system's NCCL was found ({listing}); no NCCL wheel (nvidia-nccl-cu11/"
                    f"cu12/cu13) or conda NCCL in {_searched(envs)}. PyTorch jobs load their wheel's "
                    "NCCL, often another release: one in a place not searched, in a container image, or "
                    "on a machine whose capture did not record it cannot be seen from here; "
                    f"{OVERRIDE} (python -c 'import torch; print(torch.cuda.nccl.version())')",
                    libraries=_found(libs), searched=envs)
    return []


def _searched(envs: List[str]) -> str:
    if not envs:
        return "any Python environment (none found under this root)"
    return f"the {len(envs)} Python environment(s) searched ({', '.join(envs)})"
