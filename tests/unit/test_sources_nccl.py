"""Every NCCL a job may load: system libraries, ld.so.cache, wheels in venvs/conda/system
site-packages, LD_LIBRARY_PATH and PATH -- each with how its version was known, replayable."""

import io
import os
import tarfile

from rocetune.hostfs import HostRoot, ProbeContext
from rocetune.probe.capture import build_tar, record
from rocetune.probe.parsers.ld_so_cache import build as build_cache
from rocetune.probe.sources import nccl_libs

from tests.unit.treekit import Dir, Link, make

SYS = "usr/lib/x86_64-linux-gnu"
TORCH_SP = "opt/torch/.venv/lib/python3.12/site-packages"
WHEEL_LIB = "nvidia/nccl/lib/libnccl.so.2"


def metadata(name: str, version: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: NCCL\n\nVersion: 9.9.9 (body)\n"


def wheel(site: str, version: str, cu: str = "cu12", lib: bytes = b"\x7fELF") -> dict:
    return {f"{site}/nvidia_nccl_{cu}-{version}.dist-info/METADATA": metadata(f"nvidia-nccl-{cu}", version),
            f"{site}/{WHEEL_LIB}": lib}


def system(version: str) -> dict:
    return {f"{SYS}/libnccl.so.{version}": b"", f"{SYS}/libnccl.so.2": Link(f"libnccl.so.{version}")}


def library_with_string(text: bytes, at: int = 4096) -> bytes:
    return b"\x7fELF" + bytes(at - 4) + text + b"\0%s\0/dev/shm" + bytes(2048)


def probe(root):
    ctx = ProbeContext(HostRoot(str(root)))
    return nccl_libs.probe(ctx), ctx.status


def by_path(data):
    return {lib["path"]: lib for lib in data["libraries"]}


def test_torch_wheel_beside_the_system_library_plans_for_the_lowest(tmp_path):
    root = make(tmp_path, {**system("2.28.3"), **wheel(TORCH_SP, "2.19.3"), "sys": Dir("sys")})
    data, status = probe(root)
    libs = by_path(data)
    w = libs[f"/{TORCH_SP}/{WHEEL_LIB}"]
    assert (w["version"], w["how"], w["package"], w["environment"], w["via"]) == (
        "2.19.3", "wheel-metadata", "nvidia-nccl-cu12 2.19.3", "/opt/torch/.venv", ["wheel"])
    s = libs[f"/{SYS}/libnccl.so.2.28.3"]
    assert (s["version"], s["how"], s["environment"]) == ("2.28.3", "file-name", None)
    assert (data["version"], data["path"], data["basis"]) == ("2.19.3", f"/{TORCH_SP}/{WHEEL_LIB}", "lowest")
    assert "/opt/torch/.venv" in data["python_environments"] and not status.warnings


def test_wheels_in_conda_home_venvs_root_and_system_dist_packages(tmp_path):
    tree = {
        **wheel("opt/conda/envs/train/lib/python3.11/site-packages", "2.21.5"),
        **wheel("home/ann/proj/.venv/lib/python3.10/site-packages", "2.20.5"),
        **wheel("root/.local/lib/python3.12/site-packages", "2.26.2"),
        **wheel("usr/local/lib/python3.10/dist-packages", "2.18.1"),
        **wheel("workspace/job/venv/lib/python3.12/site-packages", "2.27.3", cu="cu13"),
        # a conda env's own NCCL package: lib/libnccl.so.X.Y.Z
        "opt/conda/envs/mpi/lib/libnccl.so.2.23.4": b"",
        "opt/conda/envs/mpi/lib/libnccl.so.2": Link("libnccl.so.2.23.4"),
        "opt/conda/envs/mpi/lib/python3.11/site-packages/numpy/__init__.py": "",
    }
    data, _ = probe(make(tmp_path, tree))
    got = {lib["path"]: (lib["version"], lib["how"], lib["environment"]) for lib in data["libraries"]}
    assert got == {
        f"/opt/conda/envs/train/lib/python3.11/site-packages/{WHEEL_LIB}": ("2.21.5", "wheel-metadata", "/opt/conda/envs/train"),
        f"/home/ann/proj/.venv/lib/python3.10/site-packages/{WHEEL_LIB}": ("2.20.5", "wheel-metadata", "/home/ann/proj/.venv"),
        f"/root/.local/lib/python3.12/site-packages/{WHEEL_LIB}": ("2.26.2", "wheel-metadata", "/root/.local"),
        f"/usr/local/lib/python3.10/dist-packages/{WHEEL_LIB}": ("2.18.1", "wheel-metadata", "/usr/local"),
        f"/workspace/job/venv/lib/python3.12/site-packages/{WHEEL_LIB}": ("2.27.3", "wheel-metadata", "/workspace/job/venv"),
        "/opt/conda/envs/mpi/lib/libnccl.so.2.23.4": ("2.23.4", "file-name", "/opt/conda/envs/mpi"),
    }
    assert (data["version"], data["basis"]) == ("2.18.1", "lowest")


def test_ld_so_cache_names_a_library_outside_the_usual_directories(tmp_path):
    for old in (False, True):
        root = make(tmp_path / str(old), {
            "etc/ld.so.cache": build_cache([("libnccl.so.2", "/opt/hpcx/nccl/lib/libnccl.so.2"),
                                            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")], old=old),
            "opt/hpcx/nccl/lib/libnccl.so.2.22.3": b"",
            "opt/hpcx/nccl/lib/libnccl.so.2": Link("libnccl.so.2.22.3")})
        data, status = probe(root)
        assert data["libraries"] == [{"path": "/opt/hpcx/nccl/lib/libnccl.so.2.22.3", "version": "2.22.3",
                                      "how": "file-name", "package": None, "environment": None,
                                      "via": ["ld.so.cache"]}]
        assert not status.warnings


def test_a_broken_ld_so_cache_is_a_warning_not_a_failure(tmp_path):
    data, status = probe(make(tmp_path, {"etc/ld.so.cache": b"garbage", **system("2.21.5")}))
    assert data["version"] == "2.21.5"
    assert any("/etc/ld.so.cache" in w for w in status.warnings)


def test_version_from_the_library_string_when_name_and_metadata_do_not_tell(tmp_path):
    # A string straddling the 1 MiB chunk boundary is still found.
    lib = library_with_string(b"NCCL version 2.19.3+cuda12.3", at=(1 << 20) - 6)
    root = make(tmp_path, {f"opt/app/lib/python3.12/site-packages/{WHEEL_LIB}": lib})
    data, _ = probe(root)
    (only,) = data["libraries"]
    assert (only["version"], only["how"], only["package"]) == ("2.19.3", "library-string", None)


def test_two_nccl_wheels_in_one_site_packages_ask_the_library(tmp_path):
    sp = "opt/torch/.venv/lib/python3.12/site-packages"
    tree = {**wheel(sp, "2.19.3"), **wheel(sp, "2.28.9", cu="cu13",
                                           lib=library_with_string(b"NCCL version 2.28.9+cuda13.0"))}
    data, _ = probe(make(tmp_path, tree))
    (only,) = data["libraries"]
    assert (only["version"], only["how"]) == ("2.28.9", "library-string")
    assert only["package"] == "nvidia-nccl-cu12 2.19.3, nvidia-nccl-cu13 2.28.9"


def test_a_library_nothing_dates_makes_the_plan_version_unknown(tmp_path):
    root = make(tmp_path, {**system("2.28.3"), f"opt/x/lib/python3.12/site-packages/{WHEEL_LIB}": b"\x7fELF" * 64})
    data, _ = probe(root)
    assert [lib["version"] for lib in data["libraries"]] == [None, "2.28.3"]
    assert (data["version"], data["path"], data["basis"]) == (None, None, "unreadable")


def test_nothing_found(tmp_path):
    data, _ = probe(make(tmp_path, {"sys": Dir("sys")}))
    assert data == {"version": None, "path": None, "basis": "none", "libraries": [], "python_environments": []}


def test_path_and_ld_library_path_of_a_capture_are_replayed(tmp_path):
    root = make(tmp_path, {
        "recorded/environ/PATH": "/srv/py/bin:/usr/bin",
        "recorded/environ/LD_LIBRARY_PATH": "/srv/nccl/lib:relative/ignored",
        "srv/py/bin/python3": Link("/usr/bin/python3.12"),
        **wheel("srv/py/lib/python3.12/site-packages", "2.21.5"),
        "srv/nccl/lib/libnccl.so.2.25.1": b""})
    data, _ = probe(root)
    got = {lib["path"]: lib["via"] for lib in data["libraries"]}
    assert got == {f"/srv/py/lib/python3.12/site-packages/{WHEEL_LIB}": ["wheel"],
                   "/srv/nccl/lib/libnccl.so.2.25.1": ["LD_LIBRARY_PATH"]}
    assert "/srv/py" in data["python_environments"]


def test_a_wheel_library_on_ld_library_path_keeps_its_wheel_metadata(tmp_path):
    root = make(tmp_path, {"recorded/environ/LD_LIBRARY_PATH": f"/{TORCH_SP}/nvidia/nccl/lib",
                           **wheel(TORCH_SP, "2.19.3")})
    data, _ = probe(root)
    (only,) = data["libraries"]
    assert (only["how"], only["package"], only["via"]) == (
        "wheel-metadata", "nvidia-nccl-cu12 2.19.3", ["LD_LIBRARY_PATH", "wheel"])


def test_directories_with_too_many_entries_are_searched_in_part(tmp_path):
    tree = {f"home/u{i:04d}/.keep": "" for i in range(nccl_libs.MAX_CHILDREN + 3)}
    _, status = probe(make(tmp_path, tree))
    assert any("/home has 515 entries" in w for w in status.warnings)


def test_a_capture_records_what_was_read_inside_a_library_and_never_the_library(tmp_path):
    sp = "home/ann/.venv/lib/python3.11/site-packages"
    tree = {**system("2.28.3"), **wheel(TORCH_SP, "2.19.3"),
            **wheel(sp, "2.19.3"), **wheel(sp, "2.28.9", cu="cu13",
                                           lib=library_with_string(b"NCCL version 2.28.9+cuda13.0")),
            "etc/ld.so.cache": build_cache([("libnccl.so.2", f"/{SYS}/libnccl.so.2")]),
            "sys/kernel/mm/memory_peers/nv_mem/version": "1.0\n"}
    root = make(tmp_path / "host", tree)
    features, rec = record(root)
    archive = build_tar(root, rec)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        recorded = tar.extractfile(f"recorded/strings/{sp}/{WHEEL_LIB}.txt").read()
        tar.extractall(tmp_path / "replay")
    assert recorded == b"NCCL version 2.28.9+cuda13.0\n"
    assert members[f"{sp}/{WHEEL_LIB}"].size == 0 and members[f"{TORCH_SP}/{WHEEL_LIB}"].size == 0
    assert members[f"{TORCH_SP}/nvidia_nccl_cu12-2.19.3.dist-info/METADATA"].size > 0
    assert members["etc/ld.so.cache"].size == len(tree["etc/ld.so.cache"])
    replay, _ = probe(tmp_path / "replay")
    assert replay == features["kernel"]["nccl"]
    assert {lib["how"] for lib in replay["libraries"]} == {"wheel-metadata", "library-string", "file-name"}
    assert not os.path.exists(tmp_path / "host" / "recorded"), "recording never writes into the host"
