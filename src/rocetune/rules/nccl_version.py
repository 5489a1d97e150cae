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

* the lowest among libraries in places other users control (`other-user`) when those are all
  there is: under /home/<user>, below a directory a group or everyone may write, or owned by
  another user. Such a library tells what that user's jobs load; beside libraries only root
  controls it does not count at all.

A version counts only from the library's own "NCCL version" string (an ELF shared object's);
a file name's or wheel METADATA's is a claim beside it. The search is bounded in files, bytes
and time (rocetune.probe.sources.nccl_libs).

Findings: `nccl-versions-differ` (info) names each library; `nccl-version-unreadable`
(warning); `nccl-not-found` (info); `nccl-wheel-not-seen` (info) when every library found is a
system one, since a PyTorch job loads its wheel's NCCL, which a probe can only see where the
wheel lies in a place it searches -- and a capture holds only what its probe read;
`nccl-other-user-library` (warning when planned from such libraries, info when they are left
aside); `nccl-not-a-library` (info) for a file named like one that is no ELF shared object;
`nccl-search-bounded` (warning) when the search stopped at a bound.
"""

from __future__ import annotations

from typing import List

from ..checks.binding import emits
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


@emits("nccl-not-a-library",
       "nccl-search-bounded",
       "nccl-other-user-library",
       "nccl-not-found",
       "nccl-version-unreadable",
       "nccl-versions-differ",
       "nccl-wheel-not-seen")
def rule(features: dict, ctx) -> List[Decision]:
    host = ctx.host
    libs = host.nccl_libraries()
    ev = host.nccl_evidence()
    basis = ev["basis"]
    envs = ((features.get("kernel") or {}).get("nccl") or {}).get("python_environments") or []
    ctx.report({**ev, "libraries": libs, "python_environments": envs})
    listing = "; ".join(describe(x) for x in libs)
    nccl = (features.get("kernel") or {}).get("nccl") or {}
    for bad in nccl.get("rejected") or []:
        ctx.finding("nccl-not-a-library", "info", bad["path"],
                    f"{bad['path']} is named like an NCCL library but {bad['why']}: not counted", rejected=bad)
    stopped = (nccl.get("search") or {}).get("stopped")
    if stopped:
        ctx.finding("nccl-search-bounded", "warning", "nccl",
                    f"the NCCL library search stopped: {stopped}; what it did not read counts as an unknown "
                    f"release. {OVERRIDE}", search=nccl.get("search"))
    theirs = [x for x in libs if x.get("controlled_by")]
    if theirs and basis != "other-user" and basis != "declared":
        ctx.finding("nccl-other-user-library", "info", "nccl",
                    "not planned for: "
                    + "; ".join(f"{describe(x)}, controlled by {x['controlled_by']}" for x in theirs)
                    + " -- what those users' jobs load, not the system's", libraries=_found(theirs))
    if basis == "other-user":
        owned = "; ".join(f"{describe(x)}, controlled by {x['controlled_by']}" for x in theirs)
        ctx.finding("nccl-other-user-library", "warning", "nccl",
                    f"the only NCCL libraries found are in places other users control ({owned}): planned for "
                    f"{ev['version']}, which tells what those users' jobs load, not the system's; {OVERRIDE} "
                    "for the host's own jobs", libraries=_found(theirs))
        return []
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
