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

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision

ID = "nccl-version"


_NCCL_LIBS = ("The NCCL libraries the probe found: system library directories, /etc/ld.so.cache, "
              "Python environments' nvidia-nccl wheels and conda envs (the Features `kernel.nccl`).")

_OVERRIDE = ("pass --nccl-version X.Y.Z (role variable rocetune_env_nccl_version) with the NCCL the "
             "jobs load (python -c 'import torch; print(torch.cuda.nccl.version())')")

declare(
    id="nccl-not-found", kind="rule", severity="info",
    by=("nccl-version",),
    title="No NCCL library found on the host",
    checks="Whether any NCCL library is on the host for the version-gated rules to plan for.",
    reads=_NCCL_LIBS,
    why="Version-gated settings (GID index, QP split, IB timeout, the peer-memory check) then "
        "take their safe side for an unknown release, which may set more than the jobs' NCCL needs.",
    fix=_OVERRIDE,
    source="NVIDIA/nccl release notes (per-release defaults); docs/rules/nccl-version.md.",
)

declare(
    id="nccl-version-unreadable", kind="rule", severity="warning",
    by=("nccl-version",),
    title="An NCCL library's version could not be read",
    checks="Each NCCL library found: whether its own 'NCCL version' string was read (a file name's or "
           "wheel METADATA's version is kept as a claim, never counted alone).",
    reads=_NCCL_LIBS,
    why="A library of unknown version may be older than every other one found; the rules then "
        "plan for an unknown release, each on its safe side.",
    fix=_OVERRIDE,
    source="NVIDIA/nccl v2.28.9-1 src/init.cc:603 (VERSION_STRING, the 'NCCL version X.Y.Z' "
           "string in the library); docs/rules/nccl-version.md.",
)

declare(
    id="nccl-other-user-library", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when libraries outside other users' control were found too (those are planned for)",
    by=("nccl-version",),
    title="An NCCL library in a place another user controls",
    checks="Each NCCL library found: under /home/<user>, or below a directory (or in a file) writable by a "
           "group or by everyone (not a sticky directory), or owned by a user other than root.",
    reads=_NCCL_LIBS + " Their paths, and the owners and modes of the directories above them (the live "
          "host's, or what a capture recorded).",
    why="Such a library is what that user's jobs load, and anyone who can write there can change it: "
        "planning the whole host's env from it would let one user's choice (or a planted file) set "
        "everyone's release-gated settings.",
    fix="plan for the system's NCCL with --nccl-version X.Y.Z (rocetune_env_nccl_version), or install "
        "NCCL where only root writes; a user's own env can be planned from his probe",
    source="docs/rules/nccl-version.md; rocetune.probe.sources.nccl_libs (controlled_by).",
)

declare(
    id="nccl-not-a-library", kind="rule", severity="info",
    by=("nccl-version",),
    title="A file named like an NCCL library is none",
    checks="Files named libnccl.so*, libnccl-<kind>*.so* that are not ELF shared objects (their first 20 bytes).",
    reads=_NCCL_LIBS,
    why="A name is no version: a truncated copy, a placeholder or a planted file named libnccl.so.2.12.12 "
        "must not decide the release the host is planned for.",
    fix="remove the file, or replace it with the library it is named after",
    source="ELF header (e_ident magic, class, byte order; e_type ET_DYN); docs/rules/nccl-version.md.",
)

declare(
    id="nccl-search-bounded", kind="rule", severity="warning",
    by=("nccl-version",),
    title="The NCCL library search stopped at its bound",
    checks="How many library files the search looked at, the bytes it read inside them and its time.",
    reads=_NCCL_LIBS,
    why="A directory full of files named like libraries (or sparse ones) must not make a plan take "
        "minutes; what the search did not read is planned for as an unknown release.",
    fix="remove the stray files, or give the release with --nccl-version X.Y.Z",
    source="rocetune.probe.sources.nccl_libs (MAX_LIBRARIES, SCAN_BUDGET, SCAN_SECONDS).",
)

declare(
    id="nccl-versions-differ", kind="rule", severity="info",
    by=("nccl-version",),
    title="Several NCCL releases on the host",
    checks="Whether the NCCL libraries found are of different releases.",
    reads=_NCCL_LIBS,
    why="A PyTorch job loads its wheel's NCCL, an MPI job what the loader finds: the env is "
        "planned for the lowest release so it holds for all of them, which may leave a newer "
        "release's better default unused.",
    fix=_OVERRIDE + " to plan for one release; or align the releases",
    source="NVIDIA/nccl release notes; PyTorch wheels depend on nvidia-nccl-cu11/cu12/cu13.",
)

declare(
    id="nccl-wheel-not-seen", kind="rule", severity="info",
    by=("nccl-version",),
    title="Only the system's NCCL was found",
    checks="Whether any Python environment or conda env on the host carries its own NCCL.",
    reads=_NCCL_LIBS,
    why="PyTorch jobs load their wheel's NCCL, often another release than the system's; one in a "
        "place not searched or in a container image cannot be seen from here, and the plan may be "
        "for the wrong release.",
    fix=_OVERRIDE + "",
    source="PyTorch's nvidia-nccl-cu12 wheel dependency (site-packages/nvidia/nccl/lib/libnccl.so.2); "
           "docs/rules/nccl-version.md.",
)
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
